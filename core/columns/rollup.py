"""Rolling released labels up to one hierarchy level: the band grid of a QI and :func:`roll_up`.

A QI's *grid* is what the spec says about its hierarchy, as plain JSON (it travels in the codebook,
``codebook["qis"][qi]["grid"]``, so an analyst can roll labels up without the spec):

* intervals: ``widths`` (band widths per level) or ``edges`` (cut points per level), ``integer``,
  ``domain``; bands of width ``w`` start at multiples of ``w`` (the hierarchy's origin is a multiple of
  its widest band, so of every width). Automatic bands (``auto = n``) depend on each batch: their grid
  has neither, and only the original values and ``*`` roll up;
* dates: the granularities (``day``, ``month``, ``year``);
* tables and trees: the rows ``leaf, level 1, ..., *``;
* masks: the masking character and length.

The rule, one for every kind: at level ``l`` a label that is a node *at or below* ``l`` (or a range or a
set that lies inside one node of ``l``) rolls up to its ancestor at ``l``; a label *above* ``l`` (``*``,
a wider band, a range that straddles two nodes) cannot be placed and is reported as *coarser than this
level* (None here). The top level (``*``) holds every row. Free ranges of local-recoding engines roll up
when they happen to lie inside one node, so for them the roll-up is best effort.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from core.columns.base import Interpreter, set_members
from core.hierarchies import TOP, DateHierarchy, IntervalHierarchy, MaskHierarchy, TableHierarchy
from core.hierarchies.intervals import band_label, fmt_number, nice_width, parse_interval, split_interval

_DATE_FORMATS = {"day": "%Y-%m-%d", "month": "%Y-%m", "year": "%Y"}
MAX_TABLE_ROWS = 2000
"""A table grid with more rows leaves them out (``rows`` null): it travels in every manifest. Such a QI
still rolls up through its typed ancestor columns (``stream.analyst.band_counts`` uses them)."""


def grid_of(interp: Interpreter, original: pd.Series | None = None,
            max_rows: int | None = MAX_TABLE_ROWS) -> dict[str, Any]:
    """The grid of one QI (see the module docstring). ``original`` (the QI's input values) resolves the
    data-dependent parts: automatic band widths and an unset mask length. A table of more than
    ``max_rows`` rows is described without them (None: always with them)."""
    h, levels = interp.hierarchy, interp.levels()
    if isinstance(h, IntervalHierarchy):
        widths = list(h.widths) if h.widths else None
        if widths is None and h.edges is None and original is not None and len(original):
            x = pd.to_numeric(original, errors="coerce").dropna().to_numpy(dtype=float)
            if len(x):
                lo, hi = h._domain(x)
                base = nice_width(hi - lo)
                widths = [base * 2**i for i in range(h.auto or 4)]
                levels = ["value", *(f"band of width {fmt_number(w)}" for w in widths), TOP]
        return {"kind": "intervals", "levels": levels, "integer": h.integer, "widths": widths,
                "edges": [list(c) for c in h.edges] if h.edges else None,
                "domain": list(h.domain) if h.domain else None}
    if isinstance(h, DateHierarchy):
        return {"kind": "dates", "levels": levels, "granularities": list(h.levels)}
    if isinstance(h, MaskHierarchy):
        length = h.length
        if length is None and original is not None and len(original):
            length = int(original.astype(str).str.strip().str.len().max())
            levels = ["value", *(f"{i} masked" for i in range(1, length)), "all masked"]
        return {"kind": "mask", "levels": levels, "char": h.char, "length": length}
    if isinstance(h, TableHierarchy):
        rows = [[str(v) for v in row] for row in h.table] if max_rows is None or len(h.table) <= max_rows else None
        return {"kind": "table", "levels": levels, "rows": rows}
    raise TypeError(f"no grid for the hierarchy of '{interp.name}'")  # pragma: no cover


def level_index(grid: dict[str, Any], level: int | str) -> int:
    """A level given by number or by name (``"region"``, ``"band of width 10"``, ``"month"``, ``"l1"``)."""
    names = [str(n) for n in grid["levels"]]
    if isinstance(level, str) and level in names:
        return names.index(level)
    try:
        i = int(level)
    except (TypeError, ValueError):
        raise ValueError(f"no level {level!r}; levels are: {', '.join(names)}") from None
    if not 0 <= i < len(names):
        raise ValueError(f"no level {i}; levels are 0 to {len(names) - 1}: {', '.join(names)}")
    return i


def roll_up(labels: pd.Series, grid: dict[str, Any], level: int,
            coded: tuple[np.ndarray, list[Any]] | None = None) -> pd.Series:
    """Each label's node at ``level`` (same index; None when the label is coarser than the level).

    ``coded``: each row's code (-1: missing) into a list of labels (which may repeat one), when known:
    the labels are then those, not ``labels`` (whose index the result takes)."""
    if coded is not None:
        codes, uniq = coded
    else:
        codes, uniq = pd.factorize(labels.astype(object))  # work once per distinct label; missing: code -1
    return pd.Series(rolled_codes(uniq, grid, level)[codes], index=labels.index, dtype=object)


def rolled_codes(uniq: Any, grid: dict[str, Any], level: int) -> np.ndarray:
    """:func:`roll_up` per distinct label: each label's node at ``level`` (None when coarser), then the
    missing label's (so that code -1 picks the last), as an object array."""
    top = len(grid["levels"]) - 1
    node = _NODE[grid["kind"]]
    if grid["kind"] == "table":
        if grid.get("rows") is None:
            raise ValueError("this table hierarchy is too large for its grid to travel with the release; "
                             "group by its typed ancestor columns instead")
        grid = {**grid, "_index": _table_index(grid)}  # a copy: the caller's grid stays plain JSON
    text = [str(u).strip() for u in uniq]
    mapped = [TOP if level >= top else (None if u == TOP else node(u, grid, level)) for u in text]
    return np.array([*mapped, TOP if level >= top else None], dtype=object)


def _interval_node(label: str, grid: dict[str, Any], level: int) -> str | None:
    parsed = parse_interval(label)
    if parsed is None:
        return None
    lo, hi, closed = parsed
    dom = grid.get("domain")
    if dom is not None and (lo < dom[0] or hi > dom[1] or (hi == dom[1] and not closed)):
        return None
    if level == 0:
        return fmt_number(lo) if split_interval(label) is None else None
    integer = bool(grid.get("integer"))
    if grid.get("edges"):
        cut = np.asarray(grid["edges"][level - 1], dtype=float)
        i = int(np.searchsorted(cut, lo, side="right")) - 1
        if not 0 <= i < len(cut) - 1:
            return None
        low, high = float(cut[i]), float(cut[i + 1])
    elif grid.get("widths"):
        w = float(grid["widths"][level - 1])
        low = math.floor(lo / w + 1e-9) * w
        high = low + w
    else:
        return None
    inside = (hi + 1 <= high + 1e-9) if closed and integer else (hi < high if closed else hi <= high + 1e-9)
    return band_label(low, high, integer) if lo >= low - 1e-9 and inside else None


def _period(label: str) -> tuple[pd.Timestamp, pd.Timestamp] | None:
    parts = split_interval(label)
    try:
        if parts is not None:
            end = pd.Timestamp(parts[1])
            return pd.Timestamp(parts[0]), end if parts[2] else end - pd.Timedelta(days=1)
        start = pd.Timestamp(label + {4: "-01-01", 7: "-01"}.get(len(label), ""))
        step = {4: pd.DateOffset(years=1), 7: pd.DateOffset(months=1)}.get(len(label), pd.DateOffset(days=1))
        return start, start + step - pd.Timedelta(days=1)
    except ValueError:
        return None


def _date_node(label: str, grid: dict[str, Any], level: int) -> str | None:
    period = _period(label)
    if period is None:
        return None
    fmt = _DATE_FORMATS[grid["granularities"][level]]
    first, last = (d.strftime(fmt) for d in period)
    return first if first == last else None


def _table_index(grid: dict[str, Any]) -> tuple[np.ndarray, dict[str, tuple[int, int]], dict[str, int]]:
    """The table, each label's lowest level and a row under it, and each leaf's row."""
    table = np.array(grid["rows"], dtype=object)
    where: dict[str, tuple[int, int]] = {}
    for lvl in range(table.shape[1] - 1, -1, -1):
        for row, lab in enumerate(table[:, lvl]):
            where[str(lab)] = (lvl, row)
    return table, where, {str(v): i for i, v in enumerate(table[:, 0])}


def _table_node(label: str, grid: dict[str, Any], level: int) -> str | None:
    table, where, leaf_row = grid["_index"]
    members = set_members(label)
    if members is not None:
        rows = [leaf_row.get(m) for m in members]
        if any(r is None for r in rows) or not rows:
            return None
        names = {str(table[r, level]) for r in rows}
        return names.pop() if len(names) == 1 else None
    found = where.get(label)
    if found is None or found[0] > level:
        return None
    return str(table[found[1], level])


def _mask_node(label: str, grid: dict[str, Any], level: int) -> str | None:
    char = grid["char"]
    if set_members(label) is not None or set(label) == {char}:
        return None
    masked = len(label) - len(label.rstrip(char))
    if masked > level or level > len(label):
        return None
    return label[: len(label) - level] + char * level


_NODE = {"intervals": _interval_node, "dates": _date_node, "table": _table_node, "mask": _mask_node}
