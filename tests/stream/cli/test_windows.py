"""``anonstream windows flush``: bad usage is one line and exit 2, before the ledger is opened (a flush that
releases waiting reports: tests/stream/worker/test_batch_windows.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from stream.cli.main import main


@pytest.mark.parametrize(("args", "says"), [
    ([], "name the stations to flush (--station S1 ...) or pass --all"),
    (["--station", "S 1"], "invalid station id 'S 1'")])
def test_bad_usage_is_one_line_and_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str], args: list[str], says: str) -> None:
    monkeypatch.setenv("ANONSTREAM_HOME", str(tmp_path))
    assert main(["windows", "flush", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error: ") and says in err


def test_without_an_action_it_shows_its_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["windows"]) == 2
    assert "min_release_rows" in capsys.readouterr().out
