"""Every console page in a real browser (headless Chromium): the verdict banner and the Health badge are on
every page while a window is held and on none while the deployment is healthy; a reader sees no control, an
operator signed in sees them. Screenshots of each page go to tests/artifacts/console-pages/ (git-ignored) and
their paths are printed."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.stream.console.conftest import Console
from tests.stream.console.days import build_days
from tests.stream.console.seed import TOKEN, make_held

pytestmark = [pytest.mark.browser, pytest.mark.slow]
ARTIFACTS = Path(__file__).resolve().parents[3] / "tests" / "artifacts" / "console-pages"


def _pages(rid: str, window: str) -> dict[str, str]:
    """Every console page (the sign-off documents aside), with one release and one window."""
    return {"overview": "/", "releases": "/releases", "release": f"/releases/{rid}", "health": "/health",
            "windows": "/windows?state=held,carried,released", "window": f"/windows/{quote(window, safe='')}",
            "budget": "/budget", "audit": "/audit", "signoff": "/signoff?since=2024-04-01&until=2024-04-04"}


@pytest.mark.timeout(600)
def test_banner_badge_and_controls_on_every_page(tmp_path: Path) -> None:
    from db.status import heartbeat
    from tests.stream.console.webdriver import WebDriver, ensure_chromium

    chromium, driver = ensure_chromium()
    days = build_days(f"sqlite:///{tmp_path / 'ledger.db'}", tmp_path, held=False)  # nothing waits: healthy
    console = Console(days.seeded.settings, days.seeded.db, broker_timeout_s=2.0)
    browser = WebDriver(chromium, driver)
    shots: list[Path] = []

    def visit(name: str, path: str) -> None:
        heartbeat(days.seeded.db, "worker-a", datetime.now(UTC), [0])  # a live worker beats (this process's pid)
        browser.get(console.url + path)
        assert "Error" not in browser.title(), (path, browser.title())
        shots.append(ARTIFACTS / f"{name}.png")
        browser.screenshot(shots[-1])

    rid = days.releases[("S1", "2024-04-01")]
    try:
        released_window = console.get_json(f"/api/releases/{rid}")["window"]["id"]
        for name, path in _pages(rid, released_window).items():  # healthy: no banner, no badge, no control for a reader
            visit(f"healthy-{name}", path)
            assert not browser.find_all("#banner") and not browser.find_all(".badge"), path
            assert not browser.find_all("input[name=token]") and not browser.find_all("form[method=post]"), path
        visit("healthy-landing", "/")
        assert browser.text(browser.find_all("b.verdict-line")[0]).startswith("HEALTHY")

        held = make_held(days.seeded, "H9")  # a window the engine refused: the verdict turns to action
        for name, path in _pages(rid, held).items():
            visit(f"held-{name}", path)
            (banner,) = browser.find_all("#banner")
            assert held in browser.text(banner) and "release after review" in browser.text(banner), path
            assert browser.text(browser.find_all("a.health-link .badge")[0]) == "1", path
            assert not browser.find_all("input[name=token]"), path  # a reader still sees no control
        visit("held-landing", "/")  # the landing page opens with the verdict, above any release
        line = browser.text(browser.find_all("b.verdict-line")[0])
        assert line.startswith(f"ACTION NEEDED: window {held} held"), line
        assert browser.script("return document.querySelector('#verdict').getBoundingClientRect().top < "
                              "document.querySelector('table.releases').getBoundingClientRect().top")

        # the operator signs in (the session cookie): the held window's release form appears, with its token box
        browser.get(f"{console.url}/login?next=/windows/{quote(held, safe='')}")
        browser.script("document.querySelector('input[name=token]').value = arguments[0];"
                       "document.querySelector('form').submit();", TOKEN)
        browser.get(f"{console.url}/windows/{quote(held, safe='')}")
        assert browser.find_all(f"form[action='/api/windows/{quote(held, safe='')}/release'] input[name=token]")
        visit("operator-window", f"/windows/{quote(held, safe='')}")
        visit("operator-health", "/health")
        assert browser.find_all("table.held form") and browser.find_all("table.pool form")
        docs = {"release-signoff": f"/releases/{rid}/report",
                "period-signoff": "/signoff/report?since=2024-04-01&until=2024-04-04"}
        for name, path in docs.items():  # documents to archive: no live banner in them
            visit(name, path)
            assert "Sign-off report" in browser.title() and not browser.find_all("#banner")
        for shot in shots:
            assert shot.stat().st_size > 10_000, shot
            print(f"screenshot: {path}")
    finally:
        browser.close()
        console.close()
        days.seeded.db.dispose()
