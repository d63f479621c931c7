"""Decide every column's role and hierarchy for ``anonstream spec draft`` (rules in docs/spec.md)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from stream.specdraft.hierarchies import MISSING_LABEL, hierarchy_for, with_missing_leaf
from stream.specdraft.profile import (
    IDENTIFIER_PATTERNS,
    OUTCOME_PATTERN,
    QI_PATTERNS,
    STATION_PATTERN,
    TIME_PATTERN,
    Profile,
    functional,
    match,
    norm,
    profile,
)
from stream.specdraft.sensitive import (
    OFFENCE_WORDS,
    OUTCOME_NAME,
    OUTCOME_WORDS,
    class_column,
    is_class_column,
    pick_sensitive,
    severity_table,
    word_share,
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
    dates: dict[str, Any] = field(default_factory=dict)  # formats of date columns that are not date QIs
    notes: list[str] = field(default_factory=list)  # what the draft could not do, for the reviewer
    class_column: str | None = None  # the felony/misdemeanour column severities come from (never released)
    encoding: str | None = None  # the text encoding the file was read with (frame.attrs)

    def role(self, role: str) -> list[Column]:
        return [c for c in self.columns if c.role == role]


def make_draft(frame: pd.DataFrame, name: str, max_qi: int = 8) -> Draft:
    profiles = profile(frame)
    draft = Draft(name=name, rows=len(frame), encoding=frame.attrs.get("encoding"))
    clean = pd.DataFrame({c: _clean(frame[c], p) for c, p in profiles.items()})
    roles: dict[str, Column] = {}

    for c, p in profiles.items():
        hit = match(c, IDENTIFIER_PATTERNS)
        if hit:
            roles[c] = Column(c, "identifier", f"looks like {hit[1]} (name)")
        elif p.kind == "text" and p.date_note:
            roles[c] = Column(c, "dropped", f"{p.date_note}: not released; declare its formats by hand to use it")
        elif p.kind != "date" and p.distinct >= 20 and p.distinct_ratio >= 0.9 and not match(c, QI_PATTERNS):
            roles[c] = Column(c, "identifier", f"near-unique: {p.distinct} distinct values in {len(p.values)} rows "
                                               f"would single people out")

    pick = pick_sensitive(profiles, set(roles))
    sens = pick.column if pick else None
    if pick:
        roles[pick.column] = Column(pick.column, "sensitive", pick.why)

    qis = _pick_qis(profiles, roles, max_qi, clean)
    for c, why in qis:
        roles[c] = Column(c, "qi", why)
    group_cols = [c for c in profiles if c not in roles or roles[c].role == "qi"]
    for c, _ in qis:
        roles[c].qi, roles[c].how = hierarchy_for(clean, profiles[c], group_cols)

    sens_is_class = sens is not None and is_class_column(profiles[sens])
    cls = class_column(profiles, set(roles)) if sens and not sens_is_class else None
    draft.class_column = cls
    for c, p in profiles.items():
        if c in roles:
            continue
        roles[c] = _other(c, p, clean, sens, cls, [q for q, _ in qis])
    draft.columns = [roles[c] for c in frame.columns]

    if sens:
        sev = severity_table(clean, sens, cls, sens_is_class)
        draft.severity, draft.severity_note, draft.severity_how = sev.table, sev.notes, sev.how
    _missing(draft, profiles)
    _stream_keys(draft, profiles, clean)
    draft.dates = {c.name: profiles[c.name].date_format for c in draft.role("identifier")
                   if profiles[c.name].kind == "date" and profiles[c.name].date_format}
    return draft


def _clean(col: pd.Series, p: Profile) -> pd.Series:
    text = col.astype("string").str.strip()
    return text.mask(text.isin(list(p.tokens) + [""]) | col.isna()).astype(object)


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


def _stream_keys(draft: Draft, profiles: dict[str, Profile], clean: pd.DataFrame) -> None:
    ids = [c.name for c in draft.role("identifier")
           if profiles[c.name].n_missing == 0 and profiles[c.name].distinct == draft.rows
           and re.search(r"id|key|no|num|number", norm(c.name)) and not re.search(STATION_PATTERN, norm(c.name))]
    if ids:
        draft.keys["id_column"] = (ids[0], "unique in the sample: fingerprinted by the stream, then dropped")
    dates = [c.name for c in draft.role("qi") if c.qi and c.qi["type"] == "date"]
    if dates:
        draft.keys["time_column"] = (dates[0], "the event date picks the report's window")
    stations = [c for c in draft.columns if re.search(STATION_PATTERN, norm(c.name))
                and station_fit(c, profiles[c.name], clean, draft)]
    if stations:  # a station or precinct first, then an agency / office; a place the spec generalizes first
        best = min(stations, key=lambda c: (not re.search(r"station|precinct", norm(c.name)), c.role != "qi"))
        draft.keys["station_column"] = (best.name, "routes each report to its station; published as station_id")


YES_NO = {"y", "n", "yes", "no", "true", "false", "0", "1", "t", "f"}


def station_fit(col: Column, p: Profile, clean: pd.DataFrame, draft: Draft) -> bool:
    """A column may route windows (and be published as each release's ``station_id``) only if it is a
    place or unit, never the sensitive attribute, an outcome, or something that reveals either."""
    if col.role in {"identifier", "sensitive", "passthrough"} or col.name == draft.class_column or p.n_missing:
        return False
    if re.search(OUTCOME_PATTERN, norm(col.name)) or re.search(OUTCOME_NAME, norm(col.name)):
        return False
    if p.kind == "date" or (p.distinct_ratio > 0.5 and p.distinct > 50):
        return False
    if set(p.values.str.lower().unique()) <= YES_NO:  # a flag (force used: Y/N) is an outcome, not a unit
        return False
    if p.kind == "text" and max(word_share(p, OFFENCE_WORDS), word_share(p, OUTCOME_WORDS)) >= 0.2:
        return False
    sens = draft.role("sensitive")
    return not (sens and p.distinct > 1 and functional(clean, col.name, sens[0].name))
