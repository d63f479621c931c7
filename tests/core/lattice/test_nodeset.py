"""The bitset-indexed NodeSet answers as a plain scan of its surviving members.

The reference keeps its members in a list, drops the ones a new member dominates, and returns the
first dominating member in insertion order, or (a downward set that knows the lattice's top) the
first one among those with the fewest QIs below the top.
"""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from core.lattice.nodeset import NodeSet


class ScanSet:
    """Reference: a list of members, dominated ones dropped on add, the first dominating one returned."""

    def __init__(self, upward: bool, top: tuple[int, ...] | None = None) -> None:
        self.upward, self.top = upward, top
        self.members: list[tuple[int, ...]] = []

    def _dominates(self, m: tuple[int, ...], v: tuple[int, ...]) -> bool:
        return all((a <= b) if self.upward else (a >= b) for a, b in zip(m, v, strict=True))

    def add(self, node: tuple[int, ...]) -> None:
        self.members = [m for m in self.members if not self._dominates(node, m)] + [node]

    def cover(self, node: tuple[int, ...]) -> tuple[int, ...] | None:
        hits = [m for m in self.members if self._dominates(m, node)]
        if hits and self.top is not None and not self.upward:
            top = self.top
            return min(hits, key=lambda m: sum(v < t for v, t in zip(m, top, strict=True)))  # first of the fewest
        return hits[0] if hits else None


@st.composite
def lattice_ops(draw: st.DrawFn) -> tuple[list[int], list[tuple[bool, tuple[int, ...]]]]:
    """Heights of a small lattice, and a sequence of (add?, node) operations on it."""
    heights = draw(st.lists(st.integers(0, 4), min_size=1, max_size=4))
    node = st.tuples(*[st.integers(0, h) for h in heights])
    return heights, draw(st.lists(st.tuples(st.booleans(), node), min_size=1, max_size=60))


@settings(max_examples=200, deadline=None)
@given(lattice_ops(), st.booleans(), st.booleans())
def test_bitset_node_set_agrees_with_a_scan(case: tuple[list[int], list[tuple[bool, tuple[int, ...]]]],
                                            upward: bool, with_heights: bool) -> None:
    heights, ops = case
    if with_heights:  # the heights, but no bitmap: the bitset index ranking members by QIs below the top
        fast = NodeSet(len(heights), upward, heights=np.asarray(heights), max_bitmap=0)
        ref = ScanSet(upward, tuple(heights))
    else:
        fast, ref = NodeSet(len(heights), upward), ScanSet(upward)
    assert fast.owner is None
    half = len(ops) // 2
    snapshot, frozen = fast.copy(), ScanSet(upward, ref.top)
    for i, (is_add, node) in enumerate(ops):
        if i == half:  # a copy answers as the set did when copied, whatever is added later
            snapshot, frozen.members = fast.copy(), list(ref.members)
        if is_add:
            fast.add(node)
            ref.add(node)
        assert fast.cover(node) == ref.cover(node)
    for node in itertools.product(*[range(h + 1) for h in heights]):  # every node of the lattice
        assert fast.cover(node) == ref.cover(node)
        assert snapshot.cover(node) == frozen.cover(node)
