"""``anonstream migrate --wait``: an unreachable database is retried with back-off, then one line and exit 3."""

from __future__ import annotations

import pytest

from stream.cli.main import main
from stream.ops.broker import free_port


def test_an_unreachable_database_is_retried_then_one_line_and_exit_3(monkeypatch: pytest.MonkeyPatch,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("ANONSTREAM_DATABASE_URL", raising=False)
    url = f"postgresql+psycopg2://anonstream@127.0.0.1:{free_port()}/anonstream"  # nothing listens there
    assert main(["migrate", "--database", url, "--wait", "1.5"]) == 3
    err = capsys.readouterr().err.strip().splitlines()
    retries = [line for line in err if "retrying in" in line]
    assert retries and retries[0].startswith("migrations: database postgresql+psycopg2://anonstream@127.0.0.1")
    assert err[-1].startswith("error: database") and "unreachable" in err[-1]
    assert main(["migrate", "--database", url]) == 3  # without --wait: one try
    assert not [line for line in capsys.readouterr().err.splitlines() if "retrying" in line]
