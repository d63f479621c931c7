"""Monotone regions of the lattice: the nodes below (or above) a set of member nodes.

Branch and bound asks, for every node it pops, "is this node below a recorded infeasible node?"
and "is it above a node with no suppression?". :class:`NodeSet` answers both.

* Up to ``_MAX_BITMAP`` lattice nodes (and with the lattice's heights) the region is an array over
  the lattice holding, per node, the member that added it last: one lookup.
* Otherwise (wide lattices: Cargo at 12 QIs has 6^12 nodes) the members are indexed per QI and
  level by bitsets (Python ints, bit i = the i-th member added): ``ge[a][l]`` holds the members
  whose level of QI a is at least ``l``. "Some member above ``v``" is the AND of one bitset per QI,
  so a query costs d big-int ANDs over the members instead of a scan of a (members x d) matrix
  (which made the check quadratic in the number of members). Members dominated by a new member are
  dropped from ``alive``.

Which member a query returns matters to the search, not to its result: branch and bound jumps
past the box between the popped node and that member, queueing one node per QI the member has
below the top. A downward set that knows the heights therefore returns, among the members above
the node, one with the fewest QIs below the top (then the one added first): on Cargo at 11 QIs
this pops 162,337 nodes instead of 206,177 with the first member added. An upward set returns
the surviving member added first (the same member as a scan of the members in insertion order).
"""

from __future__ import annotations

import numpy as np

_MAX_BITMAP = 1 << 22  # lattice nodes up to which a NodeSet keeps its region as an array (16 MB)


class NodeSet:
    """A monotone region of the lattice (the nodes below, or if ``upward`` above, its members).

    With the lattice's ``heights`` (and at most ``max_bitmap`` nodes, by default ``_MAX_BITMAP``)
    the region is an array over the lattice holding, per node, the member that added it last:
    ``covers`` and ``cover`` are one lookup. Otherwise the maximal (minimal) members are indexed by
    per-QI bitsets (see the module).
    """

    def __init__(self, d: int, upward: bool, heights: np.ndarray | None = None,
                 max_bitmap: int | None = None) -> None:
        self.d, self.upward = d, upward
        self.members: list[tuple[int, ...]] = []  # every member added, by bit number
        self.alive = 0  # members not dominated by a later one
        self.ge: list[list[int]] = [[] for _ in range(d)]  # ge[a][l]: members with level >= l on QI a
        self.owner: np.ndarray | None = None
        self.top = None if heights is None else tuple(int(h) for h in heights)
        self.by_free: list[int] = [0] * (d + 1)  # by_free[c]: members with c QIs below the top
        limit = _MAX_BITMAP if max_bitmap is None else max_bitmap
        if heights is not None and int(np.prod(np.asarray(heights, np.float64) + 1)) <= limit:
            self.owner = np.full(tuple(int(h) + 1 for h in heights), -1, dtype=np.int32)

    def copy(self) -> NodeSet:
        out = NodeSet(self.d, self.upward)
        out.members, out.alive, out.ge = list(self.members), self.alive, [list(g) for g in self.ge]
        out.top, out.by_free = self.top, list(self.by_free)
        out.owner = None if self.owner is None else self.owner.copy()
        return out

    def covers(self, node: tuple[int, ...]) -> bool:
        return self.cover(node) is not None

    def cover(self, node: tuple[int, ...]) -> tuple[int, ...] | None:
        """A member that dominates ``node`` (above it, or below it if ``upward``), or None.

        Bitset index: for a downward set with heights, a member with the fewest QIs below the top
        (then the first added); otherwise the surviving member added first."""
        if self.owner is not None:
            i = int(self.owner[node])
            return self.members[i] if i >= 0 else None
        hits = self._below(node) if self.upward else self._above(node)
        if hits and self.top is not None and not self.upward:
            for group in self.by_free:
                if hits & group:
                    hits &= group
                    break
        return self.members[(hits & -hits).bit_length() - 1] if hits else None

    def _above(self, node: tuple[int, ...]) -> int:
        """Bitset of the alive members ``m >= node``."""
        acc = self.alive
        for ge, v in zip(self.ge, node, strict=True):
            if v >= len(ge):
                return 0
            acc &= ge[v]
            if not acc:
                return 0
        return acc

    def _below(self, node: tuple[int, ...]) -> int:
        """Bitset of the alive members ``m <= node``."""
        acc = self.alive
        for ge, v in zip(self.ge, node, strict=True):
            if v + 1 < len(ge):
                acc &= ~ge[v + 1]
                if not acc:
                    return 0
        return acc

    def add(self, node: tuple[int, ...]) -> None:
        node = tuple(map(int, node))
        if self.owner is not None:
            region = tuple(slice(x, None) for x in node) if self.upward else tuple(slice(x + 1) for x in node)
            self.owner[region] = len(self.members)
            self.members.append(node)
            return
        # Drop the members the new one dominates (their regions are inside its region).
        self.alive &= ~(self._above(node) if self.upward else self._below(node))
        bit = 1 << len(self.members)
        self.members.append(node)
        self.alive |= bit
        if self.top is not None:
            self.by_free[sum(v < t for v, t in zip(node, self.top, strict=True))] |= bit
        for ge, v in zip(self.ge, node, strict=True):
            if len(ge) <= v:
                ge.extend([0] * (v + 1 - len(ge)))
            for lv in range(v + 1):
                ge[lv] |= bit
