"""The numba path's class tables: a node's table rolled up from the smallest cached table below it.

:class:`RollUps` belongs to one :class:`~core.lattice.evaluator.NodeEvaluator` (its batch's distinct
rows and their counts): it keeps the tables evaluated so far (:class:`~core.lattice.tables.TableCache`),
the map of every QI's codes from one level to another (the "up cube" the kernels read) and the
projection tables of Incognito's seeding (:func:`~core.lattice.tables.projection_table`). The numpy
path groups the distinct rows directly and uses none of it (core/lattice/backend.py says when each runs).
"""

from __future__ import annotations

import numpy as np

from core.encoding import EncodedBatch
from core.lattice.tables import TableCache, projection_table

_MAX_UP_CELLS = 20_000_000  # roll-up map cube limit (int32 cells)
_MAX_TABLE_CELLS = 20_000_000  # cached class tables limit (int32 cells, about 80 MB)


class RollUps:
    """Cached class tables of one batch's lattice nodes (QI codes [, sensitive code], counts)."""

    def __init__(self, batch: EncodedBatch, bottom_tab: np.ndarray, counts: np.ndarray, ncodes: list[list[int]],
                 n_sens: int | None) -> None:
        """``bottom_tab``: the distinct rows (leaf codes [, sensitive code]) with their ``counts``;
        ``ncodes[a][lv]``: QI a's number of codes at level lv; ``n_sens``: the sensitive codes, when the
        tables carry them (None otherwise)."""
        self.batch, self.bottom_tab, self.counts, self.ncodes, self.n_sens = batch, bottom_tab, counts, ncodes, n_sens
        self.bottom = (0,) * batch.d
        self.tables = TableCache(batch.d, _MAX_TABLE_CELLS)
        self._up: np.ndarray | None = None

    def up_cube(self) -> np.ndarray | None:
        """``up[a, s, t, code]``: QI a's code at level s mapped to level t (None if too large)."""
        if self._up is None:
            d, heights = self.batch.d, self.batch.heights
            hmax = int(heights.max()) + 1 if d else 1
            cmax = max((max(nc) for nc in self.ncodes), default=1)
            if d * hmax * hmax * cmax > _MAX_UP_CELLS:
                self._up = np.zeros((0, 0, 0, 0), np.int32)
            else:
                up = np.zeros((d, hmax, hmax, cmax), dtype=np.int32)
                for a, q in enumerate(self.batch.qis):
                    for s in range(q.height + 1):
                        for t in range(s, q.height + 1):
                            up[a, s, t, : q.n_codes(s)] = q.up(s, t)
                self._up = up
        return self._up if self._up.size else None

    def source(self, node: tuple[int, ...]) -> tuple[tuple[int, ...], np.ndarray, np.ndarray]:
        """The cached class table below ``node`` with the fewest rows (bottom table as fallback)."""
        hit = self.tables.below(node, len(self.counts))
        return hit if hit is not None else (self.bottom, self.bottom_tab, self.counts)

    def prepare_projection(self, node: tuple[int, ...]) -> None:
        """Cache, with one dense count, a cheap table below a node whose QIs are mostly at the top.

        The table is that of ``node`` with its non-top QIs lowered to their leaves. It is skipped when
        a cached table below ``node`` is already much smaller than the bottom table.
        """
        heights = self.batch.heights
        if self.up_cube() is None:
            return
        attrs = [a for a, lv in enumerate(node) if lv < heights[a]]
        base = tuple(0 if a in attrs else int(h) for a, h in enumerate(heights))
        hit = self.tables.below(node, len(self.counts) // 8 + 1)
        if base in self.tables or hit is not None:
            return
        if any(self.ncodes[a][int(h)] != 1 for a, h in enumerate(heights)):
            return
        carried = [] if self.n_sens is None else [self.n_sens]
        built = projection_table(self.bottom_tab, self.counts, attrs, [self.ncodes[a][0] for a in attrs] + carried,
                                 len(carried))
        if built is not None:
            self.tables.add(base, *built)

    def table(self, node: tuple[int, ...], radix: np.ndarray | None) -> tuple[np.ndarray, np.ndarray] | None:
        """Distinct (QI codes at ``node`` [, sensitive code]) rows with counts, rolled up and cached (None
        without an up cube or a ``radix``, the node's mixed-radix multipliers with the sensitive code)."""
        up = self.up_cube()
        if up is None or radix is None:
            return None
        from core.lattice.threads import roll_up  # one pass, or two threads on a large table (same rows)

        src, tab, cnt = self.source(node)
        out, sizes = roll_up(tab, cnt, up, np.asarray(src, np.int64), np.asarray(node, np.int64), radix)
        self.tables.add(node, out, sizes)
        return out, sizes
