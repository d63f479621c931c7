"""Equal CPU quotas for the processes a benchmark starts: one cgroup per process (and its children), with
cgroup v1's ``cpu.cfs_quota_us`` (or v2's ``cpu.max``) and the CPU time and peak memory the kernel counted.

Where cgroups are not writable (not root, a read-only /sys/fs/cgroup) :func:`make_group` returns None and
the benchmark runs unlimited, saying so in its output: CPU time then comes from the process's own
``/proc`` counters of itself and its reaped children, and memory from its peak resident set.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

V1, V2 = Path("/sys/fs/cgroup/cpu"), Path("/sys/fs/cgroup")
PERIOD_US = 100_000


@dataclass
class Group:
    """One process group's cgroup(s): write a pid into :attr:`procs` files to place it."""

    name: str
    procs: list[Path]
    cpu_usage: Path  # nanoseconds (v1 cpuacct.usage) or a cpu.stat with usage_usec (v2)
    mem_peak: Path | None

    def cpu_s(self) -> float:
        text = self.cpu_usage.read_text()
        if self.cpu_usage.name == "cpu.stat":
            usec = next(int(line.split()[1]) for line in text.splitlines() if line.startswith("usage_usec"))
            return usec / 1e6
        return int(text) / 1e9

    def peak_mb(self) -> float | None:
        if self.mem_peak is None or not self.mem_peak.exists():
            return None
        return int(self.mem_peak.read_text()) / 2**20

    def shell_prefix(self) -> str:
        """A shell snippet that moves the shell into the group before it ``exec``s the command."""
        return " && ".join(f"echo $$ > {p}" for p in self.procs)

    def remove(self) -> None:
        """Kill what is left in the group (a worker's release processes) and remove it."""
        for procs in self.procs:
            with contextlib.suppress(OSError, ValueError):
                for pid in procs.read_text().split():
                    os.kill(int(pid), signal.SIGKILL)
        for procs in self.procs:
            for _ in range(50):  # the kernel empties the group as the killed processes exit
                try:
                    procs.parent.rmdir()
                    break
                except OSError:
                    time.sleep(0.1)


def make_group(name: str, cpus: float) -> Group | None:
    """A fresh group limited to ``cpus`` CPUs, or None where cgroups cannot be written."""
    try:
        if (V1 / "cpu.cfs_quota_us").exists():
            cpu = V1 / "anonstream-bench" / name
            acct = Path("/sys/fs/cgroup/cpuacct") / "anonstream-bench" / name
            mem = Path("/sys/fs/cgroup/memory") / "anonstream-bench" / name
            for d in (cpu, acct, mem):
                d.mkdir(parents=True, exist_ok=True)
            (cpu / "cpu.cfs_period_us").write_text(str(PERIOD_US))
            (cpu / "cpu.cfs_quota_us").write_text(str(int(cpus * PERIOD_US)))
            (mem / "memory.max_usage_in_bytes").write_text("0")  # reset the peak
            return Group(name, [cpu / "cgroup.procs", acct / "cgroup.procs", mem / "cgroup.procs"],
                         acct / "cpuacct.usage", mem / "memory.max_usage_in_bytes")
        if (V2 / "cgroup.controllers").exists():
            d = V2 / "anonstream-bench" / name
            d.mkdir(parents=True, exist_ok=True)
            (d / "cpu.max").write_text(f"{int(cpus * PERIOD_US)} {PERIOD_US}")
            return Group(name, [d / "cgroup.procs"], d / "cpu.stat", d / "memory.peak")
    except OSError:
        return None
    return None


def proc_cpu_s(pid: int) -> float:
    """CPU seconds of a live process and its reaped children (``/proc/PID/stat`` fields 14-17)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")
