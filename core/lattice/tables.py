"""Cached class tables of lattice nodes, and the choice of the cheapest table to roll up from.

A class table of node ``v`` lists the distinct rows of the batch generalized to ``v`` (QI codes,
then the sensitive code when the requirement needs it) with their counts. Any node ``u <= v``
(component-wise) can be rolled up to ``v``, so evaluating ``v`` costs one pass over the smallest
cached table below it. :class:`TableCache` keeps the tables in insertion order, evicts the oldest
beyond a cell budget, and answers "smallest cached table below ``v``" with one vectorized
comparison against the matrix of cached nodes.

:func:`projection_table` builds the table of a node whose QIs are all at the top except a few
at their leaves (Incognito's projections) with one dense ``bincount`` over the bottom table,
instead of a hashed roll-up of every distinct row.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

MAX_KEY = 2**62  # combined class keys stay below this (int64 with headroom)
_BIG = np.iinfo(np.int64).max
_MAX_DENSE = 1 << 22  # dense key space limit for projection tables (cells of one bincount)


class TableCache:
    """Class tables by node, with a bounded number of int32 cells (oldest evicted first)."""

    def __init__(self, d: int, max_cells: int) -> None:
        self.max_cells, self.cells = max_cells, 0
        self.tables: dict[tuple[int, ...], tuple[np.ndarray, np.ndarray]] = {}
        self.slot: dict[tuple[int, ...], int] = {}
        self.nodes = np.zeros((64, d), np.int64)
        self.rows = np.full(64, _BIG, np.int64)  # table rows per slot; _BIG marks a free slot
        self.free: list[int] = list(range(63, -1, -1))

    def __contains__(self, node: tuple[int, ...]) -> bool:
        return node in self.tables

    def get(self, node: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray] | None:
        return self.tables.get(node)

    def add(self, node: tuple[int, ...], tab: np.ndarray, cnt: np.ndarray) -> None:
        if node in self.tables:
            return
        if not self.free:
            grow = len(self.rows)
            self.nodes = np.concatenate([self.nodes, np.zeros_like(self.nodes)])
            self.rows = np.concatenate([self.rows, np.full(grow, _BIG, np.int64)])
            self.free = list(range(2 * grow - 1, grow - 1, -1))
        s = self.free.pop()
        self.nodes[s], self.rows[s] = node, len(cnt)
        self.slot[node] = s
        self.tables[node] = (tab, cnt)
        self.cells += tab.size
        while self.cells > self.max_cells and len(self.tables) > 1:
            old = next(iter(self.tables))
            old_tab, _ = self.tables.pop(old)
            self.cells -= old_tab.size
            s = self.slot.pop(old)
            self.rows[s] = _BIG
            self.free.append(s)

    def below(self, node: tuple[int, ...], limit: int) -> tuple[tuple[int, ...], np.ndarray, np.ndarray] | None:
        """The cached table with the fewest rows (and fewer than ``limit``) of a node <= ``node``."""
        if not self.slot:
            return None
        ok = (self.nodes <= np.asarray(node, np.int64)).all(axis=1)
        rows = np.where(ok, self.rows, _BIG)
        s = int(rows.argmin())
        if rows[s] >= limit:
            return None
        src = tuple(int(x) for x in self.nodes[s])
        tab, cnt = self.tables[src]
        return src, tab, cnt


def projection_table(bottom: np.ndarray, counts: np.ndarray, attrs: list[int], sizes: list[int],
                     extra: int) -> tuple[np.ndarray, np.ndarray] | None:
    """Table of the node with QIs ``attrs`` at their leaves and every other QI at the top.

    ``bottom`` is the (m, w) table of distinct rows (leaf codes, then ``extra`` carried columns
    such as the sensitive code); ``sizes`` are the code counts of ``attrs`` then of the carried
    columns. Every top level has a single code (0). Returns None when the dense key space is too
    large (the caller then rolls up instead).
    """
    d = bottom.shape[1] - extra
    cols = [*attrs, *range(d, d + extra)]
    space = int(np.prod(np.asarray(sizes, dtype=np.float64)))
    if space > _MAX_DENSE:
        return None
    key = np.zeros(len(counts), np.int64)
    radix = 1
    for c, size in zip(cols, sizes, strict=True):
        key += bottom[:, c].astype(np.int64) * radix
        radix *= size
    total = np.bincount(key, weights=counts, minlength=radix)
    present = np.flatnonzero(total)
    tab = np.zeros((len(present), bottom.shape[1]), np.int32)
    radix = 1
    for c, size in zip(cols, sizes, strict=True):
        tab[:, c] = (present // radix) % size
        radix *= size
    return tab, np.rint(total[present]).astype(np.int64)


def distinct_rows(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct rows of a non-negative int matrix: (rows, counts, inverse)."""
    if matrix.shape[1] == 0:
        return matrix[:1], np.array([len(matrix)]), np.zeros(len(matrix), np.int64)
    key = np.zeros(len(matrix), dtype=np.int64)
    radix = 1
    for col in matrix.T:
        size = int(col.max()) + 1
        if radix * size >= MAX_KEY:  # key would overflow: fall back to a row-wise sort
            uniq, inverse, counts = np.unique(matrix, axis=0, return_inverse=True, return_counts=True)
            return uniq, counts, inverse.ravel()
        key += col.astype(np.int64) * radix
        radix *= size
    # Hash factorization (first-appearance order) instead of a sort: O(n), deterministic.
    inverse, uniq = pd.factorize(key)
    first = np.empty(len(uniq), np.int64)
    first[inverse] = np.arange(len(key))  # any row of a key will do: they are equal
    return matrix[first], np.bincount(inverse, minlength=len(uniq)), inverse.astype(np.int64, copy=False)


def combined_classes(codes: list[np.ndarray], sizes: list[int], m: int) -> tuple[np.ndarray, int]:
    """Class id of each of ``m`` rows by its codes (``codes[a]`` of QI a, ``sizes[a]`` codes), and the id space.

    The numpy path: the codes combine into one mixed-radix key (re-factorized whenever the next QI
    would overflow it); a sparse key space is factorized to dense ids (first appearance, whatever the
    key's integer type). The key is int32 when the whole key space fits it (Adult's always does): its
    arithmetic and ``pd.factorize`` take about half the time they take on int64.
    """
    space = 1
    for nc in sizes:
        space *= int(nc)
    dtype = np.int32 if space < 2**31 else np.int64
    key: np.ndarray | None = None
    term = np.empty(m, dtype=dtype)  # one QI's share of the key, written in place
    radix = 1
    for code, nc in zip(codes, sizes, strict=True):
        if nc == 1:
            continue
        if key is None:  # the first QI's codes are the key
            key, radix = code.astype(dtype), nc
            continue
        if radix * nc >= MAX_KEY:  # (int64 keys only)
            key, uniq = pd.factorize(key)
            key, radix = key.astype(np.int64), len(uniq)
        np.multiply(code, dtype(radix), out=term, casting="same_kind")  # below the key space: never wraps
        key += term
        radix *= nc
    if key is None:  # every QI has one code: one class
        return np.zeros(m, dtype=np.int64), 1
    if radix <= 4 * m + 1024:
        return key.astype(np.int64, copy=False), radix
    cls, uniq = pd.factorize(key)
    return cls.astype(np.int64, copy=False), len(uniq)
