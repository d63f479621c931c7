"""The sign-off report (``releases report`` and the console's button) and the health page's verdict, in a
real browser (headless Chromium): screenshots go to the test's tmp_path and their paths are printed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from stream.cli.main import main
from tests.stream.console.conftest import Console
from tests.stream.console.seed import TOKEN, Seeded, build


def test_releases_report_writes_one_self_contained_page(seeded: Seeded, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    rid = seeded.releases["S1"]
    out = tmp_path / "signoff.html"
    assert main(["releases", "report", rid, "--out", str(out), "--database", seeded.settings.db_url()]) == 0
    assert str(out) in capsys.readouterr().out
    page = out.read_text()
    for part in ("What was released", "crime-reports", "mondrian", "independent verifier", "passed", "Utility",
                 "linking guard", "differentially private counts", "spent of", "Expected:", "key id", "ed25519",
                 "Sign-off", "Preserves"):  # the utility report in words (the codebook's paragraph)
        assert part in page, part
    assert "<script" not in page and "http" not in page.split("</style>", 1)[1]  # nothing loaded from elsewhere
    assert "{'" not in page and "': " not in page  # no Python repr of a dict
    assert main(["releases", "report", "r-nope", "--out", str(out), "--database", seeded.settings.db_url()]) == 2
    assert main(["releases", "report", rid, "--out", str(tmp_path / "no" / "x.html"),
                 "--database", seeded.settings.db_url()]) == 2


def test_console_links_the_report_and_flags_only_act_warnings(console: Console, seeded: Seeded) -> None:
    rid = seeded.releases["S1"]
    status, _h, body = console.call("GET", f"/releases/{rid}")
    assert status == 200 and f'href="/releases/{rid}/report"' in body
    assert "expected for this engine and these settings" in body and "title=" in body  # the why, on hover
    status, _h, body = console.call("GET", f"/releases/{rid}/report")
    assert status == 200 and "Sign-off report" in body and seeded.settings.spec != ""
    listing = console.get_json("/api/releases")["releases"]
    assert all(r["act"] == "" for r in listing)  # mondrian's severity warning is expected, not an act
    status, _h, body = console.call("GET", "/health")
    assert 'class="verdict act"' in body and body.index("verdict") < body.index("<h2>Worker</h2>")
    assert body.index("Held windows") < body.index("<h2>Worker</h2>")  # held windows above the fold


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_report_and_health_in_chromium(tmp_path: Path) -> None:
    from sqlalchemy import update

    from db.models import DlqEvent
    from db.status import heartbeat
    from tests.stream.console.webdriver import WebDriver, ensure_chromium

    chromium, driver = ensure_chromium()
    seeded = build(f"sqlite:///{tmp_path / 'ledger.db'}", tmp_path, pbg=False)
    console = Console(seeded.settings, seeded.db, broker_timeout_s=2.0)
    browser = WebDriver(chromium, driver)
    shots = {}
    try:
        rid = seeded.releases["S1"]
        browser.get(f"{console.url}/releases/{rid}")
        (link,) = browser.find_all("a.report-link")
        browser.click(link)
        assert "Sign-off report" in browser.title()
        assert browser.text(browser.find_all("b.k")[0]) == "5"
        assert browser.text(browser.find_all(".verified")[0]) == "passed"
        shots["report"] = tmp_path / "signoff-report.png"
        browser.screenshot(shots["report"])

        heartbeat(seeded.db, "worker-a", datetime.now(UTC), [0, 1])  # a live worker: the held window leads
        browser.get(f"{console.url}/health")  # a held window (the seeded H1) and fresh dead letters
        line = browser.text(browser.find_all("b.verdict-line")[0])
        assert line.startswith(f"ACTION NEEDED: window {seeded.held_window} held") and "release after review" in line
        shots["health-held"] = tmp_path / "health-held.png"
        browser.screenshot(shots["health-held"])

        # the operator carries the held window (the console's own control); the dead letters are an hour old
        status, _h, text = console.call("POST", f"/api/windows/{seeded.held_window}/release", token=TOKEN,
                                        form={"mode": "carry", "actor": "test"})
        assert status == 200, text
        with seeded.db.unit() as s:
            s.execute(update(DlqEvent).values(at=datetime.now(UTC) - timedelta(hours=1)))
        # a worker that stopped 40 minutes ago (its last heartbeat in the ledger): act, exit 5
        heartbeat(seeded.db, "worker-a", datetime.now(UTC) - timedelta(minutes=40), [0, 1])
        browser.get(f"{console.url}/health")
        line = browser.text(browser.find_all("b.verdict-line")[0])
        assert line.startswith("ACTION NEEDED: no worker running since "), line
        assert "(40 min ago: last heartbeat, worker-a)" in line, line
        shots["health-dead-worker"] = tmp_path / "health-dead-worker.png"
        browser.screenshot(shots["health-dead-worker"])
        url = seeded.settings.db_url()
        assert main(["status", "--database", url]) == 5
        # the worker beats again: healthy, exit 0
        heartbeat(seeded.db, "worker-a", datetime.now(UTC), [0, 1])
        browser.get(f"{console.url}/health")
        line = browser.text(browser.find_all("b.verdict-line")[0])
        assert line.startswith("HEALTHY: worker running, no held window"), line
        assert main(["status", "--database", url]) == 0
        shots["health-healthy"] = tmp_path / "health-healthy.png"
        browser.screenshot(shots["health-healthy"])
        for name, path in shots.items():
            assert path.stat().st_size > 10_000
            print(f"screenshot {name}: {path}")
    finally:
        browser.close()
        console.close()
        seeded.db.dispose()
