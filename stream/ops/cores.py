"""What core's work may use of this machine: its second core, while one is spare.

core/ reads nothing of the machine it runs on; :func:`use_spare_cores` tells it
(:func:`core.parallel.configure`): two threads (a lattice search's large roll-up, the free-bands run
beside a CG or hetero engine's nested release) when this process may run on two cores or more (its
CPU affinity, capped by a container's CPU limit: :func:`usable_cores`), and a core counts as spare
while the 1-minute load average is below the cores minus a half (read at most once a second).
Measured in core/lattice/threads.py: on a machine shared at equal priority a second thread waits for
a time slice and the split costs wall time.
"""

from __future__ import annotations

import math
import os
import time
from pathlib import Path

CGROUP = Path("/sys/fs/cgroup")


def cgroup_cpus(root: Path | None = None) -> int | None:
    """Whole CPUs a cgroup CPU quota allows this process (rounded up), or None when it has none.

    Reads cgroup v2's ``cpu.max`` (``"<quota> <period>"`` or ``"max <period>"``), else v1's
    ``cpu/cpu.cfs_quota_us`` and ``cpu/cpu.cfs_period_us``, under ``root`` (default :data:`CGROUP`, the
    cgroup root the process sees): where Docker and Kubernetes put a container's CPU limit. A group
    nested below that root (bench/scaling.py's per-worker groups on a host) is not read. The rule is
    joblib's (loky's ``cpu_count``); that library is not used because importing it costs an engine
    command about 0.1 s of start-up.
    """
    root = CGROUP if root is None else root
    try:
        parts = (root / "cpu.max").read_text().split()
    except OSError:
        parts = []
    if len(parts) != 2:
        try:
            parts = [(root / "cpu" / name).read_text().strip() for name in ("cpu.cfs_quota_us", "cpu.cfs_period_us")]
        except OSError:
            return None
    try:
        quota, period = int(parts[0]), int(parts[1])
    except ValueError:  # "max": no quota
        return None
    return max(1, math.ceil(quota / period)) if quota > 0 and period > 0 else None


def usable_cores() -> int:
    """The cores this process may run on: its CPU affinity, capped by a cgroup CPU quota (a container's limit)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    quota = cgroup_cpus()
    return min(cores, quota) if quota is not None else cores


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
