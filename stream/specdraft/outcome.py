"""Outcome-like columns, by name and by values: what happened to the person after the event.

Charges, dispositions, verdicts, recidivism, arrest type or status, juvenile flags, risk scores: such a
column is what an analyst must not learn about one person, so ``spec draft`` makes it the sensitive
attribute or withholds it; it is never a quasi-identifier (``c_charge_degree`` is not an education
"degree") and never a pass-through unless the person drafting says so (``--passthrough``). Rules in
docs/spec.md ("How spec draft decides", rule 5a); keep the two in step.
"""

from __future__ import annotations

import re

from stream.specdraft.profile import QI_PATTERNS, Profile, match, norm
from stream.specdraft.sensitive import OUTCOME_WORDS, is_class_column, word_share

# (pattern on the normalised name, what it says): names that win over a quasi-identifier name ...
STRONG_NAMES: tuple[tuple[str, str], ...] = (
    (r"recid|reoffen|re_?arrest|re_?convict", "recidivism"),
    (r"charge|(^|_)ofns|statute|law_?(code|cat)", "a charge"),
    (r"disposition|verdict|convict|sentenc|acquit|(^|_)plea($|_)", "a disposition"),
    (r"arrest_?(type|status|kind|made|flag|categ\w*)|(^|_)arrest(ed)?$|booked|custody|summons|citation",
     "the arrest type or status"),
    (r"(^|_)juv|juvenile|youth_?(flag|offender)|(^|_)adult_?(flag|arrest)", "a juvenile flag"),
)
# ... and names that do not (``marital_status`` is a quasi-identifier, not an outcome)
WEAK_NAMES: tuple[tuple[str, str], ...] = (
    (r"outcome|(^|_)status($|_)|(^|_)result($|_)|clearance|cleared|resolution|finding|(^|_)closed($|_)",
     "the outcome of the event"),
    (r"offen[cs]e|crime", "an offence"),
    (r"(^|_)(risk|decile|score)(_|$)|score_?text|(^|_)label($|_)|(^|_)target($|_)", "a score or prediction target"),
)

JUVENILE_WORDS = re.compile(r"\b(?:juvenile|juv|youth|minor|adult)\b", re.IGNORECASE)
CONTENT_SHARE = 0.5  # share of rows whose value reads like an outcome, to take a column by its values


def outcome_like(name: str, p: Profile) -> str | None:
    """Why column ``name`` is outcome-like (a one-line reason), or None.

    Never a date column. By name first (:data:`STRONG_NAMES` even when a quasi-identifier name also
    matches: ``c_charge_degree`` is a charge; :data:`WEAK_NAMES` only when none does). By values only
    for a column not named like a quasi-identifier:
    categorical text whose rows read like outcomes (arrested, summons, dismissed, juvenile ...) in at
    least half the rows, or felony/misdemeanour codes (``F``/``M``; ``PERP_SEX`` holds ``F``/``M``
    too, which is why a QI name wins there)."""
    n = norm(name)
    if p.kind == "date":
        return None
    for pattern, what in STRONG_NAMES:
        if re.search(pattern, n):
            return f"{what} (name)"
    if match(name, QI_PATTERNS):
        return None
    for pattern, what in WEAK_NAMES:
        if re.search(pattern, n):
            return f"{what} (name)"
    if p.kind != "text" or p.distinct < 2 or p.distinct > 500:
        return None
    share = word_share(p, OUTCOME_WORDS)
    if share >= CONTENT_SHARE:
        return f"an outcome (values: {share:.0%} of rows read like one)"
    share = word_share(p, JUVENILE_WORDS)
    if share >= CONTENT_SHARE:
        return f"a juvenile or adult flag (values: {share:.0%} of rows)"
    if is_class_column(p):
        return "a felony/misdemeanour class (values)"
    return None


def outcome_columns(profiles: dict[str, Profile], taken: set[str]) -> dict[str, str]:
    """Every outcome-like column not already ``taken``, with its reason."""
    found = {c: outcome_like(c, p) for c, p in profiles.items() if c not in taken}
    return {c: why for c, why in found.items() if why}
