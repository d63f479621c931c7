"""core's second thread is the command line's choice (stream/ops/cores.py), never core's: core reads
nothing of its machine."""

from __future__ import annotations

import pytest

from core import parallel as threads
from stream.ops.cores import LoadCheck, usable_cores, use_spare_cores


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
