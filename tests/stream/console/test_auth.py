"""Production console: the token for every page, wrong tokens slowed down and logged, clean 4xx for bad input."""

from __future__ import annotations

import asyncio
import logging
import urllib.request
from collections.abc import Iterator
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stream.console.auth import TokenGuard, WrongToken, safe_next
from tests.stream.console.conftest import Console
from tests.stream.console.seed import Seeded

PROD_TOKEN = "u2uPdO8UWLtl7oT-S_holPhtNfK2lgoiorI43vpvG0o"  # generated (token_urlsafe(32))
KEY = "5401cbaa4cd50fa9bdad146b28a6e29616555034d5f8a551337a403cd1e9f907"  # generated (keys generate)
KEY2 = "5a2ad90556a5f043f1445df6c77853f41cb478925babfe3ec8912d45611892d4"  # generated


def _prod(seeded: Seeded, token: str | None = PROD_TOKEN) -> Console:
    s = seeded.settings.with_updates(mode="production", broker_url="kafka://127.0.0.1:1", database_url=seeded.db.url,
                                     fingerprint_key=KEY, signing_key=KEY2, operator_token=token)
    return Console(s, seeded.db, broker_timeout_s=1.0)


@pytest.fixture(scope="module")
def prod(seeded: Seeded) -> Iterator[Console]:
    c = _prod(seeded)
    yield c
    c.close()


def _reads(seeded: Seeded) -> list[str]:
    rid = seeded.releases["S1"]
    return ["/", "/releases", f"/releases/{rid}", f"/releases/{rid}/plots/class_sizes.svg", "/health", "/audit",
            "/api", "/api/releases", f"/api/releases/{rid}", f"/api/releases/{rid}/front", "/api/health",
            "/api/windows", "/api/stations", "/api/audit", "/nope"]


def test_every_page_needs_the_token_in_production(prod: Console, seeded: Seeded) -> None:
    prod.forget_wrong_tokens()
    for path in _reads(seeded):
        status, headers, _ = prod.call("GET", path, headers={"Accept": "text/html"})
        if path.startswith("/api"):
            assert status == 401 and headers["WWW-Authenticate"].startswith("Bearer"), path
        else:
            assert status in (303, 200), path  # urllib follows the redirect to the sign-in form
            assert prod.call("GET", path)[2].count('name=token') == 1, path
        assert prod.call("GET", path, token=PROD_TOKEN)[0] in (200, 302, 404, 503), path  # 503: /health, a held window
    assert prod.call("GET", "/api/health", token="wrong-token-but-long-enough")[0] == 403
    # controls need it as before
    assert prod.call("POST", "/api/stations/S9/pause")[0] == 401


def test_a_browser_signs_in_once_with_a_session_cookie(prod: Console) -> None:
    prod.forget_wrong_tokens()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor())
    data = f"token={quote(PROD_TOKEN)}&next=/audit".encode()  # (/health answers 503 while a window is held)
    with opener.open(urllib.request.Request(prod.url + "/login", data=data, method="POST"), timeout=60) as resp:
        page = resp.read().decode()
        assert resp.status == 200 and resp.url.endswith("/audit") and "Audit trail" in page
        assert ">operator<" in page  # the session cookie makes the reader the operator
    with opener.open(prod.url + "/api/releases", timeout=60) as resp:
        assert resp.status == 200
    bad = f"token=wrong&next={quote('//evil.example/')}".encode()
    try:
        opener.open(urllib.request.Request(prod.url + "/login", data=bad, method="POST"), timeout=60)
        raise AssertionError("a wrong token signed in")
    except urllib.error.HTTPError as exc:
        assert exc.code == 403
    assert safe_next("//evil.example/") == "/releases" and safe_next("/audit?limit=5") == "/audit?limit=5"


def test_production_without_a_token_configured_serves_nothing(seeded: Seeded) -> None:
    with _prod(seeded, token=None) as c:
        for path in ("/api/releases", "/releases", "/api/health"):
            assert c.call("GET", path, token="anything")[0] == 403


def test_wrong_tokens_are_slowed_down_per_client_and_logged(seeded: Seeded, caplog: pytest.LogCaptureFixture) -> None:
    guard = TokenGuard(seeded.settings.with_updates(operator_token=PROD_TOKEN), free=3, base_s=0.0)
    assert [TokenGuard(seeded.settings, free=3, base_s=0.5, cap_s=30).delay_for(n) for n in range(1, 12)] == \
        [0, 0, 0, 0.5, 1, 2, 4, 8, 16, 30, 30]

    async def attempts() -> None:
        for _ in range(10):
            with pytest.raises(WrongToken):
                await guard.check("10.0.0.9", "guess")
        await guard.check("10.0.0.1", PROD_TOKEN)  # another client is not penalized

    with caplog.at_level(logging.WARNING, logger="stream.console.auth"):
        asyncio.run(attempts())
    assert guard._clients["10.0.0.9"].failures == 10 and guard._clients["10.0.0.1"].failures == 0
    lines = [r.getMessage() for r in caplog.records if "wrong operator token from 10.0.0.9" in r.getMessage()]
    assert len(lines) == 1  # logged once, then counted (one line per interval)
    asyncio.run(guard.check("10.0.0.9", PROD_TOKEN))
    assert guard._clients["10.0.0.9"].failures == 0


BAD_INPUTS = [
    ("GET", "/api/releases?until=9999-12-31", {}),  # was a 500: OverflowError at the end of the calendar
    ("GET", "/releases?since=0001-01-01T00:00:00%2B05:00", {}),  # was a 500, without a token
    ("GET", "/api/releases?station=%00", {}), ("GET", "/api/releases/%00", {}), ("GET", "/api/audit?limit=x", {}),
    ("GET", "/api/releases?limit=1e9", {}), ("GET", "/api/windows?state=%01", {}),
    ("POST", "/api/stations/S1/pause", {"Content-Type": "multipart/form-data"}),  # was a 500: no boundary
    ("POST", "/api/stations/S1/pause", {"Authorization": "Bearer \u00e9\u00ff"}),  # was a 500: not UTF-8
    ("POST", "/api/stations/%00/pause", {}),
]


@pytest.mark.parametrize(("method", "path", "headers"), BAD_INPUTS)
def test_bad_input_gets_a_clean_4xx(console: Console, method: str, path: str, headers: dict[str, str]) -> None:
    console.forget_wrong_tokens()
    from tests.stream.console.seed import TOKEN

    hdrs = {"Authorization": f"Bearer {TOKEN}", **headers}
    status, _h, body = console.call(method, path, headers=hdrs)
    assert 400 <= status < 500 and "Traceback" not in body, (path, status, body[:200])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(["since", "until", "limit", "offset", "station", "engine", "state"]),
       st.text(max_size=40))
def test_no_query_value_gives_a_server_error(console: Console, name: str, value: str) -> None:
    path = "/api/windows" if name == "state" else "/api/releases"
    status, _h, _body = console.call("GET", f"{path}?{name}={quote(value)}")
    assert status < 500 or status == 503, (name, value, status)
