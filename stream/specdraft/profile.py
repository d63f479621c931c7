"""Column profiles for ``anonstream spec draft``: name patterns, missing tokens, types, date formats.

Every rule here is documented in docs/spec.md ("How spec draft decides"); keep the two in step.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from core import contract
from stream.specdraft.dates import date_format_for

# Cells that mean "missing" in exports we have seen; only the ones present in a file are declared.
MISSING_TOKENS = ("?", "NA", "N/A", "n/a", "null", "NULL", "None", "(null)", "nan", "NaN")

# Direct identifiers by name (checked on the lower-cased name with non-alphanumerics as "_").
IDENTIFIER_PATTERNS: tuple[tuple[str, str], ...] = (
    (r"(^|_)(dob|birth|born)|date_?of_?birth", "a date of birth"),
    (r"^names?$|(first|last|given|family|full|sur|middle|maiden|person|perp|suspect|victim|offender|patient|"
     r"client|customer)_?names?($|_)", "a person's name"),
    (r"address|street|(^|_)addr($|_)|residence|house_?(no|number)", "an address"),
    (r"phone|mobile|(^|_)tel($|_)|(^|_)fax($|_)|(^|_)cell($|_)", "a phone number"),
    (r"e_?mail", "an e-mail address"),
    (r"(case|report|arrest|incident|complaint|record|file|ticket|booking|docket|cad)_?(no|num|number|id|key|nr)($|_)",
     "a case or report number"),
    (r"ssn|social_?security|passport|licen[cs]e|national_?id|id_?(no|num|number)|(^|_)(id|key|uuid)$|_(id|key)$",
     "an identification number or key"),
    (r"(^|_)(lat|latitude|lon|lng|longitude|x_?coord\w*|y_?coord\w*|coordinates?|geo\w*|gps|point|location)($|_)",
     "exact coordinates or a location"),
    (r"(^|_)(ip|ip_?address|plate|vin|imei)($|_)", "a device or vehicle identifier"),
)

# Quasi-identifiers by name, in priority order (the first ``max_qi`` found are proposed).
QI_PATTERNS: tuple[tuple[str, str], ...] = (
    (r"(^|_)age($|_)|age_?(group|band|range)|years_?old", "age"),
    (r"(^|_)(sex|gender)($|_)", "sex"),
    (r"race|ethnic|descent", "race or ethnicity"),
    (r"zip|post_?code|postal|(^|_)tract|census|fips|geoid", "postal or census code"),
    (r"suburb|neighbo|district|precinct|borough|(^|_)area($|_)|zone|(^|_)ward($|_)|(^|_)beat($|_)|sector|region|"
     r"county|city|town|municipal|(^|_)state($|_)|statefips?|state_?fips?|province|division",
     "area of residence or incident"),
    (r"marital|married|spouse", "marital status"),
    (r"educat|school|degree", "education"),
    (r"country|nationality|native|citizen|birthplace", "origin"),
    (r"occupation|(^|_)job|profession|employ|work_?class", "occupation or employment"),
    (r"relationship|household", "household role"),
    (r"reporter|victim_?type", "who reported"),
)

STATION_PATTERN = r"station|precinct|agency|(^|_)office($|_)|department|(^|_)force($|_)"
TIME_PATTERN = r"date|time|when|occurred|reported"
OUTCOME_PATTERN = r"outcome|status|result|disposition|verdict|finding|clearance|(^|_)label($|_)|target"


def norm(name: str) -> str:
    return re.sub(r"[^0-9a-z]+", "_", name.lower()).strip("_")


def match(name: str, patterns: tuple[tuple[str, str], ...]) -> tuple[int, str] | None:
    """``(rank, why)`` of the first pattern the normalised name matches."""
    n = norm(name)
    for rank, (pat, why) in enumerate(patterns):
        if re.search(pat, n):
            return rank, why
    return None


@dataclass
class Profile:
    """What the draft knows about one column of the sample."""

    name: str
    values: pd.Series  # non-missing values, stripped strings
    n_rows: int
    n_missing: int
    kind: str  # "numeric" | "date" | "text"
    integer: bool = False
    date_format: str | list[str] | None = None  # stream/specdraft/dates.py decides it
    date_note: str = ""
    tokens: set[str] = field(default_factory=set)

    @property
    def distinct(self) -> int:
        return int(self.values.nunique())

    @property
    def distinct_ratio(self) -> float:
        return self.distinct / max(len(self.values), 1)


def profile(frame: pd.DataFrame) -> dict[str, Profile]:
    out: dict[str, Profile] = {}
    for col in frame.columns:
        raw = frame[col]
        text = raw.astype("string").str.strip()
        present = {t for t in MISSING_TOKENS if (text == t).any()}
        gone = contract.missing_mask(raw, present)
        values = text[~gone].astype(str)
        p = Profile(col, values.reset_index(drop=True), len(frame), int(gone.sum()), "text", tokens=present)
        num = pd.to_numeric(values, errors="coerce")
        if len(values) and num.notna().all():
            p.kind = "numeric"
            p.integer = bool((np.floor(num) == num).all())
        else:
            choice = date_format_for(values)
            p.date_note = choice.note
            if choice.format is not None:
                p.kind, p.date_format = "date", choice.format
        out[col] = p
    return out


def functional(frame: pd.DataFrame, a: str, b: str) -> bool:
    """True if every value of column ``a`` goes with exactly one value of ``b`` (rows where both are present)."""
    pair = frame[[a, b]].dropna()
    return bool(len(pair)) and bool((pair.groupby(a, sort=False)[b].nunique() <= 1).all())
