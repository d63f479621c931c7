"""Warnings a healthy start prints that ask nothing of anyone are dropped at their own logger; -v shows them, and
anything else those loggers say still shows."""

from __future__ import annotations

import logging

import pytest

from stream.ops import logs


@pytest.mark.parametrize("verbose", [False, True])
def test_known_harmless_warnings_are_dropped_unless_verbose(verbose: bool, capsys: pytest.CaptureFixture[str]) -> None:
    logs.setup(verbose=verbose)
    try:
        faust_app = logging.getLogger("faust.app.base")
        selector = logging.getLogger("kafka.net.selector")
        faust_app.warning("[^---App]: Missing sensor state for rebalance #1")
        selector.warning("Task %r ran for %.3fs (>%.3fs threshold). It is blocking the event loop", "t", 0.114, 0.1)
        selector.warning("Task %r ran for %.3fs (>%.3fs threshold). It is blocking the event loop", "t", 2.5, 0.1)
        faust_app.warning("[^---App]: something else")
    finally:
        logs.setup()
    err = capsys.readouterr().err
    assert ("Missing sensor state" in err) is verbose and ("ran for 0.114s" in err) is verbose
    assert "something else" in err
    assert verbose or "ran for 2.500s" in err  # (with -v the client's repeat filter holds the second one back)
