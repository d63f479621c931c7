"""The verdict both /health and `status` open with, and the split of release warnings into expected / act."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from stream.console.release_warnings import classify, needs_action
from stream.console.verdict import EXIT_BROKER, EXIT_DLQ, EXIT_HELD, EXIT_LAG, EXIT_WORKER, Verdict, verdict

NOW = datetime(2026, 1, 1, 3, 0, tzinfo=UTC)


def _health(**over: Any) -> dict[str, Any]:
    h: dict[str, Any] = {
        "worker": {"status": "running", "heartbeats": [{"worker": "w1", "heartbeat_age_s": 3.0, "alive": True,
                                                       "state": "alive"}]},
        "pool": {"pending_total": 0}, "windows": {"held": [], "carried": []},
        "lag": {"total": 0, "topic": "crime.reports", "error": None}, "dlq": {"recent": []}}
    h.update(over)
    return h


def test_healthy() -> None:
    v = verdict(_health(), NOW)
    assert v.ok and v.code == 0 and v.reasons == [] and v.line.startswith("HEALTHY: worker running")
    assert Verdict.from_dict(v.as_dict()) == v


def test_a_dead_worker_says_since_when_and_comes_first() -> None:
    held = {"held": [{"id": "station:S1|2026-01-01|0", "reason": "verification failed: highest prosecutor risk is "
                      "0.5000 (a class of 2 rows), requirement max_risk=0.2", "count": 40,
                      "closed_at": (NOW - timedelta(hours=2)).isoformat()}], "carried": []}
    v = verdict(_health(worker={"status": "dead", "heartbeats": [{"worker": "w1", "heartbeat_age_s": 5400.0,
                                                                  "alive": False, "state": "stale"}]},
                        pool={"pending_total": 12}, windows=held), NOW)
    assert v.code == EXIT_WORKER and [f.check for f in v.findings] == ["worker", "held"] and v.settled
    assert "no worker running since 2026-01-01 01:30 UTC (90 min ago: last heartbeat, w1); 12 report(s) wait" \
        in v.line
    assert "release refused by the risk bound (max_risk)" in v.findings[1].what
    assert "`ANONSTREAM_PRIVACY__K` to at least 5" in v.findings[1].action and "restart the worker" in \
        v.findings[1].action
    assert "release after review" in v.findings[1].action and v.findings[1].code == EXIT_HELD
    assert [r[0] for r in v.reasons] == [f.what for f in v.findings]


def test_a_stopped_or_killed_worker_is_seen_by_its_own_row() -> None:
    stopped = {"status": "stopped", "heartbeats": [{"worker": "w1", "heartbeat_age_s": 2.0, "alive": False,
                                                    "state": "stopped"}]}
    v = verdict(_health(worker=stopped), NOW)
    assert v.code == EXIT_WORKER and "2 s ago: stopped cleanly, w1" in v.line and "for why" not in v.line
    gone = {"status": "dead", "heartbeats": [{"worker": "w1", "heartbeat_age_s": 1.0, "alive": False,
                                              "state": "gone"}], "group": {"members": 1}}
    v = verdict(_health(worker=gone), NOW)
    assert v.code == EXIT_WORKER and "its process is gone" in v.line  # a group member does not make it alive


def test_a_broker_that_does_not_answer_is_code_3() -> None:
    broker = {"url": "kafka://127.0.0.1:9", "error": "127.0.0.1:9: Connection refused"}
    v = verdict(_health(broker=broker, lag={"error": "broker kafka://127.0.0.1:9 does not answer"}), NOW)
    assert v.code == EXIT_BROKER and v.settled and "broker kafka://127.0.0.1:9 does not answer" in v.line
    assert "no broker configured" not in v.line


def test_lag_and_dead_letters() -> None:
    v = verdict(_health(lag={"total": 5000, "topic": "crime.reports", "error": None}), NOW)
    assert v.code == EXIT_LAG and "5000 report(s) behind crime.reports" in v.line
    recent = [{"at": (NOW - timedelta(minutes=3)).isoformat(), "station": "S9", "reason": "unknown-station"}]
    v = verdict(_health(dlq={"recent": recent}), NOW)
    assert v.code == EXIT_DLQ and "anonstream stations add S9" in v.line
    old = [{"at": (NOW - timedelta(hours=3)).isoformat(), "station": "S9", "reason": "unknown-station"}]
    assert verdict(_health(dlq={"recent": old}), NOW).healthy


def test_a_new_ledger_is_not_a_dead_worker_unless_reports_wait() -> None:
    none = {"status": "none", "heartbeats": []}
    v = verdict(_health(worker=none, lag={"error": "no broker configured"}), NOW)
    assert v.ok and "no worker has run on this ledger yet" in v.line and "worker running" not in v.line
    v = verdict(_health(worker=none, pool={"pending_total": 3}), NOW)
    assert v.code == EXIT_WORKER and "3 report(s) wait" in v.line


def _manifest(engine: str, warnings: list[str], **params: Any) -> dict[str, Any]:
    diag = {"cap": 20, "k_min": 5} if engine.startswith("cg") else {}
    return {"engine": engine, "params": {"k": 5, **params}, "diagnostics": diag,
            "privacy": {"risk": {"threshold": 0.2, "warnings": warnings, "attribute": {"sensitive": "offence"}}}}


def test_cg_kanon_warnings_are_expected_and_say_why() -> None:
    m = _manifest("cg-kanon", ["7 severe record(s) sit in classes smaller than their severity",
                               "2 class(es) holding 10 record(s) are homogeneous in 'offence': placing a person in "
                               "one reveals the value"])
    ws = classify(m)
    assert [w["kind"] for w in ws] == ["expected", "expected"] and not needs_action(m)
    assert "cap_factor × k = 20" in ws[0]["why"] and "Murder" in ws[0]["why"]
    assert "no ℓ-diversity was required" in ws[1]["why"]


def test_warnings_to_act_on() -> None:
    homogeneous = "1 class(es) holding 5 record(s) are homogeneous in 'offence': placing a person in one reveals"
    assert classify(_manifest("mondrian", [homogeneous], l=2))[0]["kind"] == "act"
    (w,) = classify(_manifest("mondrian", ["12.0% of records have a prosecutor risk above 0.2"], k=3))
    assert w["kind"] == "act" and "Raise k to at least 5" in w["why"]


def test_the_releases_list_flags_act_warnings() -> None:
    from stream.console.pages import releases_page

    row = {"id": "r-1", "created_at": "2026-01-01T00:00:00", "window": {"key": "station:S1", "start": None, "seq": 0},
           "feed": "default", "stations": ["S1"], "engine": "mondrian", "k": 3, "l": None, "information_loss": 0.3,
           "released": 10, "suppressed": 0, "held_back": 0, "state": "published",
           "act": "12.0% of records have a prosecutor risk above 0.2"}
    data = {"filter": {"station": None, "feed": None}, "stations": [], "feeds": [], "total": 2,
            "releases": [row, {**row, "id": "r-2", "act": ""}]}
    html = releases_page(data)
    assert html.count("⚠ act") == 1 and 'title="12.0% of records' in html
