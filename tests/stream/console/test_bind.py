"""A console bound beyond loopback: refused without a token in embedded mode, every page needs the token."""

from __future__ import annotations

import pytest

from core.errors import ParamsError
from stream.console.server import ConsoleThread, is_loopback
from tests.stream.console.conftest import Console
from tests.stream.console.seed import TOKEN, Seeded


def test_loopback_addresses() -> None:
    assert all(is_loopback(h) for h in ("127.0.0.1", "::1", "localhost", "127.0.0.2"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "::", "192.168.1.10", "console.example"))


def test_embedded_console_on_all_interfaces_needs_a_token(seeded: Seeded) -> None:
    assert seeded.settings.mode == "embedded"
    with pytest.raises(ParamsError, match="ANONSTREAM_OPERATOR_TOKEN"):
        ConsoleThread(seeded.settings.with_updates(operator_token=None), seeded.db, host="0.0.0.0", port=0)
    c = ConsoleThread(seeded.settings.with_updates(operator_token=TOKEN), seeded.db, host="0.0.0.0", port=0)
    try:
        local = Console.__new__(Console)
        local.url = "http://127.0.0.1:" + c.url.rsplit(":", 1)[1]
        assert local.call("GET", "/api/releases")[0] == 401
        assert local.call("GET", "/releases", headers={"Accept": "text/html"})[2].count("name=token") == 1
        assert local.call("GET", "/api/releases", token=TOKEN)[0] == 200
    finally:
        c.close()


def test_the_console_command_on_all_interfaces_without_a_token_is_one_error_line(seeded: Seeded,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from stream.cli.main import main

    for key in ("ANONSTREAM_OPERATOR_TOKEN", "ANONSTREAM_MODE"):
        monkeypatch.delenv(key, raising=False)
    assert main(["console", "--host", "0.0.0.0", "--port", "0", "--database", seeded.db.url]) == 2
    out = capsys.readouterr()
    assert out.err.startswith("error: the console on 0.0.0.0") and "ANONSTREAM_OPERATOR_TOKEN" in out.err
    assert "serving" not in out.out
