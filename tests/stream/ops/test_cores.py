"""core's second thread is the command line's choice (stream/ops/cores.py), never core's: core reads
nothing of its machine."""

from __future__ import annotations

from pathlib import Path

import pytest

from core import parallel as threads
from stream.ops.cores import LoadCheck, cgroup_cpus, usable_cores, use_spare_cores


def test_core_alone_uses_one_thread_and_the_command_line_says_when_two() -> None:
    saved = (threads._threads, threads._spare)
    try:
        threads._threads = 1
        assert threads.threads() == 1  # what core does on its own
        use_spare_cores()
        assert threads.threads() == min(2, usable_cores())
        assert isinstance(threads._spare, LoadCheck) and threads._spare.cores == usable_cores()
    finally:
        threads._threads, threads._spare = saved


def test_a_core_is_spare_while_the_load_is_below_the_cores_minus_a_half(monkeypatch: pytest.MonkeyPatch) -> None:
    load = [1.4]
    monkeypatch.setattr("stream.ops.cores.os.getloadavg", lambda: (load[0], 0.0, 0.0))
    clock = [100.0]
    monkeypatch.setattr("stream.ops.cores.time.monotonic", lambda: clock[0])
    check = LoadCheck(2)
    assert check() is True
    load[0] = 1.6
    assert check() is True  # read at most once a second
    clock[0] += 1.0
    assert check() is False


@pytest.mark.parametrize(("files", "cpus"), [
    ({"cpu.max": "30000 100000\n"}, 1),  # a 0.3-CPU container: one core, so no second thread
    ({"cpu.max": "150000 100000\n"}, 2),
    ({"cpu.max": "max 100000\n"}, None),  # cgroup v2 without a limit
    ({"cpu/cpu.cfs_quota_us": "200000\n", "cpu/cpu.cfs_period_us": "100000\n"}, 2),  # cgroup v1
    ({"cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n"}, None),  # v1 without a limit
    ({"cpu.max": "garbled\n"}, None),
    ({}, None),  # no cgroup files (not Linux, or not mounted)
])
def test_a_containers_cpu_limit_caps_the_cores(tmp_path: Path, files: dict[str, str], cpus: int | None,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert cgroup_cpus(tmp_path) == cpus
    monkeypatch.setattr("stream.ops.cores.CGROUP", tmp_path)
    monkeypatch.setattr("stream.ops.cores.os.sched_getaffinity", lambda _pid: {0, 1, 2, 3})
    assert usable_cores() == (4 if cpus is None else min(4, cpus))
