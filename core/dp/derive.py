"""The grouping columns of a spec's ``[dp]`` table and their public domains.

A count table publishes every cell of its grouping's *public* domain, zero cells too, so that which
cells exist reveals nothing. The domains come from the spec, never from the data: a sensitive
attribute's severity list, a categorical hierarchy's leaves, a hierarchy level's labels (a region of
a suburb tree, an age band of an interval hierarchy with a declared domain) or ``[dp.domains]``. A
period of the time column (``time = "week"``) has the periods of the *declared* days as its domain
(a stream release's window days, an ``aggregate`` run's ``--days``), never the rows' own days.
Rows whose value is outside the domain count in no cell.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from core.contract import DateFormat
from core.dp.blocks import utc_days
from core.dp_spec import DerivedColumn, DPSpec
from core.errors import SpecError
from core.hierarchies.intervals import band_label
from core.hierarchies.tree import tree_rows
from core.schema import DatasetSpec, IntervalHierarchySpec, QISpec, TableHierarchySpec, TreeHierarchySpec


def dp_of(spec: DatasetSpec) -> DPSpec:
    if spec.dp is None:
        raise SpecError(f"spec '{spec.name}' has no [dp] table: declare its count tables (docs/privacy.md)")
    return spec.dp


def grouping_columns(frame: pd.DataFrame, spec: DatasetSpec,
                     days: Sequence[str] | None = None) -> tuple[pd.DataFrame, dict[str, list[str]]]:
    """Every column the spec's groupings use (strings; missing where outside the domain) and its domain.

    ``days`` are the declared UTC days (``YYYY-MM-DD``) a period column's domain is made of; a grouping
    with a period column and no declared days is refused."""
    dp = dp_of(spec)
    names = list(dict.fromkeys(c for g in dp.groupings for c in g))
    out = pd.DataFrame(index=frame.index)
    domains: dict[str, list[str]] = {}
    for name in names:
        if name in dp.columns:
            out[name], domains[name] = _derived(frame, spec, name, dp.columns[name], days)
        else:
            _need(frame, name)
            domains[name] = _raw_domain(spec, name)
            out[name] = frame[name].astype(str).where(frame[name].astype(str).isin(set(domains[name])))
    return out, domains


def person_keys(frame: pd.DataFrame, spec: DatasetSpec) -> pd.Series:
    """One key per person (the ``[dp] person`` columns joined), for the person-level contribution bound."""
    dp = dp_of(spec)
    for col in dp.person:
        _need(frame, col)
    return frame[list(dp.person)].astype(str).agg("\x1f".join, axis=1)


def _need(frame: pd.DataFrame, column: str) -> None:
    if column not in frame.columns:
        raise SpecError(f"spec field 'dp': column '{column}' is not in the input")


def _raw_domain(spec: DatasetSpec, name: str) -> list[str]:
    dp = dp_of(spec)
    if name in dp.domains:
        return list(dp.domains[name])
    if spec.sensitive is not None and spec.sensitive.name == name and spec.sensitive.severity:
        return list(spec.sensitive.severity)
    qi = next((q for q in spec.qi if q.name == name), None)
    if qi is not None and isinstance(qi.hierarchy, TableHierarchySpec | TreeHierarchySpec):
        return [row[0] for row in _rows(qi)]
    raise SpecError(f"spec field 'dp.groupings': column '{name}' has no public domain; "
                    f"declare [dp.domains] {name} = [...] or derive it in [dp.columns]")


def _rows(qi: QISpec) -> list[list[str]]:
    h = qi.hierarchy
    if isinstance(h, TreeHierarchySpec):
        return tree_rows(h.tree)
    if isinstance(h, TableHierarchySpec) and h.rows is not None:
        return [list(r) for r in h.rows]
    raise SpecError(f"spec field 'qi[{qi.name}].hierarchy': rows not loaded (load the spec with stream.io.specs)")


def _level(qi: QISpec, level: str | int, top: int) -> int:
    names = list(getattr(qi.hierarchy, "level_names", None) or ())
    index = names.index(level) + 1 if isinstance(level, str) and level in names else level
    if not isinstance(index, int) or not 1 <= index <= top:
        raise SpecError(f"spec field 'dp.columns': '{qi.name}' has no level {level!r} "
                        f"(levels 1..{top}{', named ' + ', '.join(names) if names else ''})")
    return index


def _derived(frame: pd.DataFrame, spec: DatasetSpec, name: str, col: DerivedColumn,
             days: Sequence[str] | None) -> tuple[pd.Series, list[str]]:
    if col.time is not None:
        if spec.time_column is None:
            raise SpecError(f"spec field 'dp.columns.{name}': the spec declares no time_column")
        if days is None:
            raise SpecError(f"grouping column '{name}' (a period of {spec.time_column}) needs declared days: "
                            "its cells come from the days a query declares, never from the rows")
        _need(frame, spec.time_column)
        return _periods(frame[spec.time_column], spec.time_column, col.time, spec.date_format(spec.time_column),
                        days)
    assert col.qi is not None and col.level is not None
    qi = spec.qi_spec(col.qi)
    _need(frame, qi.name)
    h = qi.hierarchy
    if isinstance(h, IntervalHierarchySpec):
        return _bands(frame[qi.name], qi, h, col.level)
    rows = _rows(qi)
    level = _level(qi, col.level, len(rows[0]) - 1)
    mapping = {row[0]: row[level] for row in rows}
    return frame[qi.name].astype(str).map(mapping), list(dict.fromkeys(row[level] for row in rows))


def _bands(values: pd.Series, qi: QISpec, h: IntervalHierarchySpec, level: str | int) -> tuple[pd.Series, list[str]]:
    if (h.widths is None and h.edges is None) or (h.widths is not None and h.domain is None):
        raise SpecError(f"spec field 'qi[{qi.name}].hierarchy': a DP grouping needs declared bands "
                        "(widths with a domain, or edges)")
    top = len(h.widths) if h.widths is not None else len(h.edges or ())
    index = _level(qi, level, top)
    if h.edges is not None:
        cuts = [float(c) for c in h.edges[index - 1]]
    else:
        assert h.widths is not None and h.domain is not None
        w, lo, hi = h.widths[index - 1], float(h.domain[0]), float(h.domain[1])
        origin = math.floor(lo / h.widths[-1]) * h.widths[-1]
        cuts = list(np.arange(origin, hi + w, w, dtype=float))
        if cuts[-1] <= hi:
            cuts.append(cuts[-1] + w)
    labels = [band_label(a, b, h.integer) for a, b in itertools.pairwise(cuts)]
    x = pd.to_numeric(values, errors="coerce").to_numpy(dtype=float)
    idx = np.searchsorted(np.asarray(cuts), x, side="right") - 1
    ok = (idx >= 0) & (idx < len(labels)) & ~np.isnan(x)
    out = np.full(len(x), None, dtype=object)
    out[ok] = np.asarray(labels, dtype=object)[idx[ok]]
    return pd.Series(out, index=values.index, dtype=object), labels


def _labels(days: pd.Series | pd.DatetimeIndex, period: str) -> list[str]:
    if period == "day":
        return list(days.strftime("%Y-%m-%d"))
    if period == "month":
        return list(days.strftime("%Y-%m"))
    iso = days.isocalendar()
    return list(iso["year"].astype(str) + "-W" + iso["week"].astype(str).str.zfill(2))


def _periods(values: pd.Series, column: str, period: str, fmt: DateFormat | None,
             declared: Sequence[str]) -> tuple[pd.Series, list[str]]:
    """Each row's period label and the domain: the periods of the declared days, in order."""
    days = pd.to_datetime(utc_days(values, column, fmt))
    out = pd.Series(_labels(days.dt, period) if len(days) else [], index=values.index, dtype=object)
    span = pd.DatetimeIndex(sorted(set(declared)))
    labels = list(dict.fromkeys(_labels(span, period))) if len(span) else []
    return out.where(out.isin(set(labels))), labels
