"""``anonstream status`` names the releases whose counts a privacy-budget cap refused."""

from __future__ import annotations

from stream.cli.status import _budget_line


def test_budget_line_counts_refusals_per_station() -> None:
    h = {"duplicates": [{"kind": "dp-refused", "station": "S1", "reason": "budget-cap", "count": 2},
                        {"kind": "dp-refused", "station": "", "reason": "budget-cap", "count": 1},
                        {"kind": "duplicate", "station": "S1", "reason": "duplicate", "count": 9}]}
    line = _budget_line(h)
    assert line.startswith("budget    3 release(s) went out without counts")
    assert "(feed) 1, S1 2" in line and "/budget" in line
