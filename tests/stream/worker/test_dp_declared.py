"""A release's counts depend on its windows, never on one report: the blocks it charges are the days its
windows declare, a late report of an exhausted day changes nothing of them, and what would break the
guarantee (a re-drawn sample, a person unit without fingerprints, other person columns, a ledger whose
policy disagrees) stops the worker at start-up with one line."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from core.errors import ParamsError
from db import PoolRepository
from db.budget import charge, remaining
from db.dp_policy import read_policy
from stream.io.specs import load_schema
from stream.testing.reports import DAY, day_of_reports, ingest_reports
from stream.worker import dpcounts
from stream.worker.release import window_policy
from tests.stream.worker.test_dpcounts import KEY, NOW, _ledger, _manifest, _spec

EXHAUSTED = f"station:S1/day:{(DAY - timedelta(days=1)).date().isoformat()}"


def _late_report(seed: int) -> dict[str, object]:
    """One report of S1 dated the day before the generated day (a late report of an exhausted day)."""
    late = day_of_reports(1, 1, seed=seed, day=DAY - timedelta(days=1))["S1"][0]
    return {**late, "report_id": f"late-{seed}"}


def _release(tmp: Path, late: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, Any], list[Any]]:
    """The dp section of the generated day's release (with one late report of an exhausted day, or
    without), and the exact counts its tables were drawn from."""
    tmp.mkdir()
    settings, db, orch = _ledger(tmp, _spec(tmp))
    exact: list[Any] = []
    real = dpcounts.count_tables

    def spy(frame: Any, *args: Any, **kwargs: Any) -> Any:
        exact.append(frame.drop(columns=[dpcounts.PERSON, dpcounts.BLOCK]).value_counts(dropna=False).sort_index())
        return real(frame, *args, **kwargs)

    monkeypatch.setattr(dpcounts, "count_tables", spy)
    try:
        with db.unit() as s:  # the day before is exhausted
            charge(s, [EXHAUSTED], 5.0, 5.0, purpose="exhausted", now=NOW)
        if late:  # its own window of the exhausted day is too small: carried into the day's window
            result = ingest_reports(settings, PoolRepository(db, window_policy(settings)), [_late_report(5)], NOW,
                                    KEY.encode())
            (late_window,) = result.windows
            assert orch.close_window(late_window, "due", NOW + timedelta(minutes=5)) is None
        rids = orch.close_due(NOW + timedelta(minutes=5))
        (dp,) = [m["dp"] for m in (_manifest(db, r) for r in rids) if m["counts"]["released"] >= 100]
        with db.read() as s:
            never_charged: Any = (pytest.approx(5.0), pytest.approx(5.0))  # approx in a tuple: Any for mypy
            assert remaining(s, [EXHAUSTED])[EXHAUSTED] == never_charged
        return dp, exact
    finally:
        db.dispose()


def test_a_late_report_of_an_exhausted_day_does_not_change_the_windows_counts(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    quiet, quiet_exact = _release(tmp_path / "a", False, monkeypatch)
    loud, loud_exact = _release(tmp_path / "b", True, monkeypatch)
    assert quiet["refused"] is None and loud["refused"] is None  # counts either way (they used to be refused)
    assert [b["block"] for b in loud["blocks"]] == [b["block"] for b in quiet["blocks"]] == [
        f"station:S1/day:{DAY.date().isoformat()}"]
    assert [t["groups"] for t in loud["tables"]] == [t["groups"] for t in quiet["tables"]]  # same public cells
    assert loud["days"] == quiet["days"] == [DAY.date().isoformat()] * 2
    assert quiet_exact[-1].equals(loud_exact[-1])  # the very same exact counts under the noise
    assert (quiet["not_counted"], loud["not_counted"]) == (0, 1)  # the late report is in the release, not counted
    assert EXHAUSTED not in str(loud)  # the late report's day is named nowhere


@pytest.mark.parametrize(("updates", "words"), [
    ({"sample_policy": "fraction", "sample_fraction": 0.5}, "need sample_policy = all"),
    ({"sample_policy": "max", "sample_max": 100}, "need sample_policy = all"),
])
def test_a_sample_that_is_drawn_again_is_refused_at_start_up(tmp_path: Path, updates: dict[str, Any],
                                                            words: str) -> None:
    settings, db, _orch = _ledger(tmp_path, _spec(tmp_path))
    try:
        with pytest.raises(ParamsError, match=words):
            dpcounts.check_counts(load_schema(settings.spec), settings.with_updates(**updates), db)
    finally:
        db.dispose()


def test_person_counts_need_every_reports_fingerprint_and_the_streams_person(tmp_path: Path) -> None:
    settings, db, _orch = _ledger(tmp_path, _spec(tmp_path, person=True))
    schema = load_schema(settings.spec)
    try:
        with pytest.raises(ParamsError, match="person fingerprint"):
            dpcounts.check_counts(schema, settings.with_updates(link_guard="off"), db)
        with pytest.raises(ParamsError, match="not the stream's person columns"):
            dpcounts.check_counts(schema, settings.with_updates(person_columns=["name"]), db)
        dpcounts.check_counts(schema, settings, db)
    finally:
        db.dispose()


def test_the_worker_records_the_policy_and_refuses_another(tmp_path: Path) -> None:
    settings, db, _orch = _ledger(tmp_path, _spec(tmp_path))  # the orchestrator recorded it at start-up
    try:
        with db.read() as s:
            policy = read_policy(s)
        assert policy is not None and policy.block_by == "station-day" and policy.cap_epsilon == 10.0
        other = load_schema(_spec(tmp_path, cap_epsilon=50.0))
        with pytest.raises(ParamsError, match=r"cap_epsilon 50 \(the ledger's: 10\)"):
            dpcounts.check_counts(other, settings, db)
    finally:
        db.dispose()
