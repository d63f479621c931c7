"""The console's privacy budget: each block's odometer on /budget, a release's counts with intervals."""

from __future__ import annotations

from stream.console.budget import counts_section, odometer
from tests.stream.console.conftest import Console
from tests.stream.console.seed import Seeded


def test_odometer_fills_with_the_share_spent() -> None:
    assert "width:25.0%" in odometer(4.0, 1.0) and "ρ 3 left" in odometer(4.0, 1.0)
    assert "width:100.0%" in odometer(1.0, 2.0) and "#b3261e" in odometer(1.0, 2.0)


def test_counts_section_shows_each_cell_with_its_interval() -> None:
    dp = {"mechanism": "gaussian", "epsilon": 1.0, "delta": 1e-6, "rho": 0.02, "unit": "report", "refused": None,
          "tables": [{"by": ["offence"], "groups": [["Theft"], ["<b>x</b>"]], "counts": [12, 0], "ci95": 5.0}],
          "blocks": [{"block": "station:S1/day:2026-11-20", "cap_rho": 0.2, "spent_rho": 0.02}]}
    html = counts_section({"dp": dp})
    assert "Theft" in html and "± 5.0" in html and "&lt;b&gt;x" in html and "station:S1/day:2026-11-20" in html
    refused = counts_section({"dp": {**dp, "tables": [], "refused": {"message": "block B would be exceeded"}}})
    assert "counts refused: block B would be exceeded" in refused
    assert counts_section({}) == ""


def test_budget_page_and_release_counts_from_the_ledger(console: Console, seeded: Seeded) -> None:
    data = console.get_json("/api/budget")
    blocks = {b["block"] for b in data["blocks"]}
    assert {f"station:{s}/day:2024-03-01" for s in ("S1", "S2", "S3")} <= blocks
    assert all(0 < b["spent_rho"] <= b["cap_rho"] for b in data["blocks"])
    status, _h, html = console.call("GET", "/budget")
    assert status == 200 and "class=odometer" in html and "station:S1/day:2024-03-01" in html
    status, _h, html = console.call("GET", f"/releases/{seeded.releases['S1']}")
    assert status == 200 and "Differentially private counts" in html and "95 % interval" in html
