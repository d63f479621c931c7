"""Which backend evaluates lattice nodes: numpy first, the numba kernels once they pay for themselves.

The numba kernels (core/lattice/kernels.py) evaluate a node from a rolled-up class table; the numpy
path (``NodeEvaluator._evaluate_numpy``) groups the distinct rows directly. Per node they cost about
the same on a small search (Adult, k = 5, 0 %: 0.12 s numpy vs 0.10 s numba for 139 nodes), and
the kernels are 2-3 times faster on a long one. But a fresh process pays 0.5-0.7 s of CPU (about 1 s
of wall time under load) and 180-220 MiB to import numba and load even cached kernels: more than a whole small
search, and more memory than the data (docs/performance.md). So a search starts on numpy and
switches to the kernels once its numpy work passes :data:`SWITCH_WORK` (the classic rent-or-buy
rule: switch once the renting has cost about what buying would), or at once if this process has
loaded them already (a worker, a benchmark after its warm-up).

The choice changes speed only, never a result: both paths count the same integers and the loss is
summed the same way (core/lattice/suppression.py); tests assert equal results node by node.
"""

from __future__ import annotations

import sys
from typing import Literal

Backend = Literal["auto", "numba", "numpy"]

KERNELS = "core.lattice.kernels"
# Distinct-row evaluations on numpy before switching: about 0.2-0.3 s of numpy work, a fifth of
# what loading the kernels costs a fresh process (measured on this 2-core machine, Adult).
SWITCH_WORK = 40_000_000


def kernels_loaded() -> bool:
    """Has this process imported the lattice kernels (so using them costs nothing extra)?"""
    return KERNELS in sys.modules


def starting_backend(requested: Backend) -> Literal["numba", "numpy"]:
    """The backend a new evaluator starts on."""
    if requested == "auto":
        return "numba" if kernels_loaded() else "numpy"
    return requested

