"""Decide every column's role and hierarchy for ``anonstream spec draft`` (rules in docs/spec.md)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from stream.specdraft.hierarchies import MISSING_LABEL, hierarchy_for, with_missing_leaf
from stream.specdraft.profile import (
    CLASS_PATTERN,
    CLASS_SEVERITY,
    IDENTIFIER_PATTERNS,
    OUTCOME_PATTERN,
    QI_PATTERNS,
    SENSITIVE_PATTERNS,
    STATION_PATTERN,
    TIME_PATTERN,
    Profile,
    functional,
    match,
    norm,
    profile,
)


@dataclass
class Column:
    name: str
    role: str  # identifier | qi | sensitive | passthrough | dropped
    why: str
    qi: dict[str, Any] | None = None  # {"type": ..., "hierarchy": {...}}
    how: str = ""  # why this hierarchy


@dataclass
class Draft:
    name: str
    rows: int
    columns: list[Column] = field(default_factory=list)
    severity: dict[str, float] = field(default_factory=dict)
    severity_note: dict[str, str] = field(default_factory=dict)
    severity_how: str = ""
    missing_tokens: list[str] = field(default_factory=list)
    on_missing: str = "error"
    missing_why: str = ""
    keys: dict[str, tuple[str, str]] = field(default_factory=dict)  # id/time/station column -> (name, why)
    dates: dict[str, str] = field(default_factory=dict)  # formats of date columns that are not date QIs

    def role(self, role: str) -> list[Column]:
        return [c for c in self.columns if c.role == role]


def make_draft(frame: pd.DataFrame, name: str, max_qi: int = 8) -> Draft:
    profiles = profile(frame)
    draft = Draft(name=name, rows=len(frame))
    clean = pd.DataFrame({c: _clean(frame[c], p) for c, p in profiles.items()})
    roles: dict[str, Column] = {}

    for c, p in profiles.items():
        hit = match(c, IDENTIFIER_PATTERNS)
        if hit:
            roles[c] = Column(c, "identifier", f"looks like {hit[1]} (name)")
        elif p.kind != "date" and p.distinct >= 20 and p.distinct_ratio >= 0.9 and not match(c, QI_PATTERNS):
            roles[c] = Column(c, "identifier", f"near-unique: {p.distinct} distinct values in {len(p.values)} rows "
                                               f"would single people out")

    sens = _pick_sensitive(profiles, roles)
    if sens:
        roles[sens] = Column(sens, "sensitive", "offence/charge or other sensitive outcome (name)")

    qis = _pick_qis(profiles, roles, max_qi, clean)
    for c, why in qis:
        roles[c] = Column(c, "qi", why)
    group_cols = [c for c in profiles if c not in roles or roles[c].role == "qi"]
    for c, _ in qis:
        roles[c].qi, roles[c].how = hierarchy_for(clean, profiles[c], group_cols)

    cls = _class_column(profiles, roles, sens, clean)
    for c, p in profiles.items():
        if c in roles:
            continue
        roles[c] = _other(c, p, clean, sens, cls, [q for q, _ in qis])
    draft.columns = [roles[c] for c in frame.columns]

    if sens:
        _severity(draft, clean, sens, cls)
    _missing(draft, profiles)
    _stream_keys(draft, profiles)
    draft.dates = {c.name: profiles[c.name].date_format for c in draft.role("identifier")
                   if profiles[c.name].kind == "date" and profiles[c.name].date_format}
    return draft


def _clean(col: pd.Series, p: Profile) -> pd.Series:
    text = col.astype("string").str.strip()
    return text.mask(text.isin(list(p.tokens) + [""]) | col.isna()).astype(object)


def _pick_sensitive(profiles: dict[str, Profile], roles: dict[str, Column]) -> str | None:
    for pat in SENSITIVE_PATTERNS:
        found = [c for c, p in profiles.items() if c not in roles and p.kind == "text" and re.search(pat, norm(c))]
        if found:  # prefer a description over a code: the most distinct values, then the longest labels
            return max(found, key=lambda c: (profiles[c].values.str.len().mean() > 4, profiles[c].distinct))
    return None


def _pick_qis(profiles: dict[str, Profile], roles: dict[str, Column], max_qi: int,
              clean: pd.DataFrame) -> list[tuple[str, str]]:
    ranked: list[tuple[int, str, str]] = []
    dates = [c for c, p in profiles.items() if c not in roles and p.kind == "date"]
    if dates:
        best = max(dates, key=lambda c: bool(re.search(TIME_PATTERN, norm(c))))
        ranked.append((-1, best, "event date: generalized day -> month -> year"))
    for c, p in profiles.items():
        if c in roles or p.kind == "date" or p.distinct < 2:
            continue
        hit = match(c, QI_PATTERNS)
        if hit:
            ranked.append((hit[0], c, f"{hit[1]} (name): linkable with outside records"))
    ranked.sort(key=lambda t: t[0])
    chosen: list[tuple[str, str]] = []
    for _, c, why in ranked:
        twin = any(functional(clean, c, q) and functional(clean, q, c) for q, _ in chosen)
        if len(chosen) < max_qi and not twin:  # a one-to-one twin of a chosen QI adds nothing
            chosen.append((c, why))
    return chosen


def _class_column(profiles: dict[str, Profile], roles: dict[str, Column], sens: str | None,
                  clean: pd.DataFrame) -> str | None:
    if not sens:
        return None
    for c, p in profiles.items():
        if c in roles or not re.search(CLASS_PATTERN, norm(c)):
            continue
        if set(p.values.str.upper().unique()) <= set(CLASS_SEVERITY):
            return c
    return None


def _other(c: str, p: Profile, clean: pd.DataFrame, sens: str | None, cls: str | None, qis: list[str]) -> Column:
    if p.distinct <= 1:
        return Column(c, "dropped", "constant: tells an analyst nothing")
    if c == cls:
        return Column(c, "dropped", f"felony/misdemeanour class: used for the severity table; releasing it would "
                                    f"reveal the class of the offence in '{sens}'")
    if sens and functional(clean, c, sens) and p.distinct > 1:
        return Column(c, "dropped", f"each value maps to one '{sens}' value: releasing it would reveal the "
                                    f"sensitive attribute")
    for q in qis:
        if functional(clean, c, q) and functional(clean, q, c):
            return Column(c, "dropped", f"same information as QI '{q}' (one-to-one)")
    if p.distinct <= 10 and re.search(OUTCOME_PATTERN, norm(c)):
        return Column(c, "passthrough", f"an outcome with {p.distinct} values: released unchanged")
    return Column(c, "dropped", "not a recognised quasi-identifier or outcome: not released "
                                "(add it to qi or passthrough if analysts need it)")


def _severity(draft: Draft, clean: pd.DataFrame, sens: str, cls: str | None) -> None:
    values = sorted(clean[sens].dropna().astype(str).unique())
    if cls is None:
        draft.severity = {v: 1 for v in values}
        draft.severity_how = ("skeleton: every value 1 (k_min = k); set guideline-sentence severities "
                              "(years) so grave offences get larger classes")
        return
    graves = clean[[sens, cls]].dropna()
    graves = graves.assign(s=graves[cls].str.upper().map(CLASS_SEVERITY))
    worst = graves.groupby(sens)["s"].max()
    seen = graves.groupby(sens)[cls].agg(lambda s: "/".join(sorted(set(s))))
    for v in values:
        draft.severity[v] = int(worst.get(v, 1))
        draft.severity_note[v] = f"{cls} = {seen.get(v, '?')}"
    draft.severity_how = (f"derived from '{cls}': the gravest class seen for the offence (felony / Part 1 = 5, "
                          f"misdemeanour / Part 2 = 3, violation or infraction = 1)")


def _missing(draft: Draft, profiles: dict[str, Profile]) -> None:
    used = [c for c in draft.columns if c.role in {"qi", "sensitive", "passthrough"}]
    gaps = {c.name: profiles[c.name].n_missing for c in used if profiles[c.name].n_missing}
    draft.missing_tokens = sorted({t for c in used for t in profiles[c.name].tokens})
    if not gaps:
        return
    ordered = [c for c in used if c.name in gaps and c.qi and c.qi["type"] in {"numeric", "date"}]
    in_pass = [c for c in used if c.name in gaps and c.role == "passthrough"]
    shown = ", ".join(f"{k} {v}" for k, v in gaps.items())
    if ordered or in_pass:
        draft.on_missing = "drop"
        draft.missing_why = f"missing values ({shown}) in columns without a missing leaf: rows are dropped and counted"
        return
    draft.on_missing = "leaf"
    draft.missing_why = f"missing values ({shown}) become the leaf '{MISSING_LABEL}' of their hierarchy"
    for c in used:
        if c.name in gaps and c.qi:
            with_missing_leaf(c.qi)
        elif c.name in gaps and c.role == "sensitive":
            draft.severity.setdefault(MISSING_LABEL, 1)
            draft.severity_note[MISSING_LABEL] = "missing in the file"


def _stream_keys(draft: Draft, profiles: dict[str, Profile]) -> None:
    ids = [c.name for c in draft.role("identifier")
           if profiles[c.name].n_missing == 0 and profiles[c.name].distinct == draft.rows
           and re.search(r"id|key|no|num|number", norm(c.name)) and not re.search(STATION_PATTERN, norm(c.name))]
    if ids:
        draft.keys["id_column"] = (ids[0], "unique in the sample: fingerprinted by the stream, then dropped")
    dates = [c.name for c in draft.role("qi") if c.qi and c.qi["type"] == "date"]
    if dates:
        draft.keys["time_column"] = (dates[0], "the event date picks the report's window")
    stations = [c for c in profiles if re.search(STATION_PATTERN, norm(c)) and profiles[c].n_missing == 0]
    if stations:
        draft.keys["station_column"] = (stations[0], "routes each report to its station")
