"""What the release processes' fork server runs once after :mod:`stream.worker.fork_preload`: the worker's
engine on a synthetic 64-row batch (:func:`core.engines.warmup.warm_up_all`), so its numba kernels are
loaded in the server and every release process forked from it inherits them.

Each release process used to load them itself in its warm-up, from the kernel cache (about 0.8 s of
CPU per process for CG-Diverse, the default); a worker with two release processes paid that twice at
every start and at every rebuild of its pool. The children still warm up on the worker's first reports
(:meth:`stream.worker.release.Orchestrator.warm_up`): what their own columns need beyond the synthetic
batch loads there. The engine is named by :data:`ENGINE_VARIABLE`, which
:class:`stream.worker.pool.ReleasePool` sets before the server starts; a warm-up that fails changes nothing.
"""

from __future__ import annotations

import logging
import os
import sys
from types import FrameType

ENGINE_VARIABLE = "ANONSTREAM_FORK_WARM_ENGINE"
DP_VARIABLE = "ANONSTREAM_FORK_WARM_DP"


def in_fork_server() -> bool:
    """Whether this runs in ``multiprocessing``'s fork server, importing its preload: the server's ``main``
    is on the stack. (Its ``sys.argv`` is ``["-c"]``, as any ``python -c`` process's is, so that alone
    would warm up every such process that loaded the forkserver module first.)"""
    server = sys.modules.get("multiprocessing.forkserver")
    if server is None:
        return False
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        if frame.f_code is server.main.__code__:
            return True
        frame = frame.f_back
    return False


def dp_budgets(epsilons: list[tuple[float, float]]) -> str:
    """:data:`DP_VARIABLE`'s value for (ε, δ) pairs: ``"1.0,1e-06;10.0,1e-06"``."""
    return ";".join(f"{e!r},{d!r}" for e, d in epsilons)


def warm_dp(value: str) -> None:
    """Convert each ``epsilon,delta`` pair of ``value`` to ρ once (cached for the forked children)."""
    from core.dp_spec import rho_from_epsilon

    for pair in filter(None, value.split(";")):
        epsilon, delta = (float(v) for v in pair.split(","))
        rho_from_epsilon(epsilon, delta)


if in_fork_server() and os.environ.get(ENGINE_VARIABLE):
    from core import parallel
    from core.engines.warmup import warm_up_all

    previous = parallel.set_threads(1)  # no second thread in the server: release processes are forked from it
    try:
        warm_up_all([os.environ[ENGINE_VARIABLE]])
    except Exception as exc:  # an unknown engine, a kernel that fails to load: the children warm up themselves
        logging.getLogger(__name__).debug("fork server warm-up skipped: %s", type(exc).__name__)
    finally:
        parallel.set_threads(previous)
    try:
        warm_dp(os.environ.get(DP_VARIABLE, ""))
    except Exception as exc:  # a malformed value, OpenDP missing: each release converts its own, as before
        logging.getLogger(__name__).debug("fork server DP warm-up skipped: %s", type(exc).__name__)
