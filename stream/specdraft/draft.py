"""Decide every column's role and hierarchy for ``anonstream spec draft`` (rules in docs/spec.md).

:class:`Column` and :class:`Draft` live in :mod:`stream.specdraft.model` and are re-exported here.
"""

from __future__ import annotations

import re

import pandas as pd

from core.errors import SpecError
from stream.specdraft.engine import choose_engine
from stream.specdraft.hierarchies import MISSING_LABEL, hierarchy_for, with_missing_leaf
from stream.specdraft.keys import stream_keys
from stream.specdraft.model import Column, Draft
from stream.specdraft.outcome import outcome_columns
from stream.specdraft.profile import (
    IDENTIFIER_PATTERNS,
    QI_PATTERNS,
    TIME_PATTERN,
    Profile,
    functional,
    match,
    norm,
    profile,
)
from stream.specdraft.sensitive import class_column, is_class_column, pick_sensitive, severity_table

__all__ = ["Column", "Draft", "make_draft"]

MAX_CATEGORIES = 50  # a text column with more values is not a QI candidate by type (free text, names)


def make_draft(frame: pd.DataFrame, name: str, max_qi: int = 8, passthrough: tuple[str, ...] = ()) -> Draft:
    """Every column of ``frame`` with its role and the reason; ``passthrough`` names the columns the person
    drafting chose to release unchanged (nothing else is ever a pass-through)."""
    profiles = profile(frame)
    draft = Draft(name=name, rows=len(frame), encoding=frame.attrs.get("encoding"))
    clean = pd.DataFrame({c: _clean(frame[c], p) for c, p in profiles.items()})
    roles: dict[str, Column] = {}
    for c in passthrough:
        if c not in profiles:
            raise SpecError(f"--passthrough {c}: not a column of the file (columns: {', '.join(map(str, profiles))})")
        roles[c] = Column(c, "passthrough", "chosen with --passthrough: released unchanged")

    for c, p in profiles.items():
        hit = match(c, IDENTIFIER_PATTERNS)
        if c in roles:
            continue
        if hit:
            roles[c] = Column(c, "identifier", f"looks like {hit[1]} (name)")
        elif p.kind == "text" and p.date_note:
            roles[c] = Column(c, "withheld", f"{p.date_note}: not released; declare its formats by hand to use it")
        elif p.kind != "date" and p.distinct >= 20 and p.distinct_ratio >= 0.9 and not match(c, QI_PATTERNS):
            roles[c] = Column(c, "identifier", f"near-unique: {p.distinct} distinct values in {len(p.values)} rows "
                                               f"would single people out")

    pick = pick_sensitive(profiles, set(roles))
    sens = pick.column if pick else None
    if pick:
        roles[pick.column] = Column(pick.column, "sensitive", pick.why)
    outcomes = outcome_columns(profiles, set(roles))  # never a QI, never a pass-through unless chosen

    qis, skipped = _pick_qis(profiles, roles, max_qi, clean, set(outcomes))
    for c, why in qis:
        roles[c] = Column(c, "qi", why)
    if any("chosen by type" in why for _, why in qis):
        draft.review.append("No column is named like a quasi-identifier (age, sex, area, date ...): the QIs were "
                            "chosen by type, fewest values first. Keep only the columns outsiders could link to "
                            "these records, or list the QIs by hand (docs/spec.md).")
    group_cols = [c for c in profiles if c not in roles or roles[c].role == "qi"]
    for c, _ in qis:
        roles[c].qi, roles[c].how = hierarchy_for(clean, profiles[c], group_cols)

    sens_is_class = sens is not None and is_class_column(profiles[sens])
    cls = class_column(profiles, set(roles)) if sens and not sens_is_class else None
    draft.class_column = cls
    for c, p in profiles.items():
        if c in roles:
            continue
        roles[c] = _other(c, p, clean, sens, cls, [q for q, _ in qis], outcomes.get(c), skipped.get(c))
    draft.columns = [roles[c] for c in frame.columns]

    if sens:
        sev = severity_table(clean, sens, cls, sens_is_class)
        draft.severity, draft.severity_note, draft.severity_how = sev.table, sev.notes, sev.how
    _missing(draft, profiles)
    stream_keys(draft, profiles, clean)
    draft.dates = {c.name: profiles[c.name].date_format for c in draft.role("identifier")
                   if profiles[c.name].kind == "date" and profiles[c.name].date_format}
    draft.engine, draft.engine_why = choose_engine(draft)
    return draft


def _clean(col: pd.Series, p: Profile) -> pd.Series:
    text = col.astype("string").str.strip()
    return text.mask(text.isin(list(p.tokens) + [""]) | col.isna()).astype(object)


def _pick_qis(profiles: dict[str, Profile], roles: dict[str, Column], max_qi: int, clean: pd.DataFrame,
              outcomes: set[str]) -> tuple[list[tuple[str, str]], dict[str, str]]:
    """The QIs, in rank order, and why each other QI candidate is not one (beyond --max-qi, a twin)."""
    ranked: list[tuple[int, str, str]] = []
    dates = [c for c, p in profiles.items() if c not in roles and p.kind == "date"]
    if dates:
        best = max(dates, key=lambda c: bool(re.search(TIME_PATTERN, norm(c))))
        ranked.append((-1, best, "event date: generalized day -> month -> year"))
    for c, p in profiles.items():
        if c in roles or c in outcomes or p.kind == "date" or p.distinct < 2:
            continue
        hit = match(c, QI_PATTERNS)
        if hit:
            ranked.append((hit[0], c, f"{hit[1]} (name): linkable with outside records"))
    if not ranked:  # nothing named like a person's attribute (a logistics table, a file without a header)
        ranked = _by_type(profiles, roles, outcomes)
    ranked.sort(key=lambda t: t[0])
    chosen: list[tuple[str, str]] = []
    skipped: dict[str, str] = {}
    for _, c, why in ranked:
        twin = next((q for q, _ in chosen if functional(clean, c, q) and functional(clean, q, c)), None)
        if twin is not None:  # a one-to-one twin of a chosen QI adds nothing
            skipped[c] = f"same information as QI '{twin}' (one-to-one): withheld"
        elif len(chosen) >= max_qi:
            skipped[c] = (f"{why.split(':')[0]}, a quasi-identifier beyond --max-qi {max_qi}: withheld (raise "
                          f"--max-qi to release it generalized)")
        else:
            chosen.append((c, why))
    return chosen, skipped


def _by_type(profiles: dict[str, Profile], roles: dict[str, Column], outcomes: set[str]) -> list[tuple[int, str, str]]:
    """QI candidates by type when no column name says what it is: numbers and categories (at most
    ``MAX_CATEGORIES`` values), fewest distinct values first (the coarsest, so the likeliest feasible)."""
    out = []
    for c, p in profiles.items():
        if c in roles or c in outcomes or p.kind == "date" or p.distinct < 2:
            continue
        if p.kind == "numeric" or p.distinct <= MAX_CATEGORIES:
            kind = "numbers" if p.kind == "numeric" else "a category"
            out.append((len(QI_PATTERNS) + p.distinct, c, f"{kind} with {p.distinct} values, chosen by type: no "
                        "column is named like a quasi-identifier (review: keep only what outsiders could link)"))
    return out


def _other(c: str, p: Profile, clean: pd.DataFrame, sens: str | None, cls: str | None, qis: list[str],
           outcome: str | None, skipped: str | None) -> Column:
    if p.distinct <= 1:
        return Column(c, "withheld", "constant: tells an analyst nothing")
    if c == cls:
        return Column(c, "withheld", f"felony/misdemeanour class: used for the severity table; releasing it would "
                                     f"reveal the class of the offence in '{sens}'")
    if sens and functional(clean, c, sens) and p.distinct > 1:
        return Column(c, "withheld", f"each value maps to one '{sens}' value: releasing it would reveal the "
                                     f"sensitive attribute")
    if outcome:
        return Column(c, "withheld", f"{outcome}: an outcome is never a quasi-identifier nor released unchanged "
                                     f"unless chosen (--passthrough)" + (f"; '{sens}' is the sensitive attribute"
                                                                         if sens else ""))
    if skipped:
        return Column(c, "withheld", skipped)
    for q in qis:
        if functional(clean, c, q) and functional(clean, q, c):
            return Column(c, "withheld", f"same information as QI '{q}' (one-to-one)")
    kind = {"numeric": "numbers", "date": "dates"}.get(p.kind, f"text, {p.distinct} values")
    return Column(c, "withheld", f"not a recognised quasi-identifier, sensitive attribute or outcome ({kind}): "
                                 "not released (--passthrough releases it unchanged)")


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
