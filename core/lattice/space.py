"""The generalization lattice: all level vectors between the bottom (all 0) and the top (heights)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np


class Lattice:
    """Level vectors ``0 <= levels[a] <= heights[a]``; partial order is component-wise <=."""

    def __init__(self, heights: np.ndarray | list[int]) -> None:
        self.heights = np.asarray(heights, dtype=np.int64)
        self.d = len(self.heights)

    @property
    def size(self) -> int:
        return int(np.prod(self.heights + 1, dtype=object))

    @property
    def bottom(self) -> tuple[int, ...]:
        return (0,) * self.d

    @property
    def top(self) -> tuple[int, ...]:
        return tuple(int(h) for h in self.heights)

    def height_of(self, node: tuple[int, ...]) -> int:
        return int(sum(node))

    def successors(self, node: tuple[int, ...]) -> Iterator[tuple[int, ...]]:
        for a in range(self.d):
            if node[a] < self.heights[a]:
                yield node[:a] + (node[a] + 1,) + node[a + 1 :]

    def predecessors(self, node: tuple[int, ...]) -> Iterator[tuple[int, ...]]:
        for a in range(self.d):
            if node[a] > 0:
                yield node[:a] + (node[a] - 1,) + node[a + 1 :]

    def all_nodes(self) -> np.ndarray:
        """Every node as rows of an array (only for small lattices)."""
        grids = np.meshgrid(*[np.arange(h + 1) for h in self.heights], indexing="ij")
        return np.stack([g.ravel() for g in grids], axis=1)

    def random_node(self, rng: np.random.Generator) -> tuple[int, ...]:
        return tuple(int(x) for x in rng.integers(0, self.heights + 1))

    def contains(self, node: tuple[int, ...]) -> bool:
        return len(node) == self.d and all(0 <= v <= h for v, h in zip(node, self.heights, strict=True))
