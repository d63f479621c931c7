"""`anonstream demo` finishes by itself: embedded broker, worker, simulated stations, exit 0."""

from __future__ import annotations

import os

import pytest

pytestmark = [pytest.mark.broker, pytest.mark.slow]


def test_demo_runs_a_day_and_exits_zero(tmp_path, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    from stream.cli.main import main
    from tests.stream.reports import spec_ref

    monkeypatch.chdir(tmp_path)
    for key in [k for k in os.environ if k.startswith("ANONSTREAM_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("ANONSTREAM_SPEC", spec_ref())
    code = main(["demo", "--stations", "3", "--reports", "150", "--idle-timeout", "2", "--timeout", "150",
                 "--out", str(tmp_path / "out")])
    out = capsys.readouterr().out
    assert code == 0, out
    releases = [line for line in out.splitlines() if line.startswith("release r-")]
    assert releases and len(list((tmp_path / "out").glob("*.csv"))) == len(releases)
    assert "dlq 3" in out and "released" in out
    assert (tmp_path / "var" / "demo" / "anonstream.db").exists()
