"""Repeated failures are logged once per kind per interval, with a count, and once on recovery."""

from __future__ import annotations

import json
import logging

import pytest

from stream.ops.logs import JsonFormatter, ctx
from stream.worker.throttle import FailureLog


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_a_failure_every_tick_logs_one_line_per_interval(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    log = logging.getLogger("test.throttle")
    failures = FailureLog(log, interval_s=30.0, clock=clock)
    with caplog.at_level(logging.DEBUG, logger="test.throttle"):
        for tick in range(120):  # a 2-minute database outage, one failing tick per second
            clock.t = float(tick)
            failures.failed("window tick", ConnectionError("database is down\nsecond line"), "window tick failed")
            failures.failed("lease renewal", ConnectionError("database is down"), "lease renewal failed")
        failures.recovered("window tick")
        failures.recovered("window tick")  # already recovered: nothing more
    lines = [r.getMessage() for r in caplog.records if r.name == "test.throttle"]
    ticks = [m for m in lines if m.startswith("window tick")]
    assert ticks[0] == "window tick failed (ConnectionError: database is down)"
    assert ticks[1:4] == ["window tick failed (ConnectionError: database is down); failed 30 time(s) in the "
                          "last 30s"] * 3
    assert ticks[-1] == "window tick recovered after 120 failure(s)" and len(ticks) == 5
    assert len([m for m in lines if m.startswith("lease renewal")]) == 4  # kinds are counted apart
    assert sum(r.exc_info is not None for r in caplog.records) == 2  # one traceback per kind, at DEBUG only


def test_a_failure_about_a_window_carries_its_fields(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    log = logging.getLogger("test.throttle.window")
    failures = FailureLog(log, interval_s=30.0, clock=clock)
    with caplog.at_level(logging.INFO, logger="test.throttle.window"):
        failures.failed("window release", RuntimeError("boom"), "closing window w-1 failed; retrying in 0s",
                        extra=ctx(None, "w-1"))
        clock.t = 31.0
        failures.failed("window release", RuntimeError("boom"), "closing window w-1 failed; retrying in 2s",
                        extra=ctx(None, "w-1"))
    lines = [json.loads(JsonFormatter().format(r)) for r in caplog.records if r.name == "test.throttle.window"]
    assert len(lines) == 2 and all((x["window"], x["release_id"]) == ("w-1", None) for x in lines)
