"""Verification of k-regular (heterogeneous) releases: ``ils``, and ``kmember`` / ``lgreedy``.

The release declares a bipartite graph in ``diagnostics["matching"]``: for each released row
(positionally), the positions of the original rows it generalizes. From that graph and the
released labels alone (no engine internals) it checks:

1. accounting: every input row is released exactly once, nothing is suppressed;
2. the sensitive and pass-through columns are unchanged;
3. the graph is r-regular with r >= k (r = the number of matches per row; the engines declare
   r = k): every released row lists exactly r distinct original rows, itself among them (so the
   row is a truthful generalization of its own record), and every original row is listed by
   exactly r released rows;
4. every listed original value lies inside the released label: ``[lo, hi]`` or a single number
   for numeric QIs, ``[day, day]`` or a single day for date QIs (the older ``[lo-hi]`` and
   ``[day..day]`` forms are read too), ``{a,b}`` or a single value for
   categorical and masked QIs; in nested releases also a node of the QI's hierarchy (``*``, a
   band, a month ``YYYY-MM`` or year ``YYYY``, a category of the tree).

A k-regular bipartite graph is a union of k perfect matchings, so with 3 and 4 every original row
has k released rows it may have become, and every released row has k originals it may come from
(Doka et al.'s k-anonymity for heterogeneous generalization). The labels may be wider than the
hull of the k matches (a homogeneous cluster of more than k rows); that weakens nothing.
l-diversity and t-closeness cannot be certified this way and fail verification if required.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from core.contract import DateFormat
from core.encoding import Schema
from core.engines.base import Release
from core.hierarchies.base import TOP, Hierarchy
from core.hierarchies.dates import DateHierarchy, to_days
from core.hierarchies.intervals import parse_interval, split_interval
from core.privacy.requirement import PrivacyRequirement
from core.verify.report import VerificationReport, check_risk


def _numeric_bounds(label: str) -> tuple[float, float]:
    """Inclusive numeric bounds of a label (a half-open ``[a, b)`` ends just below ``b``); NaN if unreadable."""
    if label == TOP:
        return -np.inf, np.inf
    parsed = parse_interval(label)
    if parsed is None:
        return np.nan, np.nan
    lo, hi, closed = parsed
    return lo, hi if closed else float(np.nextafter(hi, -np.inf))


def _date_bounds(label: str) -> tuple[float, float]:
    if label == TOP:
        return -np.inf, np.inf
    period = _PERIODS.get(len(label)) if _PERIOD.match(label) else None
    if period is not None:  # a month or year node of the date hierarchy (nested releases)
        start = pd.Timestamp(label + period[0], tz="UTC")
        return start.value / 86400e9, (start + period[1]).value / 86400e9 - 1
    try:
        parts = split_interval(label)
        lo, hi = (parts[0], parts[1]) if parts else (label, label)
        days = to_days("label", pd.Series([lo, hi])).asi8 / 86400e9
        end = float(days[1]) if parts is None or parts[2] else float(days[1]) - 1
        return float(days[0]), end
    except Exception:  # unparseable label: covers nothing
        return np.nan, np.nan


_PERIOD = re.compile(r"^\d{4}(-\d{2})?$")
_PERIODS = {4: ("-01-01", pd.DateOffset(years=1)), 7: ("-01", pd.DateOffset(months=1))}


def _date_format(schema: Schema, name: str) -> DateFormat | None:
    """The declared format of a date QI: its hierarchy's, else the spec's."""
    hierarchy = schema.hierarchies.get(name)
    return hierarchy.format if isinstance(hierarchy, DateHierarchy) else schema.spec.date_format(name)


def _set_members(label: str) -> list[str]:
    if label.startswith("{") and label.endswith("}"):
        return [v.strip() for v in label[1:-1].split(",")]
    return [label]


def _ordered_covered(labels: pd.Series, values: np.ndarray, rows: np.ndarray, cols: np.ndarray,
                     date: bool) -> np.ndarray:
    uniq, inv = np.unique(labels.to_numpy(dtype=str), return_inverse=True)
    parse = _date_bounds if date else _numeric_bounds
    bounds = np.array([parse(u) for u in uniq], dtype=float).reshape(-1, 2)
    lo, hi = bounds[inv[rows], 0], bounds[inv[rows], 1]
    v = values[cols]
    return (lo <= v) & (v <= hi)


def _nominal_covered(labels: pd.Series, values: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    lab = labels.to_numpy(dtype=str)
    uniq, inv = np.unique(lab, return_inverse=True)
    member_lab, member_val = [], []
    for i, u in enumerate(uniq):
        for v in _set_members(u):
            member_lab.append(i)
            member_val.append(v)
    allowed = pd.MultiIndex.from_arrays([np.asarray(member_lab, dtype=np.int64), np.asarray(member_val, dtype=object)])
    edges = pd.MultiIndex.from_arrays([inv[rows].astype(np.int64), values[cols].astype(object)])
    return np.asarray(edges.isin(allowed))


def _hierarchy_covered(hierarchy: Hierarchy | None, labels: pd.Series, originals: pd.Series, rows: np.ndarray,
                       cols: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """``ok`` with the pairs it rejects re-checked by the hierarchy (``Hierarchy.covers``), once per
    distinct (label, original value) pair."""
    if hierarchy is None:
        return ok
    bad = np.flatnonzero(~ok)
    lab = labels.astype(str).to_numpy()[rows[bad]]
    val = originals.astype(str).str.strip().to_numpy()[cols[bad]]
    verdict = {pair: hierarchy.covers(*pair) for pair in set(zip(lab, val, strict=True))}
    out = ok.copy()
    out[bad] = [verdict[pair] for pair in zip(lab, val, strict=True)]
    return out


def _check_graph(matching: np.ndarray, n: int, k: int, failures: list[str]) -> int:
    """Degree r of the declared graph if it is r-regular with r >= k and has its self matches, else 0."""
    if matching.ndim != 2 or matching.shape[0] != n:
        failures.append(f"matching has shape {matching.shape}; expected ({n}, r) with r >= k={k}")
        return 0
    r = matching.shape[1]
    if r < k:
        failures.append(f"each released row generalizes {r} original rows; requirement k={k}")
        return 0
    if n == 0:
        return r
    if matching.min() < 0 or matching.max() >= n:
        failures.append("matching refers to rows outside the input")
        return 0
    before = len(failures)
    if (np.diff(np.sort(matching, axis=1), axis=1) == 0).any():
        failures.append("a released row lists the same original row twice")
    own = (matching == np.arange(n)[:, None]).any(axis=1)
    if not own.all():
        failures.append(f"{int((~own).sum())} released row(s) do not generalize their own original row")
    degree = np.bincount(matching.ravel(), minlength=n)
    if (degree != r).any():
        failures.append(f"original rows are generalized by {int(degree.min())}..{int(degree.max())} released rows; "
                        f"expected exactly {r} (the matches per released row)")
    return r if len(failures) == before else 0


def verify_k_regular(original: pd.DataFrame, release: Release, schema: Schema,
                     req: PrivacyRequirement | None = None) -> VerificationReport:
    """Verify a k-regular release against the ``original`` input rows (identifiers may be present)."""
    req = req or release.requirement
    rows = release.rows
    failures: list[str] = []
    rep = VerificationReport(ok=False, mode="k-regular", released=len(rows), suppressed=len(release.suppressed))
    if len(release.suppressed):
        failures.append(f"{len(release.suppressed)} rows suppressed; a k-regular release suppresses nothing")
    if rows.index.has_duplicates or not rows.index.sort_values().equals(pd.Index(original.index).sort_values()):
        failures.append(f"rows unaccounted for: {len(original)} input, {len(rows)} released")
        rep.failures = failures
        return rep
    orig = original.loc[rows.index]
    kept = list(schema.spec.passthrough) + ([schema.sensitive] if schema.sensitive else [])
    for col in kept:
        if not (orig[col].astype(str).to_numpy() == rows[col].astype(str).to_numpy()).all():
            failures.append(f"column '{col}' was altered; it must pass through unchanged")
    if req.needs_sensitive:
        failures.append("l-diversity / t-closeness cannot be certified for a k-regular release")
    matching = release.diagnostics.get("matching")
    if matching is None:
        failures.append("release declares no matching (diagnostics['matching'])")
    else:
        matching = np.asarray(matching, dtype=np.int64)
        n = len(rows)
        rep.k = _check_graph(matching, n, req.k, failures)
        # Each released row may be any of its r matches and each original row any of r released rows:
        # the prosecutor risk of every record is 1 / r, so the highest and the average are both 1 / r.
        check_risk(rep, req, 1.0 / rep.k if rep.k else 0.0, failures)
        if rep.k and n:
            r_idx = np.repeat(np.arange(n), matching.shape[1])
            o_idx = matching.ravel()
            for q in schema.spec.qi:
                name, kind = q.name, q.type.value
                if kind in ("numeric", "date") and rows[name].astype(str).str.startswith("{").any():
                    kind = "nominal"  # an ordered QI without ordered values (e.g. a table hierarchy) gets sets
                if kind == "numeric":
                    vals = pd.to_numeric(orig[name], errors="coerce").to_numpy(dtype=float)
                    ok = _ordered_covered(rows[name], vals, r_idx, o_idx, date=False)
                elif kind == "date":  # the originals as the hierarchy reads them (its declared format)
                    vals = to_days(name, orig[name], _date_format(schema, name)).asi8 / 86400e9
                    ok = _ordered_covered(rows[name], vals, r_idx, o_idx, date=True)
                else:
                    vals = orig[name].astype(str).str.strip().to_numpy(dtype=object)
                    ok = _nominal_covered(rows[name], vals, r_idx, o_idx)
                if not ok.all():  # a node of the QI's hierarchy the forms above do not read (nested releases)
                    ok = _hierarchy_covered(schema.hierarchies.get(name), rows[name], orig[name], r_idx, o_idx, ok)
                if not ok.all():
                    rep.k = 0
                    j = int(np.flatnonzero(~ok)[0])
                    failures.append(f"QI '{name}': {int((~ok).sum())} matched value(s) lie outside the released "
                                    f"label, e.g. label {rows[name].iloc[r_idx[j]]!r}")
    rep.failures = failures
    rep.ok = not failures
    return rep
