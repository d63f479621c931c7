"""Fair scheduling under a flood of tiny windows (stream/worker/scheduling.py, db/small_windows.py).

Thousands of one-report windows (invented station ids) are carried in bulk, in a bounded number of
statements, before any window is claimed, and the genuine station's window is the first claimed. The bulk
path closes windows exactly as the one-by-one release path does (states, hold reasons, where every
pending report waits). Counts and order only: nothing here depends on timing.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr
from sqlalchemy import event, select

import migrations
from db import Database, PoolRepository, due_windows
from db.models import PendingReport, Watermark, Window
from db.windows import WindowPolicy
from stream.config.privacy import StreamPrivacy
from stream.config.settings import Settings
from stream.io.specs import load_schema
from stream.testing.reports import day_of_reports, ingest_reports, spec_ref
from stream.worker.release import Orchestrator

NOW = datetime(2024, 3, 2, 12, tzinfo=UTC)
LATER = NOW + timedelta(days=1)  # every window idle by then: due


def _settings(tmp_path: Path, name: str) -> tuple[Settings, Database]:
    url = f"sqlite:///{tmp_path / f'{name}.db'}"
    migrations.upgrade(url)
    settings = Settings(database_url=url, data_dir=tmp_path, spec=spec_ref(),
                        privacy=StreamPrivacy(k=5, engine_params={"time_limit": 0.2}), windows=WindowPolicy(),
                        fingerprint_key=SecretStr("flood-test-key"), release_processes=False)
    return settings, Database(url)


def _copy(template: dict[str, object], station: str, n: int) -> dict[str, object]:
    return template | {"station_id": station, "report_id": f"{station}-{n}"}


def _ingest(settings: Settings, db: Database, reports: list[dict[str, Any]]) -> None:
    ingest_reports(settings, PoolRepository(db, settings.windows), reports, NOW, settings.key_bytes())


@pytest.fixture
def statements() -> Iterator[list[str]]:
    """SQL statements executed on any engine while the test runs."""
    seen: list[str] = []

    def record(_conn: Any, _cursor: Any, sql: str, *_args: Any) -> None:
        seen.append(sql)

    from sqlalchemy.engine import Engine

    event.listen(Engine, "before_cursor_execute", record)
    yield seen
    event.remove(Engine, "before_cursor_execute", record)


def test_a_flood_of_tiny_windows_is_carried_in_bulk_and_the_genuine_window_is_claimed_first(
        tmp_path: Path, statements: list[str]) -> None:
    settings, db = _settings(tmp_path, "flood")
    genuine = day_of_reports(1, 200, seed=5)["S1"]
    flood = [_copy(genuine[0], f"F{i:04d}", 1) for i in range(1500)]
    _ingest(settings, db, flood)  # the flood arrives first
    _ingest(settings, db, genuine)
    orch = Orchestrator(settings, db, load_schema(settings.spec), "w1")
    statements.clear()
    order = orch.due(LATER)
    assert [w for w, _why in order] == ["station:S1|2024-03-01T00:00:00Z|0"], "only the genuine window is left"
    assert len(statements) < 100, f"{len(statements)} statements for 1,500 tiny windows: not in bulk"
    with db.read() as s:
        rows = s.execute(select(Window.key, Window.state, Window.hold_reason, Window.claimed_by)).all()
        pending = s.execute(select(PendingReport.window_id, PendingReport.state)
                            .where(PendingReport.station_id != "S1")).all()
    tiny = [r for r in rows if r.key != "station:S1"]
    assert len(tiny) == 1500
    assert {(r.state, r.hold_reason, r.claimed_by) for r in tiny} == {
        ("carried", "too small: 1 report(s) to release < k=5", "w1")}
    assert len(pending) == 1500 and {p.state for p in pending} == {"pending"}, "every flood report still waits"
    assert orch.repo.accounting()["carried"] == 1500
    assert orch.close_window(order[0][0], "due", LATER) is not None, "the genuine window releases"


def _one_by_one(orch: Orchestrator, now: datetime) -> None:
    """The release path without bulk carrying: every due window claimed and released on its own."""
    for wid in sorted(due_windows(orch.db, orch.policy, orch.policy.idle_timeout_s, now)):
        orch.close_window(wid, "due", now)


def _bulk(orch: Orchestrator, now: datetime) -> None:
    for wid, why in orch.due(now):
        orch.close_window(wid, why, now)


def _ledger(db: Database) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]], dict[str, int]]:
    with db.read() as s:
        windows = [tuple(r) for r in s.execute(select(Window.id, Window.state, Window.hold_reason, Window.duplicates)
                                               .order_by(Window.id)).all()]
        reports = [tuple(r) for r in s.execute(select(  # release ids name the deployment: each ledger its own
            PendingReport.fingerprint, PendingReport.window_id, PendingReport.state,
            PendingReport.release_id.is_not(None)).order_by(PendingReport.fingerprint)).all()]
        tallies = dict(s.execute(select(Watermark.key, Watermark.pending_duplicates)).tuples().all())
    return windows, reports, tallies


def test_bulk_carrying_closes_windows_exactly_as_one_by_one(tmp_path: Path) -> None:
    """Same input, same ledger: carried reports adopted, a window the linking guard empties carried without
    a reason, a duplicate's tally passed on, the genuine release unchanged."""
    day = day_of_reports(2, 60, seed=9)
    genuine, other = day["S1"], day["S2"]
    first = [_copy(other[i], "A", i) for i in range(3)] + genuine  # A: 3 reports, carried; S1 releases
    second = [_copy(other[10], "A", 10), _copy(other[11], "B", 1), _copy(other[11], "B", 1),
              _copy(genuine[0], "D", 1)]  # A: 4 in all; B: one (sent twice); D: S1's content again
    ledgers = []
    for name, close in (("one", _one_by_one), ("bulk", _bulk)):
        settings, db = _settings(tmp_path, name)
        orch = Orchestrator(settings, db, load_schema(settings.spec), "w1")
        _ingest(settings, db, first)
        close(orch, LATER)
        _ingest(settings, db, second)
        close(orch, LATER + timedelta(days=1))
        ledgers.append(_ledger(db))
    one, bulk = ledgers
    assert bulk == one
    reasons = {wid.split("|")[0]: (state, reason) for wid, state, reason, _d in bulk[0]}
    assert reasons["station:S1"][0] == "released"
    assert reasons["station:A"] == ("carried", "too small: 4 report(s) to release < k=5")
    assert reasons["station:B"] == ("carried", "too small: 1 report(s) to release < k=5")
    assert reasons["station:D"] == ("carried", None), "its only report is blocked by the linking guard"
    assert bulk[2]["station:B"] == 1, "B's duplicate waits for B's next release, as one by one"
