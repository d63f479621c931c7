"""Dominance, box-dominance and the bounded archive of representative minimal PBGs (PBG paper §5).

All vectors here are *oriented*: each quality index is multiplied by its direction (+1 maximize,
-1 minimize), so "larger is better" in every coordinate and the paper's definitions apply as
written.

* ``a`` dominates ``b``: a >= b everywhere and a > b somewhere (§4.2).
* box of a value vector (raw, not oriented) v with discretization eps: floor(v / eps); the box is
  oriented like the values before boxes are compared.
* ``a`` box-dominates ``b``: box(a) dominates box(b) if the boxes differ, else a dominates b (§5).

GUARANTEE of :class:`Archive` (Algorithm 1, Theorems 1-2): after any sequence of updates the
archive holds only mutually non-box-dominated members, at most one per box, every member is
non-dominated (plain dominance) among all candidates offered so far, and its size never exceeds
:func:`theorem2_bound`.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from math import floor, prod

import numpy as np


def dominates(a: np.ndarray, b: np.ndarray) -> bool:
    """Plain dominance on oriented vectors."""
    return bool((a >= b).all() and (a > b).any())


def dominance_matrix(vals: np.ndarray) -> np.ndarray:
    """``M[i, j]`` is True when row i dominates row j (oriented rows)."""
    ge = (vals[:, None, :] >= vals[None, :, :]).all(axis=2)
    gt = (vals[:, None, :] > vals[None, :, :]).any(axis=2)
    return ge & gt


def boxes(raw: np.ndarray, eps: np.ndarray) -> np.ndarray:
    """Box coordinates floor(v / eps) of raw (not oriented) value vectors, as int64."""
    return np.floor(np.asarray(raw, dtype=np.float64) / eps + 1e-9).astype(np.int64)


def box_dominates(a: np.ndarray, box_a: np.ndarray, b: np.ndarray, box_b: np.ndarray) -> bool:
    """Box-dominance on oriented values and oriented boxes."""
    if (box_a == box_b).all():
        return dominates(a, b)
    return dominates(box_a, box_b)


def box_counts(upper: Sequence[float], eps: Sequence[float], lower: Sequence[float] | None = None) -> list[int]:
    """Number of box coordinates per dimension for values in [lower, upper] (default lower 0)."""
    lo = lower or [0.0] * len(upper)
    return [floor(u / e + 1e-9) - floor(low / e + 1e-9) + 1 for u, low, e in zip(upper, lo, eps, strict=True)]


def theorem2_bound(upper: Sequence[float], eps: Sequence[float], lower: Sequence[float] | None = None,
                   tight: bool = False) -> int:
    """Theorem 2: |A| <= prod_{i=1}^{r-1} b_i, b_i the i-th largest number of boxes per dimension.

    INTERPRETATION: b_i counts box coordinates (floor(K/eps) + 1, values may be 0) rather than
    K/eps. The proof's clustering works along any one dimension, so leaving out the *largest*
    b_i gives an equally valid, tighter bound (``tight=True``); the paper's statement leaves out
    the smallest.
    """
    b = sorted(box_counts(upper, eps, lower), reverse=True)
    if len(b) <= 1:
        return 1
    return prod(b[1:]) if tight else prod(b[:-1])


class Archive:
    """Algorithm 1: the updater using box-dominance. Members are (key, raw values, payload)."""

    def __init__(self, eps: Sequence[float] | np.ndarray, directions: Sequence[int] | np.ndarray) -> None:
        self.eps = np.asarray(eps, dtype=np.float64)
        self.dirs = np.asarray(directions, dtype=np.int64)
        if (self.eps <= 0).any():
            raise ValueError("every discretization value must be > 0")
        r = len(self.eps)
        self.vals = np.zeros((0, r))  # oriented values
        self.box = np.zeros((0, r), dtype=np.int64)  # oriented boxes
        self.keys: list[Hashable] = []
        self.payload: list[object] = []

    def __len__(self) -> int:
        return len(self.keys)

    def orient(self, raw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        raw = np.asarray(raw, dtype=np.float64)
        return raw * self.dirs, boxes(raw, self.eps) * self.dirs

    def update(self, key: Hashable, raw: np.ndarray, payload: object = None) -> bool:
        """Offer a candidate; returns True if it entered the archive."""
        v, b = self.orient(raw)
        if not self.keys:
            self._append(key, v, b, payload)
            return True
        same = (self.box == b).all(axis=1)
        cand_dom_val = (v >= self.vals).all(axis=1) & (v > self.vals).any(axis=1)
        cand_dom_box = (b >= self.box).all(axis=1) & (b > self.box).any(axis=1)
        s_dominate = np.where(same, cand_dom_val, cand_dom_box)  # step 2
        if s_dominate.any():  # step 3
            keep = ~s_dominate
            self.vals, self.box, same = self.vals[keep], self.box[keep], same[keep]
            self.keys = [k for k, f in zip(self.keys, keep, strict=True) if f]
            self.payload = [p for p, f in zip(self.payload, keep, strict=True) if f]
        mem_dom_val = (self.vals >= v).all(axis=1) & (self.vals > v).any(axis=1)
        mem_dom_box = (self.box >= b).all(axis=1) & (self.box > b).any(axis=1)
        s_dominated = np.where(same, mem_dom_val, mem_dom_box)  # step 4
        if not s_dominated.any() and not same.any():  # steps 5-6
            self._append(key, v, b, payload)
            return True
        return False

    def rejects(self, raw: np.ndarray) -> np.ndarray:
        """Whether :meth:`update` would reject each raw vector (a row of ``raw``) now, without
        changing the archive; a 1-D ``raw`` gives a 0-d array.

        A candidate is rejected when a member box-dominates it or shares its box without being
        dominated by it. Rejection is monotone: if a vector is rejected, so is every vector that
        is no better in any coordinate (its box is the same or box-dominated), which is what
        pruning on an optimistic bound relies on.
        """
        raw = np.asarray(raw, dtype=np.float64)
        flat = raw.ndim == 1
        v, b = self.orient(raw.reshape(-1, len(self.eps)))
        if not self.keys:
            out = np.zeros(len(v), dtype=bool)
            return out[0] if flat else out
        vm, bm = self.vals[None, :, :], self.box[None, :, :]
        vc, bc = v[:, None, :], b[:, None, :]
        same = (bm == bc).all(axis=2)
        mem_dom_val = (vm >= vc).all(axis=2) & (vm > vc).any(axis=2)
        mem_dom_box = (bm >= bc).all(axis=2) & (bm > bc).any(axis=2)
        cand_dom_val = (vc >= vm).all(axis=2) & (vc > vm).any(axis=2)
        out = (np.where(same, mem_dom_val, mem_dom_box) | (same & ~cand_dom_val)).any(axis=1)
        return out[0] if flat else out

    def _append(self, key: Hashable, v: np.ndarray, b: np.ndarray, payload: object) -> None:
        self.vals = np.vstack([self.vals, v[None, :]])
        self.box = np.vstack([self.box, b[None, :]])
        self.keys.append(key)
        self.payload.append(payload)

    def raw_values(self) -> np.ndarray:
        return self.vals * self.dirs
