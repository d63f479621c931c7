"""Each column of a table factorized once, its codes carried with the frame (docs/performance.md).

A batch run reads a table, anonymizes it and reports on the input and the release; every step needs
the same thing from a string column: per row a code into its distinct values. :class:`Codes` is that
(exactly ``pd.factorize(values, use_na_sentinel=True)``: codes by first appearance, -1 for a missing
value) and :class:`TableCodes` holds it for the columns of one frame. The frame's producer attaches
them (:func:`attach`: the reader to the input, the batch run to the engine's rows and to the typed
table) and each step asks :func:`codes_of` instead of factorizing the column again.

The codes belong to the very frame they were attached to: a frame derived from it (a selection, a
copy) does not carry them (pandas deep-copies ``attrs``; a copy of a :class:`TableCodes` is empty), and
they are refused if the frame's index was replaced. A frame carrying codes must not be changed in
place; the batch run consumes its frames.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pandas as pd

KEY = "codes"


@dataclass(frozen=True, eq=False)
class Codes:
    """One column factorized: ``codes`` (per row, -1: missing) into ``uniques`` (by first appearance)."""

    codes: np.ndarray
    uniques: np.ndarray

    @classmethod
    def of(cls, values: pd.Series | np.ndarray) -> Codes:
        """``pd.factorize(values, use_na_sentinel=True)`` as :class:`Codes` (uniques as an object array; the
        codes as int32, half pandas' size, when they fit)."""
        codes, uniques = pd.factorize(values, use_na_sentinel=True)
        return cls(_narrow(codes), np.asarray(uniques, dtype=object))

    @classmethod
    def renumbered(cls, codes: np.ndarray, uniques: np.ndarray) -> Codes:
        """The codes of a column whose rows hold ``uniques[codes]`` (-1: missing; ``uniques`` may repeat a
        value, list values no row holds, in any order): renumbered by first appearance, as :meth:`of` the
        column would give them. Integers are factorized, never the values."""
        new, old = pd.factorize(np.asarray(codes))  # an integer -1 is a value here, not a missing one
        new, old = _narrow(new), np.asarray(old, dtype=np.intp)
        if (old < 0).any():  # the missing rows: -1 again, the codes after theirs one lower
            j = int(np.flatnonzero(old < 0)[0])
            remap = np.arange(len(old)) - (np.arange(len(old)) > j)
            remap[j] = -1
            new, old = remap[new], np.delete(old, j)
        kept = np.asarray(uniques, dtype=object)[old]
        if len(pd.unique(kept)) < len(kept):  # one value under two codes: merge them
            merged, values = pd.factorize(kept, use_na_sentinel=True)
            return cls(_narrow(np.where(new < 0, -1, merged[new])), np.asarray(values, dtype=object))
        return cls(new, kept)

    def __len__(self) -> int:
        return len(self.codes)

    @property
    def size(self) -> int:
        """How many distinct values (missing not counted)."""
        return len(self.uniques)

    @cached_property
    def missing(self) -> bool:
        """True if some row is missing (code -1)."""
        return bool(len(self.codes)) and bool((self.codes < 0).any())

    @cached_property
    def text(self) -> bool:
        """True if every distinct value is a ``str`` (so ``astype(str)`` keeps every value as it is)."""
        return bool(len(self.uniques)) and pd.api.types.infer_dtype(self.uniques, skipna=False) == "string"

    @property
    def clean(self) -> bool:
        """Text and no missing value: the column, its ``astype(str)`` and its ``astype(object)`` factorize alike."""
        return self.text and not self.missing

    def take(self, positions: np.ndarray) -> Codes:
        """The codes of the rows at ``positions`` (renumbered by their first appearance there)."""
        return Codes.renumbered(self.codes[positions], self.uniques)

    def sorted_codes(self) -> np.ndarray:
        """``pd.factorize(values, sort=True)[0]`` of a clean column: codes by the values' sorted order."""
        rank = np.empty(self.size, dtype=np.intp)
        rank[np.argsort(self.uniques, kind="stable")] = np.arange(self.size)  # str order, as pandas sorts them
        return rank[self.codes]


def _narrow(codes: np.ndarray) -> np.ndarray:
    """Codes as int32 when every one fits (a column has fewer than 2**31 distinct values)."""
    return codes.astype(np.int32, copy=False) if len(codes) < 2**31 else codes


@dataclass(frozen=True, eq=False)
class TableCodes:
    """The :class:`Codes` of some columns of one frame, and that frame's ``index``."""

    index: pd.Index
    columns: dict[str, Codes] = field(default_factory=dict)

    @classmethod
    def of(cls, frame: pd.DataFrame, columns: Iterable[str]) -> TableCodes:
        """Factorize each of ``columns`` of ``frame`` (codes it already carries are kept)."""
        return cls(frame.index, {c: codes_of(frame, c) for c in columns})

    def __deepcopy__(self, memo: dict[int, object]) -> TableCodes:
        return _DETACHED  # a derived frame does not carry its parent's codes

    def __copy__(self) -> TableCodes:
        return _DETACHED


_DETACHED = TableCodes(pd.RangeIndex(0))


def attach(frame: pd.DataFrame, codes: TableCodes) -> pd.DataFrame:
    """Let ``frame`` carry ``codes`` (computed from it); returns the frame."""
    if codes.index is not frame.index:
        raise ValueError("codes attached to a frame must be computed from it (same index)")
    frame.attrs[KEY] = codes
    return frame


def carried(frame: pd.DataFrame, column: str) -> Codes | None:
    """The codes ``frame`` carries for ``column``, if any (see the module's note)."""
    held = frame.attrs.get(KEY)
    if not isinstance(held, TableCodes) or held.index is not frame.index or column not in held.columns:
        return None
    got = held.columns[column]
    return got if len(got) == len(frame) else None


def codes_of(frame: pd.DataFrame, column: str) -> Codes:
    """The codes of ``frame[column]``: those the frame carries, else factorized now."""
    got = carried(frame, column)
    return got if got is not None else Codes.of(frame[column])


def class_key(columns: Iterable[tuple[np.ndarray, int]], n: int) -> np.ndarray:
    """Per row, the id (0..m-1, by first appearance) of its combination of values over ``columns``, each
    given as its codes (-1: missing, a value of its own) and its number of distinct values; no columns:
    every row 0. Only integers are factorized (once per column at most, when the key would overflow)."""
    key = np.zeros(n, dtype=np.int64)
    radix = 1
    for codes, count in columns:
        size = max(count, 1)
        if len(codes) and (codes < 0).any():
            codes, size = np.where(codes < 0, count, codes), count + 1
        if radix * size >= 2**62:  # compress the key so far before it overflows
            key = pd.factorize(key)[0].astype(np.int64, copy=False)
            radix = int(key.max()) + 1
        key += np.multiply(codes, radix, dtype=np.int64)  # one temporary array per column, not two
        radix *= size
    return pd.factorize(key)[0].astype(np.int64, copy=False)
