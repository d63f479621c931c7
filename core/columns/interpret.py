"""What a released QI label means, per hierarchy kind: bounds, period, level and ancestors.

One :class:`Interpreter` per quasi-identifier reads the labels an engine released (from the label
text alone, never engine internals) and gives the typed columns published beside it:

* intervals (numeric): ``<qi>_lo``, ``<qi>_hi``; the bracket says whether ``hi`` is included
  (``[30, 39]`` closed, ``[30, 40)`` half-open, see :mod:`core.hierarchies.intervals`);
* dates: ``<qi>_start``, ``<qi>_end`` (ISO days, both included);
* tree / table: ``<qi>_level`` (0 = original value) and one ancestor column per coarser level;
* mask: ``<qi>_level`` (the number of masked characters).

Every interpreter also names the *level* of each label for the codebook's shares: a hierarchy level
number, or ``"range"`` / ``"set"`` for a label of a local-recoding engine that is not on a level.
``*`` (and suppression) gives nulls in every typed column.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from core.columns.base import RANGE, SET, Column, Interpreter, set_members
from core.hierarchies import TOP, DateHierarchy, Hierarchy, IntervalHierarchy, MaskHierarchy, TableHierarchy
from core.hierarchies.intervals import fmt_number, parse_interval, split_interval
from core.schema import QISpec

__all__ = [
    "RANGE",
    "SET",
    "Column",
    "DateInterpreter",
    "Interpreter",
    "IntervalInterpreter",
    "MaskInterpreter",
    "TableInterpreter",
    "interpreter",
    "set_members",
]


class IntervalInterpreter(Interpreter):
    kind = "intervals"

    def __init__(self, qi: QISpec, hierarchy: IntervalHierarchy) -> None:
        super().__init__(qi, hierarchy)
        self.integer = hierarchy.integer
        self.widths, self.edges = hierarchy.widths, hierarchy.edges
        dom = hierarchy.domain
        # bands of fixed widths start on a grid whose origin the domain fixes (core/hierarchies/intervals.py)
        self.origin = (np.floor(dom[0] / self.widths[-1]) * self.widths[-1]
                       if dom is not None and self.widths else None)

    def columns(self) -> list[Column]:
        t = "integer" if self.integer else "number"
        return [Column(f"{self.name}_lo", t, f"lower bound of '{self.name}' (included); null for *"),
                Column(f"{self.name}_hi", t, f"upper bound of '{self.name}': included when the label ends with ']' "
                       "(always for whole-number QIs), excluded when it ends with ')'; null for *")]

    def label_meaning(self) -> str:
        return (f"'{self.name}' as released: a value, a closed interval [lo, hi] or a half-open one [lo, hi); "
                "* = any value")

    def values(self, label: str) -> tuple[Any, ...]:
        parsed = None if label == TOP else parse_interval(label)
        if parsed is None:
            return None, None
        lo, hi = parsed[0], parsed[1]
        if self.integer and float(lo).is_integer() and float(hi).is_integer():
            return int(lo), int(hi)
        return lo, hi

    def _band_levels(self) -> list[tuple[float, ...] | float]:
        if self.edges is not None:
            return [tuple(c) for c in self.edges]
        return list(self.widths or ())

    def levels(self) -> list[str]:
        names = ["value"]
        for band in self._band_levels():
            names.append(f"band of width {fmt_number(band)}" if not isinstance(band, tuple)
                         else "bands " + ", ".join(fmt_number(e) for e in band))
        return [*names, TOP] if len(names) > 1 else [*names, "band", TOP]

    def level(self, label: str) -> int | str | None:
        if label == TOP:
            return len(self.levels()) - 1
        parsed = parse_interval(label)
        if parsed is None:
            return None
        lo, hi, closed = parsed
        if split_interval(label) is None:
            return 0
        upper = hi + 1 if closed and self.integer else hi
        for i, band in enumerate(self._band_levels(), start=1):
            if isinstance(band, tuple):
                if lo in band and upper in band and band.index(upper) == band.index(lo) + 1:
                    return i
            elif abs((upper - lo) - band) < 1e-9 and (not closed or self.integer) and (
                    self.origin is None or abs(((lo - self.origin) / band) - round((lo - self.origin) / band)) < 1e-9):
                return i
        if self.widths is None and self.edges is None and (not closed or self.integer):
            return 1  # automatic bands: the width depends on the batch; reported as one level
        return RANGE


class DateInterpreter(Interpreter):
    kind = "dates"

    def __init__(self, qi: QISpec, hierarchy: DateHierarchy) -> None:
        super().__init__(qi, hierarchy)
        self.granularities = list(hierarchy.levels)

    def columns(self) -> list[Column]:
        return [Column(f"{self.name}_start", "date", f"first day of the period of '{self.name}' (included); "
                       "null for *"),
                Column(f"{self.name}_end", "date", f"last day of the period of '{self.name}' (included); null for *")]

    def label_meaning(self) -> str:
        return (f"'{self.name}' as released: a day YYYY-MM-DD, a month YYYY-MM, a year YYYY, or a closed "
                "range of days [YYYY-MM-DD, YYYY-MM-DD]; * = any date")

    def _period(self, label: str) -> tuple[pd.Timestamp, pd.Timestamp] | None:
        parts = split_interval(label)
        try:
            if parts is not None:
                end = pd.Timestamp(parts[1])
                return pd.Timestamp(parts[0]), end if parts[2] else end - pd.Timedelta(days=1)
            if len(label) == 4:
                start = pd.Timestamp(f"{label}-01-01")
                return start, start + pd.DateOffset(years=1) - pd.Timedelta(days=1)
            if len(label) == 7:
                start = pd.Timestamp(f"{label}-01")
                return start, start + pd.DateOffset(months=1) - pd.Timedelta(days=1)
            day = pd.Timestamp(label)
            return day, day
        except ValueError:
            return None

    def values(self, label: str) -> tuple[Any, ...]:
        period = None if label == TOP else self._period(label)
        if period is None:
            return None, None
        return period[0].strftime("%Y-%m-%d"), period[1].strftime("%Y-%m-%d")

    def levels(self) -> list[str]:
        return [*self.granularities, TOP]

    def level(self, label: str) -> int | str | None:
        if label == TOP:
            return len(self.granularities)
        if split_interval(label) is not None:
            return RANGE if self._period(label) is not None else None
        size = {10: "day", 7: "month", 4: "year"}.get(len(label))
        if size in self.granularities and self._period(label) is not None:
            return self.granularities.index(size)
        return None


class TableInterpreter(Interpreter):
    """Trees and tables: a label's level is the lowest level it appears at; ancestors from the table."""

    kind = "table"

    def __init__(self, qi: QISpec, hierarchy: TableHierarchy) -> None:
        super().__init__(qi, hierarchy)
        self.kind = qi.hierarchy.kind
        self.table = hierarchy.table
        self.height = self.table.shape[1] - 1
        names = list(getattr(qi.hierarchy, "level_names", None) or [])
        self.level_names = [names[i - 1] if i - 1 < len(names) else f"l{i}" for i in range(1, self.height)]
        self._where: dict[str, tuple[int, int]] = {}  # label -> (lowest level, a table row under it)
        for level in range(self.height, -1, -1):
            for row, label in enumerate(self.table[:, level]):
                self._where[str(label)] = (level, row)
        self._leaf_row = {str(v): i for i, v in enumerate(self.table[:, 0])}

    def columns(self) -> list[Column]:
        cols = [Column(f"{self.name}_level", "integer",
                       f"hierarchy level of '{self.name}' (0 = original value, {self.height} = *); "
                       "null for a set {a,b}")]
        for i, lvl in enumerate(self.level_names, start=1):
            cols.append(Column(f"{self.name}_{lvl}", "string",
                               f"'{self.name}' generalized to level {i} ({lvl}); null when the label is coarser"))
        return cols

    def label_meaning(self) -> str:
        return (f"'{self.name}' as released: a value of its {self.kind} hierarchy at any level, or a set "
                "{a,b} of original values; * = any value")

    def _set_row(self, members: list[str]) -> tuple[int, int] | None:
        rows = [self._leaf_row.get(m) for m in members]
        if any(r is None for r in rows):
            return None
        for level in range(self.height + 1):
            if len({self.table[r, level] for r in rows}) == 1:
                return level, rows[0]  # type: ignore[return-value]
        return None  # pragma: no cover - the top is shared

    def values(self, label: str) -> tuple[Any, ...]:
        if label == TOP:
            return (self.height, *(None,) * len(self.level_names))
        members = set_members(label)
        where = self._set_row(members) if members is not None else self._where.get(label)
        if where is None:
            return (None,) * (1 + len(self.level_names))
        level, row = where
        ancestors = tuple(str(self.table[row, i]) if i >= level else None for i in range(1, self.height))
        return (None if members is not None else level, *ancestors)

    def levels(self) -> list[str]:
        return ["value", *self.level_names, TOP]

    def level(self, label: str) -> int | str | None:
        if set_members(label) is not None:
            return SET
        where = self._where.get(label)
        return None if where is None else where[0]


class MaskInterpreter(Interpreter):
    kind = "mask"

    def __init__(self, qi: QISpec, hierarchy: MaskHierarchy) -> None:
        super().__init__(qi, hierarchy)
        self.char, self.length = hierarchy.char, hierarchy.length

    def columns(self) -> list[Column]:
        return [Column(f"{self.name}_level", "integer", f"number of masked trailing characters of '{self.name}' "
                       f"(0 = original code); null for a set {{a,b}}")]

    def label_meaning(self) -> str:
        return (f"'{self.name}' as released: a code with its last characters replaced by '{self.char}', or a "
                "set {a,b} of original codes")

    def values(self, label: str) -> tuple[Any, ...]:
        level = self.level(label)
        return (level if isinstance(level, int) else None,)

    def levels(self) -> list[str]:
        n = self.length or 0
        return ["value", *(f"{i} masked" for i in range(1, n)), "all masked"] if n else ["value", "masked", "all"]

    def level(self, label: str) -> int | str | None:
        if set_members(label) is not None:
            return SET
        if label and set(label) == {self.char}:  # fully masked, or '*' for an unknown code
            return self.length or len(label)
        return len(label) - len(label.rstrip(self.char))


def interpreter(qi: QISpec, hierarchy: Hierarchy) -> Interpreter:
    """The interpreter for one QI's hierarchy."""
    if isinstance(hierarchy, IntervalHierarchy):
        return IntervalInterpreter(qi, hierarchy)
    if isinstance(hierarchy, DateHierarchy):
        return DateInterpreter(qi, hierarchy)
    if isinstance(hierarchy, MaskHierarchy):
        return MaskInterpreter(qi, hierarchy)
    if isinstance(hierarchy, TableHierarchy):
        return TableInterpreter(qi, hierarchy)
    raise TypeError(f"no interpreter for the hierarchy of '{qi.name}'")  # pragma: no cover
