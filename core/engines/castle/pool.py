"""CASTLE's two sets of clusters as arrays: the open clusters (Gamma) and the published ones (Omega).

Open clusters live in slots of growable arrays ``lo``, ``hi``, ``lvl`` (see :mod:`.space`) so that a
tuple is compared with all of them in one kernel call; their members and their counts of persons and
sensitive values are Python records (:class:`Open`). Published clusters are a ring of the last
``omega_max`` generalisations (levels and codes per QI) with their loss and cluster id.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable
from dataclasses import dataclass, field

import numpy as np

from core.engines.castle.kernels import cover_best, join_il, join_il_lca, join_one
from core.engines.castle.space import HULL_EPS, Space


@dataclass
class Open:
    """An open (not yet k_s-anonymized) cluster's members (tuple ids) and counts."""

    members: list[Hashable] = field(default_factory=list)
    pids: Counter = field(default_factory=Counter)
    sens: Counter = field(default_factory=Counter)


class OpenPool:
    """The open clusters: slot arrays plus one :class:`Open` per used slot."""

    def __init__(self, space: Space, capacity: int = 64) -> None:
        self.space = space
        d = space.d
        self.lo = np.zeros((capacity, d), np.int32)
        self.hi = np.zeros((capacity, d), np.int32)
        self.lvl = np.zeros((capacity, d), np.int32)
        self.il = np.zeros(capacity)
        self.active = np.zeros(capacity, np.bool_)
        self.born = np.zeros(capacity, np.int64)  # creation order: ties go to the oldest cluster
        self.size = np.zeros(capacity, np.int64)  # member tuples
        self.created = 0
        self.open: list[Open | None] = [None] * capacity
        self.free: list[int] = list(range(capacity - 1, -1, -1))

    @property
    def count(self) -> int:
        return len(self.open) - len(self.free)

    def slots(self) -> list[int]:
        return [i for i, c in enumerate(self.open) if c is not None]

    def get(self, slot: int) -> Open:
        c = self.open[slot]
        assert c is not None, "no open cluster in this slot"
        return c

    def new(self, x: np.ndarray) -> int:
        """A new cluster holding the single generalisation of tuple ``x`` (no members yet)."""
        if not self.free:
            cap = len(self.active)
            self.lo, self.hi, self.lvl = (np.concatenate([a, np.zeros_like(a)]) for a in (self.lo, self.hi, self.lvl))
            self.il = np.concatenate([self.il, np.zeros(cap)])
            self.active = np.concatenate([self.active, np.zeros(cap, np.bool_)])
            self.born = np.concatenate([self.born, np.zeros(cap, np.int64)])
            self.size = np.concatenate([self.size, np.zeros(cap, np.int64)])
            self.open.extend([None] * cap)
            self.free = list(range(2 * cap - 1, cap - 1, -1))
        slot = self.free.pop()
        self.active[slot] = True
        self.open[slot] = Open()
        self.lo[slot] = self.hi[slot] = x
        self.lvl[slot] = 0
        self.il[slot] = 0.0
        self.born[slot] = self.created
        self.size[slot] = 0
        self.created += 1
        return slot

    def oldest(self, candidates: np.ndarray) -> int:
        """The slot among ``candidates`` whose cluster was opened first (independent of slot reuse)."""
        return int(candidates[np.argmin(self.born[candidates])])

    def drop(self, slot: int) -> None:
        self.active[slot] = False
        self.open[slot] = None
        self.free.append(slot)

    def join_costs(self, xlo: np.ndarray, xhi: np.ndarray, xlvl: np.ndarray) -> np.ndarray:
        """Loss of every open cluster joined with the cluster ``(xlo, xhi, xlvl)`` (+inf for free slots)."""
        sp = self.space
        return join_il_lca(self.lo, self.hi, self.lvl, self.active, xlo, xhi, xlvl, sp.maps, sp.leafcost, sp.tree,
                           sp.ordered, sp.vals, sp.weights, HULL_EPS)

    def enlarge(self, slot: int, xlo: np.ndarray, xhi: np.ndarray, xlvl: np.ndarray) -> None:
        """Grow ``slot``'s generalisation to cover ``(xlo, xhi, xlvl)`` and update its loss."""
        join_one(self.lo[slot], self.hi[slot], self.lvl[slot], xlo, xhi, xlvl, self.space.maps, self.space.ordered)
        self.il[slot] = self.loss_of(self.lo[slot], self.hi[slot], self.lvl[slot])

    def loss_of(self, lo: np.ndarray, hi: np.ndarray, lvl: np.ndarray) -> float:
        """Loss of the generalisation ``(lo, hi, lvl)`` (d,)."""
        sp = self.space
        return float(join_il(lo[None, :], hi[None, :], lvl[None, :], np.ones(1, np.bool_), lo, hi, lvl, sp.maps,
                             sp.cost, sp.ordered, sp.vals, sp.weights, HULL_EPS)[0])


class Published:
    """The ring of the last ``size`` published clusters (Omega, bounded as Prink's zeta)."""

    def __init__(self, space: Space, size: int) -> None:
        self.space, self.size = space, size
        n, d = max(size, 1), space.d
        self.lvl = np.zeros((n, d), np.int32)
        self.code = np.zeros((n, d), np.int32)
        self.loss = np.full(n, np.inf)
        self.valid = np.zeros(n, np.bool_)
        self.ids = np.full(n, -1, np.int64)
        self.count = 0

    def add(self, cid: int, nodes: np.ndarray, loss: float) -> None:
        if self.size <= 0:
            return
        j = self.count % self.size
        self.lvl[j], self.code[j] = nodes[:, 0], nodes[:, 1]
        self.loss[j], self.valid[j], self.ids[j] = loss, True, cid
        self.count += 1

    def best_cover(self, x: np.ndarray) -> int:
        """Slot of the least-loss published cluster covering tuple ``x``, or -1."""
        if self.count == 0 or self.size <= 0:
            return -1
        return int(cover_best(self.lvl, self.code, self.loss, self.valid, self.ids, x, self.space.maps))

    def nodes(self, j: int) -> np.ndarray:
        return np.stack([self.lvl[j], self.code[j]], axis=1).astype(np.int64)
