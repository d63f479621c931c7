"""Numeric interval hierarchies: nested bands over a numeric domain.

Leaves are the distinct values present in the batch; levels are bands given as nested widths,
explicit edges, or chosen automatically. The top is ``*``. The cost of a band is
(high - low) / (domain high - domain low), CG paper eq. 3 / ILS eq. 1.

Interval labels, one format for every engine (docs/stream.md "Release columns"): standard
interval notation with ``, ``. A closed interval ``[30, 39]`` includes both bounds; a half-open
one ``[30, 40)`` excludes its upper bound. Bands of an integer QI (``integer = true``) are
written closed over whole numbers (``[30, 34]`` for the band 30 <= x < 35); bands of a
real-valued QI half-open. Local-recoding engines write these bands (nested, the default: see
:mod:`core.hierarchies.nodes`), or with ``bands = "free"`` the closed hull ``[lo, hi]`` of the
values they group, or the single value when ``lo == hi``. :func:`parse_interval` also reads the
older ``[30-39]`` and ``[day..day]`` forms so that stored releases still verify.
"""

from __future__ import annotations

import itertools
import math
import re

import numpy as np
import pandas as pd

from core.contract import not_whole
from core.errors import HierarchyError, InputDataError, preview
from core.hierarchies.base import TOP, EncodedQI, Hierarchy, UnknownPolicy, factorize, unknown_error

_PLAIN_NUMBER = re.compile(r"-?\d{1,15}(?:\.\d{1,15})?")  # read alike by float() and pandas


def fmt_number(x: float) -> str:
    """A number as written in labels: whole numbers without a point, others in the shortest form
    that reads back exactly (``0.1``, not ``0.1000000000000001``)."""
    x = float(x)
    if x.is_integer() and abs(x) < 1e15:
        return str(int(x))
    text = f"{x:g}"
    return text if float(text) == x else repr(x)


def interval_label(low: object, high: object, closed: bool = True) -> str:
    """``[low, high]`` (closed) or ``[low, high)`` (half-open); a closed interval of one value is the value.

    Numbers are formatted with :func:`fmt_number`; strings (ISO dates) are written as given."""
    lo = fmt_number(low) if not isinstance(low, str) else low  # type: ignore[arg-type]
    hi = fmt_number(high) if not isinstance(high, str) else high  # type: ignore[arg-type]
    if closed and lo == hi:
        return lo
    return f"[{lo}, {hi}{']' if closed else ')'}"


def band_label(low: float, high: float, integer: bool = False) -> str:
    """Label of the band ``low <= x < high``: closed over whole numbers for an integer QI."""
    if integer and float(low).is_integer() and float(high).is_integer():
        return f"[{fmt_number(low)}, {fmt_number(high - 1)}]"
    return interval_label(low, high, closed=False)


def _split_dash(inner: str) -> tuple[str, str] | None:
    """Split legacy ``lo-hi`` where ``lo`` may itself contain a minus sign (``-5-3``, ``1e-05-2``)."""
    start = 0
    while True:
        i = inner.find("-", start + 1)
        if i < 0:
            return None
        lo, hi = inner[:i], inner[i + 1:]
        try:
            float(lo), float(hi)
            return lo, hi
        except ValueError:
            start = i


def split_interval(label: str) -> tuple[str, str, bool] | None:
    """``(low text, high text, high included)`` of an interval label, None if it is not one.

    Reads ``[a, b]``, ``[a, b)`` and the legacy ``[a-b]`` (numbers) and ``[a..b]`` (dates)."""
    if len(label) < 3 or label[0] != "[" or label[-1] not in "])":
        return None
    inner, closed = label[1:-1], label[-1] == "]"
    if ", " in inner:
        lo, hi = inner.split(", ", 1)
        return lo.strip(), hi.strip(), closed
    if not closed:
        return None
    if ".." in inner:
        lo, hi = inner.split("..", 1)
        return lo.strip(), hi.strip(), True
    parts = _split_dash(inner.replace("\u2013", "-"))
    return (parts[0].strip(), parts[1].strip(), True) if parts else None


def parse_interval(label: str) -> tuple[float, float, bool] | None:
    """Numeric ``(low, high, high included)`` of an interval label or a single number; None otherwise."""
    parts = split_interval(label)
    try:
        if parts is None:
            v = float(label)
            return (v, v, True) if label.strip() not in ("", "nan", "inf", "-inf") else None
        return float(parts[0]), float(parts[1]), parts[2]
    except ValueError:
        return None


def to_numeric(name: str, values: pd.Series) -> np.ndarray:
    """Convert a column to float, failing with the first few non-numeric values."""
    num = pd.to_numeric(values, errors="coerce")
    bad = num.isna() & values.notna()
    if bad.any() or num.isna().any():
        shown = values[bad].astype(str).unique().tolist() or ["<missing>"]
        raise InputDataError(f"column '{name}' is numeric but has non-numeric values: {preview(shown)}")
    return num.to_numpy(dtype=np.float64)


def nice_width(span: float, bins: int = 16) -> float:
    raw = max(span / bins, 1e-12)
    exp = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 5, 10):
        if m * exp >= raw:
            return float(m * exp)
    return float(10 * exp)


class IntervalHierarchy(Hierarchy):
    def __init__(
        self,
        name: str,
        *,
        widths: tuple[float, ...] | None = None,
        edges: tuple[tuple[float, ...], ...] | None = None,
        auto: int | None = None,
        domain: tuple[float, float] | None = None,
        integer: bool = False,
    ) -> None:
        super().__init__(name)
        self.widths, self.edges, self.auto, self.domain = widths, edges, auto, domain
        self.integer = integer
        if edges is not None:
            for lvl, cut in enumerate(edges):
                if list(cut) != sorted(set(cut)) or len(cut) < 2:
                    raise HierarchyError(f"'{name}': edges of level {lvl + 1} must be increasing",
                                         reason="invalid-hierarchy")
            for fine, coarse in itertools.pairwise(edges):
                if not set(coarse) <= set(fine) or coarse[0] != fine[0] or coarse[-1] != fine[-1]:
                    raise HierarchyError(
                        f"'{name}': each level's edges must be a subset of the level below, with the same ends",
                        reason="invalid-hierarchy",
                    )

    def _domain(self, x: np.ndarray) -> tuple[float, float]:
        if self.domain is not None:
            return float(self.domain[0]), float(self.domain[1])
        if self.edges is not None:
            return float(self.edges[0][0]), float(self.edges[0][-1])
        lo, hi = float(x.min()), float(x.max())
        return lo, hi if hi > lo else lo + 1.0

    def _bands(self, x: np.ndarray, dom: tuple[float, float]) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per level above the leaves, the (low, high) band of each leaf value."""
        out = []
        if self.edges is not None:
            for cut in self.edges:
                c = np.asarray(cut, dtype=float)
                idx = np.clip(np.searchsorted(c, x, side="right") - 1, 0, len(c) - 2)
                out.append((c[idx], c[idx + 1]))
            return out
        widths = self.widths
        if widths is None:
            base = nice_width(dom[1] - dom[0])
            widths = tuple(base * 2**i for i in range(self.auto or 4))
        origin = math.floor(dom[0] / widths[-1]) * widths[-1]
        for w in widths:
            low = origin + np.floor((x - origin) / w) * w
            out.append((low, low + w))
        return out

    def check_value(self, value: str, unknown: UnknownPolicy = "error") -> None:
        """:meth:`check` of one plain decimal (``34``, ``-2.5``) without a pandas column; any other text
        takes the column path, whose numeric parsing is the reference."""
        if _PLAIN_NUMBER.fullmatch(value) is None:
            self.check(pd.Series([value]), unknown)
            return
        x = float(value)
        if self.integer and not x.is_integer():
            raise InputDataError(f"column '{self.name}' takes whole numbers but has: {preview([value])}",
                                 reason="not-a-whole-number")
        if unknown == "error" and (self.domain is not None or self.edges is not None):
            lo, hi = self._domain(np.array([x]))
            if x < lo or x > hi or (self.edges is not None and x >= hi):
                raise unknown_error(self.name, [fmt_number(x)])

    def encode(self, values: pd.Series, unknown: UnknownPolicy = "error") -> EncodedQI:
        row_code, distinct = factorize(values)
        raw = to_numeric(self.name, pd.Series(distinct))  # one conversion per distinct value
        if self.integer and not_whole(raw).any():
            shown = pd.Series(distinct)[not_whole(raw)].astype(str).tolist()
            raise InputDataError(f"column '{self.name}' takes whole numbers but has: {preview(shown)}",
                                 reason="not-a-whole-number")
        dom = self._domain(raw)
        outside = (raw < dom[0]) | (raw > dom[1]) if (self.domain or self.edges) else np.zeros(len(raw), bool)
        if self.edges is not None:
            outside |= raw >= dom[1]
        if outside.any() and unknown == "error":
            raise unknown_error(self.name, [fmt_number(v) for v in raw[outside]])
        leaves, distinct_leaf = np.unique(raw, return_inverse=True)
        codes = distinct_leaf.ravel()[row_code]
        inside_leaf = np.ones(len(leaves), bool)
        if outside.any():
            inside_leaf[np.unique(distinct_leaf.ravel()[outside])] = False
        span = dom[1] - dom[0]
        maps = [np.arange(len(leaves), dtype=np.int32)]
        labels = [np.array([fmt_number(v) for v in leaves], dtype=object)]
        lows, highs = [leaves.copy()], [leaves.copy()]
        costs = [np.where(inside_leaf, 0.0, 1.0)]
        for lo, hi in self._bands(leaves, dom):
            lab = np.array([band_label(a, b, self.integer) if ok else TOP
                            for a, b, ok in zip(lo, hi, inside_leaf, strict=True)], dtype=object)
            m, uniq = pd.factorize(pd.Series(lab), sort=False)
            first = np.unique(m, return_index=True)[1]
            maps.append(m.astype(np.int32))
            labels.append(np.asarray(uniq, dtype=object))
            lows.append(lo[first])
            highs.append(hi[first])
            c = np.minimum((hi[first] - lo[first]) / span, 1.0)
            costs.append(np.where(inside_leaf[first], c, 1.0))
        maps.append(np.zeros(len(leaves), dtype=np.int32))
        labels.append(np.array([TOP], dtype=object))
        lows.append(np.array([dom[0]]))
        highs.append(np.array([dom[1]]))
        costs.append(np.ones(1))
        under = tuple(np.bincount(m, minlength=len(lbl)) for m, lbl in zip(maps, labels, strict=True))
        return EncodedQI(
            name=self.name, kind="numeric", codes=codes.astype(np.int32), maps=tuple(maps), labels=tuple(labels),
            cost=tuple(costs), leaves_under=under, leaf_values=leaves, low=tuple(lows), high=tuple(highs),
            domain=dom,
        )

    def covers(self, label: str, value: object) -> bool:
        if label == TOP:
            return True
        try:
            v = float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return False
        parsed = parse_interval(label)
        if parsed is None:
            return False
        lo, hi, closed = parsed
        return lo <= v <= hi if closed else (lo <= v < hi or (lo == hi and v == lo))


def range_label(low: float, high: float) -> str:
    """Closed range ``[low, high]`` used by local-recoding engines (Mondrian, ILS, CG); one value when equal."""
    return interval_label(low, high, closed=True)
