"""The sensitive attribute ``spec draft`` proposes, by name and by content, and its severity table.

A station's export names its offence column in many ways (``OFNS_DESC``, ``Primary Type``,
``Highest Offense Description``, ``Category``) or not at all, so the column is found by its name
*or* by what it holds: categorical text whose values read like offences (assault, larceny,
dangerous drugs ...) or like the outcome of an event (arrested, summons, dismissed ...). Rules in
docs/spec.md ("How spec draft decides"); keep the two in step.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import pandas as pd

from stream.specdraft.profile import QI_PATTERNS, Profile, match, norm

# Names, strongest first: (pattern on the normalised name, what it says, content needed to accept it).
OFFENCE_NAME = r"offen[cs]e|(^|_)ofns|charge|crime|allegation|violation_?desc|(^|_)statute"
DESCRIPTION_NAME = (r"(^|_)(pd_?|ky_?)?desc($|_)|description|(^|_)primary_?type($|_)|incident_?type|"
                    r"(^|_)call_?type|nature|(^|_)category($|_)")
OUTCOME_NAME = r"outcome|disposition|verdict|(^|_)result($|_)|finding|clearance|(^|_)status($|_)"
MEASURE_NAME = r"diagnos|disease|condition|salary|income|wage"

# A column saying how grave an offence is: felony/misdemeanour class or UCR Part 1/Part 2.
CLASS_PATTERN = r"law_?cat|(^|_)class($|_)|category|felony|misdemean|part_?[12]|ucr|severity|grade"
CLASS_SEVERITY = {"F": 5, "FELONY": 5, "M": 3, "MISDEMEANOR": 3, "MISDEMEANOUR": 3, "V": 1, "VIOLATION": 1,
                  "I": 1, "INFRACTION": 1, "1": 5, "PART 1": 5, "PART I": 5, "2": 3, "PART 2": 3, "PART II": 3}

# Words of offence labels (stems, matched at the start of a word, any case), by default severity.
GRAVE = (r"homicide|murder|manslaughter|rape|sexual|sex crime|sodomy|kidnap|robber|arson|felony|aggravated|grand|"
         r"shooting|firearm|weapon|gun|strangulat|terror|carjack|human trafficking")
MIDDLE = (r"assault|battery|burglar|larceny|theft|stolen|shoplift|drug|narcotic|controlled substance|"
          r"cocaine|heroin|fraud|forgery|embezzl|extortion|brib|intimidat|stalking|menacing|"
          r"domestic|abuse|vehicle theft|possession|trafficking|escape|resist")
MINOR = (r"mischief|vandal|trespass|harass|disorderly|loiter|prostitut|gambl|intoxicat|dwi|dui|alcohol|liquor|"
         r"marijuana|cannabis|traffic|obstruct|contempt|criminal|offen[cs]e|misdemean|violation|fare evasion|"
         r"public order|graffiti|vehicle|nuisance|warrant|motor")
OFFENCE_WORDS = re.compile(rf"\b(?:{GRAVE}|{MIDDLE}|{MINOR})", re.IGNORECASE)
OUTCOME_WORDS = re.compile(
    r"\b(?:arrest|summons|citation|cited|charged|convict|acquit|dismiss|guilty|cleared|unfounded|exceptional|"
    r"released|booked|divert|nolle|deferred|sentenc|probation|jail|prison|warrant|referred|no action|"
    r"juvenile|adult arrest|open|closed|pending|suspended|withdrawn)", re.IGNORECASE)
_GRAVE, _MIDDLE = re.compile(rf"\b(?:{GRAVE})", re.I), re.compile(rf"\b(?:{MIDDLE})", re.I)

CONTENT_SHARE = 0.5  # share of rows whose value holds an offence (or outcome) word, to be taken by content
MAX_CATEGORIES = 500  # more distinct values than this is free text, not a category


@dataclass
class Pick:
    column: str
    why: str


def word_share(p: Profile, words: re.Pattern[str]) -> float:
    """Share of the column's rows whose value holds one of ``words``."""
    if p.values.empty:
        return 0.0
    counts = p.values.value_counts()
    hit = pd.Series([bool(words.search(str(v))) for v in counts.index], index=counts.index)
    return float(counts[hit].sum() / counts.sum())


def _categorical(p: Profile) -> bool:
    return p.kind == "text" and 2 <= p.distinct <= MAX_CATEGORIES and p.distinct_ratio <= 0.5


def is_class_column(p: Profile) -> bool:
    """Felony/misdemeanour or Part 1/Part 2 codes (``F``, ``M``, ``Part 1`` ...), nothing else."""
    return bool(len(p.values)) and set(p.values.str.upper().unique()) <= set(CLASS_SEVERITY)


def pick_sensitive(profiles: dict[str, Profile], taken: set[str]) -> Pick | None:
    """The column to protect: the offence by name, else by content, then a description of the event,
    the event's outcome (name or content), a felony/misdemeanour class, a health or income measure."""
    free = {c: p for c, p in profiles.items() if c not in taken and p.kind == "text" and p.distinct >= 2}
    not_qi = {c: p for c, p in free.items() if not match(c, QI_PATTERNS)}
    offence = {c: word_share(p, OFFENCE_WORDS) for c, p in free.items() if _categorical(p)}
    outcome = {c: word_share(p, OUTCOME_WORDS) for c, p in free.items() if _categorical(p)}

    named = [c for c in free if re.search(OFFENCE_NAME, norm(c)) and not is_class_column(free[c])]
    if named:  # prefer a description over a code: the longer labels, then the most distinct values
        best = max(named, key=lambda c: (free[c].values.str.len().mean() > 4, free[c].distinct))
        return Pick(best, "the offence or charge (name)")
    by_content = [c for c, s in offence.items() if s >= CONTENT_SHARE]
    if by_content:  # the most offence-like, then the coarser (fewer values: a readable severity table)
        best = max(by_content, key=lambda c: (round(offence[c], 1), -free[c].distinct))
        return Pick(best, f"describes the offence (content: {offence[best]:.0%} of rows name an offence)")
    described = [c for c in not_qi if re.search(DESCRIPTION_NAME, norm(c)) and offence.get(c, 0) >= 0.2]
    if described:
        best = max(described, key=lambda c: offence[c])
        return Pick(best, "describes the event (name and content)")
    outcomes = [c for c in not_qi if _categorical(not_qi[c]) and not is_class_column(not_qi[c])
                and (re.search(OUTCOME_NAME, norm(c)) or outcome.get(c, 0) >= CONTENT_SHARE)]
    if outcomes:
        best = max(outcomes, key=lambda c: (bool(re.search(OUTCOME_NAME, norm(c))), outcome.get(c, 0)))
        return Pick(best, "the outcome of the event (" + ("name" if re.search(OUTCOME_NAME, norm(best))
                                                          else "content") + ")")
    classes = [c for c in not_qi if re.search(CLASS_PATTERN, norm(c)) and is_class_column(not_qi[c])]
    if classes:
        return Pick(classes[0], "the felony/misdemeanour class of the offence (name and content)")
    measures = [c for c in not_qi if re.search(MEASURE_NAME, norm(c))]
    if measures:
        return Pick(measures[0], "a sensitive measure such as health or income (name)")
    return None


def class_column(profiles: dict[str, Profile], taken: set[str]) -> str | None:
    """A felony/misdemeanour (or Part 1/2) column to derive severities from."""
    for c, p in profiles.items():
        if c not in taken and re.search(CLASS_PATTERN, norm(c)) and is_class_column(p):
            return c
    return None


@dataclass
class Severity:
    table: dict[str, float] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)
    how: str = ""


def default_rank(value: str) -> int:
    """5 for violent, sexual and weapons offences, 3 for property, drugs and fraud, else 1."""
    if _GRAVE.search(value):
        return 5
    if _MIDDLE.search(value):
        return 3
    return 1


def severity_table(clean: pd.DataFrame, sens: str, cls: str | None, sens_is_class: bool) -> Severity:
    """The severity of every distinct value of the sensitive column (docs/spec.md, rule 8)."""
    values = sorted(clean[sens].dropna().astype(str).unique())
    out = Severity()
    if sens_is_class:
        out.table = {v: CLASS_SEVERITY[v.upper()] for v in values}
        out.how = "the class itself: felony / Part 1 = 5, misdemeanour / Part 2 = 3, violation or infraction = 1"
        return out
    if cls is not None:
        graves = clean[[sens, cls]].dropna()
        graves = graves.assign(s=graves[cls].str.upper().map(CLASS_SEVERITY))
        worst = graves.groupby(sens)["s"].max()
        seen = graves.groupby(sens)[cls].agg(lambda s: "/".join(sorted(set(s))))
        for v in values:
            out.table[v] = int(worst.get(v, 1))
            out.notes[v] = f"{cls} = {seen.get(v, '?')}"
        out.how = (f"derived from '{cls}': the gravest class seen for the offence (felony / Part 1 = 5, "
                   f"misdemeanour / Part 2 = 3, violation or infraction = 1)")
        return out
    out.table = {v: default_rank(v) for v in values}
    out.how = ("a DEFAULT RANKING to review: no felony/misdemeanour column, so each value is ranked by its words "
               "(violent, sexual or weapons offences 5; property, drugs or fraud 3; anything else 1). "
               "Set real severities (e.g. guideline sentences in years) before publishing: grave offences "
               "get larger classes")
    return out
