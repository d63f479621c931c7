"""The console says what the linking guard blocked and why, and never calls co-offenders blocked."""

from __future__ import annotations

from stream.console.linking import blocked_text, linking_section


def test_a_release_page_names_each_rule_and_why() -> None:
    text = blocked_text({"blocked": 7, "blocked_report": 2, "blocked_content": 5, "blocked_person": 0})
    assert text.startswith("7 (") and "report 2: the same report (station and report id)" in text
    assert "content 5: same content as an already released report (a re-send)" in text
    assert "person" not in text
    assert blocked_text({"blocked": 0}) == "0"


def test_the_health_page_counts_blocked_reports_per_rule() -> None:
    counters = [{"kind": "link-guard", "reason": "content", "count": 60, "station": "S2"},
                {"kind": "link-guard", "reason": "content", "count": 4, "station": "S3"},
                {"kind": "duplicate", "reason": "duplicate", "count": 9, "station": "S1"}]
    html = linking_section(counters)
    assert "<td>content</td><td class=num>64</td>" in html and "a re-send" in html
    assert "duplicate" not in html
    empty = linking_section([])
    assert "nothing blocked" in empty and "co-offenders" in empty
