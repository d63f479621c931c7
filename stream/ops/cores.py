"""What core's work may use of this machine: its second core, while one is spare.

core/ reads nothing of the machine it runs on; :func:`use_spare_cores` tells it
(:func:`core.parallel.configure`): two threads (a lattice search's large roll-up, a CG release's
free-bands run) when this process may run on two cores or more, and a core counts as spare while the
1-minute load average is below the cores minus a half (read at most once a second). Measured in
core/lattice/threads.py: on a machine shared at equal priority a second thread waits for a time slice
and the split costs wall time.
"""

from __future__ import annotations

import math
import os
import time


def usable_cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


class LoadCheck:
    """Whether a core is spare now: the 1-minute load average below ``cores - 0.5``, read at most once a second."""

    def __init__(self, cores: int) -> None:
        self.cores = cores
        self._read: tuple[float, bool] = (-math.inf, False)

    def __call__(self) -> bool:
        now = time.monotonic()
        if now - self._read[0] >= 1.0:
            self._read = (now, os.getloadavg()[0] < self.cores - 0.5)
        return self._read[1]


def use_spare_cores() -> None:
    """Let core's work in this process use a second thread while a core is spare (core/parallel.py)."""
    from core import parallel

    cores = usable_cores()
    parallel.configure(2 if cores >= 2 else 1, LoadCheck(cores))
