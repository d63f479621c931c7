"""Fixtures: a seeded SQLite ledger (see seed.py) and the console served from it on a free port."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from stream.console.server import ConsoleThread
from tests.stream.console.seed import TOKEN, Seeded, build


@pytest.fixture(scope="session")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Seeded]:
    root = tmp_path_factory.mktemp("console-ledger")
    s = build(f"sqlite:///{root / 'ledger.db'}", root)
    yield s
    s.db.dispose()


class Console(ConsoleThread):
    """The console on a free loopback port (a :class:`stream.console.server.ConsoleThread`) plus an HTTP helper."""

    def __init__(self, settings: Any, db: Any = None, **kwargs: Any) -> None:
        super().__init__(settings, db, host="127.0.0.1", port=0, **kwargs)

    def call(self, method: str, path: str, *, token: str | None = None, form: dict[str, str] | None = None,
             body: Any = None, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], str]:
        hdrs = dict(headers or {})
        data = None
        if token is not None:
            hdrs["Authorization"] = f"Bearer {token}"
        if form is not None:
            from urllib.parse import urlencode

            data = urlencode(form).encode()
            hdrs["Content-Type"] = "application/x-www-form-urlencoded"
        elif body is not None:
            data = json.dumps(body).encode()
            hdrs["Content-Type"] = "application/json"
        elif method == "POST":
            data = b""
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=hdrs)
        try:
            with urllib.request.urlopen(req, timeout=60) as resp:
                return resp.status, dict(resp.headers), resp.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, dict(exc.headers), exc.read().decode()

    def forget_wrong_tokens(self) -> None:
        """Reset the console's per-client count of wrong tokens (each test starts unpenalized)."""
        from stream.console.web import GUARD

        self.runner.app[GUARD]._clients.clear()

    def get_json(self, path: str) -> Any:
        status, _h, text = self.call("GET", path)
        ok = (200, 503) if path.startswith("/api/health") else (200,)  # 503: the verdict is not healthy
        assert status in ok, (path, status, text[:300])
        return json.loads(text)


@pytest.fixture(scope="session")
def console(seeded: Seeded) -> Iterator[Console]:
    c = Console(seeded.settings, seeded.db, broker_timeout_s=3.0)
    yield c
    c.close()


@pytest.fixture
def token() -> str:
    return TOKEN
