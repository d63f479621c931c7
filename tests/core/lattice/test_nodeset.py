"""The bitset-indexed NodeSet answers as a plain scan of its surviving members, in insertion order."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from core.lattice.nodeset import NodeSet


class ScanSet:
    """Reference: a list of members, dominated ones dropped on add, the first dominating one returned."""

    def __init__(self, upward: bool) -> None:
        self.upward = upward
        self.members: list[tuple[int, ...]] = []

    def _dominates(self, m: tuple[int, ...], v: tuple[int, ...]) -> bool:
        return all((a <= b) if self.upward else (a >= b) for a, b in zip(m, v, strict=True))

    def add(self, node: tuple[int, ...]) -> None:
        self.members = [m for m in self.members if not self._dominates(node, m)] + [node]

    def cover(self, node: tuple[int, ...]) -> tuple[int, ...] | None:
        return next((m for m in self.members if self._dominates(m, node)), None)


@st.composite
def lattice_ops(draw: st.DrawFn) -> tuple[list[int], list[tuple[bool, tuple[int, ...]]]]:
    """Heights of a small lattice, and a sequence of (add?, node) operations on it."""
    heights = draw(st.lists(st.integers(0, 4), min_size=1, max_size=5))
    node = st.tuples(*[st.integers(0, h) for h in heights])
    return heights, draw(st.lists(st.tuples(st.booleans(), node), min_size=1, max_size=60))


@settings(max_examples=200, deadline=None)
@given(lattice_ops(), st.booleans())
def test_bitset_node_set_agrees_with_a_scan(case: tuple[list[int], list[tuple[bool, tuple[int, ...]]]],
                                            upward: bool) -> None:
    heights, ops = case
    fast, ref = NodeSet(len(heights), upward), ScanSet(upward)  # no heights: the bitset index
    assert fast.owner is None
    half = len(ops) // 2
    snapshot, frozen = fast.copy(), ScanSet(upward)
    for i, (is_add, node) in enumerate(ops):
        if i == half:  # a copy answers as the set did when copied, whatever is added later
            snapshot, frozen.members = fast.copy(), list(ref.members)
        if is_add:
            fast.add(node)
            ref.add(node)
        assert fast.cover(node) == ref.cover(node)
    for _, node in ops:
        assert fast.cover(node) == ref.cover(node)
        assert snapshot.cover(node) == frozen.cover(node)
