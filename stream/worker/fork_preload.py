"""What the release processes' fork server loads once, so that every release process it forks inherits it.

:class:`stream.worker.pool.ReleasePool` names this module as the fork server's preload. Importing it
imports :mod:`stream.worker.pool` (pandas, SQLAlchemy) and the risk models (scipy), and initializes numba's
CPU target: its typing and lowering registries (numpy's array functions, the BLAS check) load on the
first kernel a process runs, about 0.8 s of CPU that each release process used to spend again in
its warm-up. Measured on 2 cores: a release process's warm-up of CG-Kanon took 0.9 s of CPU, and
0.3 s forked from a server that had loaded them. The pool names the configured engine's module as
a second preload; the engine's kernels load in each release process's warm-up, from the kernel cache.
"""

from __future__ import annotations

import signal

from stream.worker.fork_warm import in_fork_server

if in_fork_server():  # in the fork server, before the imports
    # a terminal's Ctrl-C reaches the whole process group: the fork server ignores it (its own main does so only
    # after the preload, seconds later), and so do the release processes it forks; the worker stops them
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # blocked while it started (pool.py): now ignored

from numba.core.registry import cpu_target

import core.risk.profile  # noqa: F401  (every release computes its risk profile: scipy, once here)
import stream.worker.pool  # noqa: F401  (the release processes run its functions)
from stream.ops.cores import use_spare_cores

cpu_target.typing_context.refresh()
cpu_target.target_context.refresh()
use_spare_cores()  # large roll-ups and a nested release's free-bands run may use a spare core (core/parallel.py)
