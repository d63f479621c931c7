"""Where a batch run's time and memory went (docs/performance.md, "Memory"): stage laps and peaks.

A run is read (spec, file, input contract, history, encoding), warm-up, engine, verify, report (risk
profile, typed columns, codebook) and write (publication order, ledger, ``--out``); start-up (interpreter
and imports) comes before the run. Each lap records the seconds since the previous one and, for most
stages, this process's peak resident memory after it.
"""

from __future__ import annotations

import time


class StageClock:
    """Laps of a batch run: ``stages`` (seconds per stage, ``startup_s`` first) and ``peaks`` (MiB)."""

    def __init__(self) -> None:
        self.started = self.last = time.perf_counter()
        self.stages: dict[str, float] = {"startup_s": process_age()}
        self.peaks: dict[str, float] = {"startup": peak_mib()}

    def lap(self, stage: str, peak: bool = True) -> float:
        """Record ``stage`` as the seconds since the previous lap (and the peak memory); returns them."""
        now = time.perf_counter()
        self.stages[f"{stage}_s"], self.last = now - self.last, now
        if peak:
            self.peaks[stage] = peak_mib()
        return self.stages[f"{stage}_s"]

    def restart(self) -> None:
        """The next lap starts now (time spent since the last lap counts as ``other_s``)."""
        self.last = time.perf_counter()

    def total(self) -> float:
        """Seconds since the run started (start-up excluded)."""
        return time.perf_counter() - self.started

    def report(self, total: float) -> dict[str, float]:
        """The stages rounded, plus ``other_s`` (what no stage holds) and ``process_s`` (start-up + ``total``)."""
        out = {name: round(value, 4) for name, value in self.stages.items()}
        out["other_s"] = round(max(0.0, total - sum(v for k, v in self.stages.items() if k != "startup_s")), 4)
        out["process_s"] = round(self.stages["startup_s"] + total, 4)
        return out


def process_age() -> float:
    """Seconds since this process started (interpreter start-up and imports); 0.0 where unknown."""
    try:
        with open("/proc/self/stat") as fh:
            started = int(fh.read().rpartition(")")[2].split()[19])
        with open("/proc/uptime") as fh:
            now = float(fh.read().split()[0])
        import os

        return max(0.0, now - started / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return 0.0


def peak_mib() -> float:
    """This process's peak resident memory so far, in MiB (the high-water mark after each stage)."""
    import resource

    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
