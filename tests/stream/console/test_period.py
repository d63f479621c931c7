"""Sign-off for a period: ``anonstream releases report --since D --until D`` and the console's ``/signoff`` give
one document for every window of those days, checked against what was sent (days.py) and the ledger's own
budget spends."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from stream.cli.main import main
from tests.stream.console.conftest import Console
from tests.stream.console.days import DAYS, Days, K, build_days

SINCE, UNTIL = "2024-04-02", "2024-04-03"
IN_PERIOD = {d.date().isoformat() for d in DAYS[1:3]}


@pytest.fixture(scope="module")
def days(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Days]:
    root = tmp_path_factory.mktemp("console-days")
    d = build_days(f"sqlite:///{root / 'ledger.db'}", root)
    yield d
    d.seeded.db.dispose()


def _oracle(days: Days) -> dict[str, Any]:
    """What the period must say, from the input sent and the ledger's spends (not from the report's code)."""
    from db.budget import BudgetSpend
    from db.models import Release

    ids = {rid for (st, day), rid in days.releases.items() if day in IN_PERIOD}
    with days.seeded.db.unit() as s:
        rows = {r.id: r for r in s.execute(select(Release).where(Release.id.in_(ids))).scalars()}
        spends = s.execute(select(BudgetSpend).where(BudgetSpend.release_id.in_(ids))).scalars().all()
    spent: dict[str, float] = {}
    for sp in spends:
        spent[sp.block] = spent.get(sp.block, 0.0) + sp.rho
    received = sum(n for (st, day), n in days.inputs.items() if day in IN_PERIOD and st in K)
    return {"ids": ids, "received": received, "rows": rows, "spent": spent,
            "blocks": {f"station:{st}/day:{day}" for st in K for day in IN_PERIOD}}


def test_period_data_matches_the_input_and_the_ledger(days: Days) -> None:
    from stream.console.period import parse_day, period_data
    from stream.console.service import ConsoleService

    oracle = _oracle(days)
    p = period_data(ConsoleService(days.seeded.settings, days.seeded.db), parse_day(SINCE, "s"), parse_day(UNTIL, "u"))
    t = p["totals"]
    assert {r["id"] for r in p["releases"]} == oracle["ids"] and t["releases"] == 6
    assert t["received"] == oracle["received"]  # every report sent on those days by S1-S3, nothing else
    for r in p["releases"]:
        station = r["stations"][0]
        assert r["received"] == days.inputs[(station, r["day"])]
        assert r["released"] + r["suppressed"] + r["held_back"] + r["blocked"] == r["received"]
        q = r["requirements"]
        assert q["k_asked"] == K[station] and q["k"] == oracle["rows"][r["id"]].k_achieved >= K[station]
        assert q["verified"] and q["met"]
        assert r["dp"]["spent"] == {f"station:{station}/day:{r['day']}": pytest.approx(r["dp"]["rho"])}
    assert t["requirements_met"] == 6 and t["stations"] == sorted(K)
    assert {b["block"] for b in p["budget"]} == oracle["blocks"]
    for b in p["budget"]:
        assert b["spent_rho"] == pytest.approx(oracle["spent"][b["block"]]) and b["spent_rho"] <= b["cap_rho"]
    (h1,) = [w for w in p["held"] if w["state"] == "held"]
    (t1,) = [w for w in p["held"] if w["state"] == "carried"]
    assert h1["id"] == days.held[("H1", SINCE)] and h1["count"] == 20 and "unknown parameter" in h1["reason"]
    assert t1["id"] == days.carried[("T1", UNTIL)] and t1["count"] == 3
    assert (t["held_windows"], t["held_reports"], t["carried_windows"]) == (1, 20, 1)
    one_day = period_data(ConsoleService(days.seeded.settings, days.seeded.db), DAYS[0].date(), DAYS[0].date())
    assert {r["id"] for r in one_day["releases"]} == {days.releases[(st, "2024-04-01")] for st in K}
    assert one_day["held"] == [] and one_day["totals"]["held_windows"] == 0


def test_the_cli_writes_one_document_for_the_period(days: Days, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    oracle = _oracle(days)
    url = days.seeded.settings.db_url()
    out = tmp_path / "period.html"
    assert main(["releases", "report", "--since", SINCE, "--until", UNTIL, "--out", str(out), "--database", url]) == 0
    assert "6 release(s), 6 meeting their requirements, 1 held window(s)" in capsys.readouterr().out
    page = out.read_text()
    assert set(re.findall(r"r-[0-9a-f]{22}", page)) == oracle["ids"]  # every release of the period, no other
    assert f'class=received-total>{oracle["received"]}<' in page and days.held[("H1", SINCE)] in page
    assert "<script" not in page and "http" not in page.split("</style>", 1)[1] and "{'" not in page
    assert "ε 1.00" in page  # each release's ρ as ε at the ledger's δ, 3 significant digits
    data = tmp_path / "period.json"
    assert main(["releases", "report", "--since", SINCE, "--until", UNTIL, "--out", str(data), "--database", url]) == 0
    assert {r["id"] for r in json.loads(data.read_text())["releases"]} == oracle["ids"]
    md = tmp_path / "period.md"
    assert main(["releases", "report", "--since", SINCE, "--until", UNTIL, "--out", str(md), "--database", url]) == 0
    assert md.read_text().count("| 2024-04-0") == 6 and "unknown parameter" in md.read_text()
    for bad in (["--since", UNTIL, "--until", SINCE], ["--since", SINCE], ["--since", "04/02/2024", "--until", UNTIL],
                ["latest", "--since", SINCE, "--until", UNTIL], []):
        assert main(["releases", "report", *bad, "--out", str(out), "--database", url]) == 2, bad


def test_the_console_signoff_page_and_document(days: Days) -> None:
    oracle = _oracle(days)
    console = Console(days.seeded.settings, days.seeded.db, broker_timeout_s=2.0)
    try:
        status, _h, page = console.call("GET", "/signoff")
        assert status == 200 and 'action="/signoff/report"' in page and 'id=banner' in page  # H1 is held
        status, _h, page = console.call("GET", f"/signoff?since={SINCE}&until={UNTIL}")
        assert status == 200 and "6 release(s)" in page and "class=signoff-link" in page
        status, _h, doc = console.call("GET", f"/signoff/report?since={SINCE}&until={UNTIL}")
        assert status == 200 and set(re.findall(r"r-[0-9a-f]{22}", doc)) == oracle["ids"]
        api = console.get_json(f"/api/signoff?since={SINCE}&until={UNTIL}")
        assert api["totals"]["received"] == oracle["received"] and api["totals"]["held_windows"] == 1
        assert console.call("GET", f"/api/signoff?since={SINCE}")[0] == 400
        assert console.call("GET", f"/signoff/report?since={UNTIL}&until={SINCE}")[0] == 400
    finally:
        console.close()
