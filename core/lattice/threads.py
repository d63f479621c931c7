"""Both cores for a large roll-up: the table is split in two halves, one per core, when that pays.

A roll-up (:func:`~core.lattice.kernels.rollup`) computes every table row's class key at the target
node, then merges equal keys in a hash table. On two cores :func:`roll_up` splits both steps:

1. each core computes the keys of half the rows and sorts its half (stably) into two parts by one bit
   of the key's hash (:func:`~core.lattice.kernels.rollup_split`);
2. each core merges one part (:func:`~core.lattice.kernels.rollup_merge`): its rows from the first
   half, then from the second, in row order. Equal keys have the same hash, so a class never spans
   both parts, and the table is part 0's classes followed by part 1's.

The halves and the parts are fixed (two of each), never the number of threads: run inline, on one
thread (:func:`split_roll_up` without an executor), the split gives the very same table. It holds
the same rows and counts as the one-pass roll-up, in another order, and nothing computed from a
table depends on its order (counts, sums of integers, minima, the loss summed exactly:
core/lattice/suppression.py), so a search finds the same node with the same counters whichever
path rolled its tables up (``tests/core/lattice/test_threads.py``).

Rent or buy, measured with bench/lattice_threads.py on this 2-core machine. The split does more work
than one pass (the parts, two hash tables, the joins): 5-20 % more CPU on one thread; on two, from
32,768 rows, between 9 % less and 29 % more.
With both cores to itself (the benchmark's scheduling group at nice -19, the rest of the machine busy),
two threads took 1.56 times the wall time of one pass at 4,096 rows, 0.96 at 8,192, 1.12 at 16,384,
0.84 at 32,768, 0.77 at 65,536 and 0.61 at 262,144; so a table is split only from
:data:`PARALLEL_ROWS` rows. Adult's largest table has 19,502 rows: its searches never split (forced
to split from 8,192 rows, Adult k = 5, <= 4 % took 0.88 s instead of 0.78). And only while a core is
spare (the 1-minute load average, read at most once a second, below the cores minus a half: the
command line and the release processes say so through :func:`core.parallel.configure`, stream/ops/cores.py): sharing
the machine at equal priority (load 7-11 from other work), a process gets about one core's worth
whatever its threads, every wake-up waits for a time slice, and the split took 0.85-1.5 times the
wall time of one pass. One search at a time uses the second thread (a lock, tried without waiting);
any other rolls up in one pass (:func:`core.parallel.second_thread`).
"""

from __future__ import annotations

from concurrent.futures import Executor
from typing import Any

import numpy as np

from core.parallel import second_thread

# Table rows from which a roll-up is split over two threads: the measured break-even (see the module).
PARALLEL_ROWS = 32_768


def roll_up(tab: np.ndarray, cnt: np.ndarray, up: np.ndarray, src: np.ndarray, dst: np.ndarray,
            radix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`~core.lattice.kernels.rollup`, split over two threads when the table is large enough."""
    from core.lattice.kernels import rollup

    if tab.shape[0] < PARALLEL_ROWS:
        return rollup(tab, cnt, up, src, dst, radix)
    with second_thread() as pool:
        if pool is None:
            return rollup(tab, cnt, up, src, dst, radix)
        return split_roll_up(tab, cnt, up, src, dst, radix, pool)


def split_roll_up(tab: np.ndarray, cnt: np.ndarray, up: np.ndarray, src: np.ndarray, dst: np.ndarray,
                  radix: np.ndarray, executor: Executor | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The two-part roll-up (see the module): the second half and part on ``executor``, or inline if None."""
    from core.lattice.kernels import rollup_merge, rollup_split

    c = tab.shape[0]
    half = c // 2
    key = np.empty(c, np.int64)
    order = np.empty(c, np.int64)
    args = (tab, up, src, dst, radix)
    later = executor.submit(rollup_split, *args, half, c, key, order) if executor is not None else None
    first_zeros = rollup_split(*args, 0, half, key, order)
    second_zeros = later.result() if later is not None else rollup_split(*args, half, c, key, order)
    part0 = np.concatenate((order[:first_zeros], order[half:half + second_zeros]))
    part1 = np.concatenate((order[first_zeros:half], order[half + second_zeros:]))
    merge = (tab, cnt, up, src, dst, key)
    merged1 = executor.submit(rollup_merge, *merge, part1) if executor is not None else None
    out0, sizes0 = rollup_merge(*merge, part0)
    out1, sizes1 = merged1.result() if merged1 is not None else rollup_merge(*merge, part1)
    return np.concatenate((out0, out1)), np.concatenate((sizes0, sizes1))


def warm(evaluator: Any) -> None:  # a NodeEvaluator (core/lattice/evaluator.py imports this module)
    """Load (after a fresh install: compile) the split's kernels: roll the bottom table up to the top in two parts.

    The tables of a warm-up batch are far below :data:`PARALLEL_ROWS`, so a warm-up search never splits one."""
    top = np.asarray(evaluator.heights, np.int64)
    up, radix = evaluator.rollups.up_cube(), evaluator._radix(tuple(int(h) for h in top), with_sens=True)
    if up is not None and radix is not None:
        split_roll_up(evaluator.bottom_tab, evaluator.counts, up, np.zeros_like(top), top, radix)
