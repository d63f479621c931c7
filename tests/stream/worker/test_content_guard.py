"""The content guard: the same reports pushed again under another station id with new report ids are
never released twice, and the blocked count shows in manifests and in ``anonstream status``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import SecretStr
from sqlalchemy import select

import migrations
from db import Database, PoolRepository
from db.models import PendingReport, Release, ReleasedFingerprint
from db.windows import WindowPolicy
from stream.config.privacy import StreamPrivacy
from stream.config.settings import Settings
from stream.io.specs import load_schema
from stream.testing.reports import day_of_reports, ingest_reports, spec_ref
from stream.testing.services import PostgresServer
from stream.worker.release import Orchestrator, window_policy

pytestmark = [pytest.mark.postgres]
KEY = "content-guard-test-key"


def _ingest(settings: Settings, pool: PoolRepository, reports: list[dict[str, Any]], now: datetime) -> None:
    ingest_reports(settings, pool, reports, now, KEY.encode())


def _rekeyed(reports: list[dict[str, Any]], station: str) -> list[dict[str, Any]]:
    return [{**r, "station_id": station, "report_id": f"{station}-copy-{i:05d}"} for i, r in enumerate(reports)]


@pytest.mark.parametrize("window_by", ["station", "global"])
def test_rekeyed_copies_are_blocked_and_counted(pg: PostgresServer, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                window_by: Literal["station", "region", "global"]) -> None:
    url = pg.create_database("content")
    migrations.upgrade(url)
    settings = Settings(database_url=url, data_dir=tmp_path, spec=spec_ref(), privacy=StreamPrivacy(k=5),
                        windows=WindowPolicy(idle_timeout_s=1.0, by=window_by), fingerprint_key=SecretStr(KEY))
    assert settings.privacy.link_guard == "content"  # the default
    db = Database(url)
    pool = PoolRepository(db, window_policy(settings))
    orch = Orchestrator(settings, db, load_schema(settings.spec), "content-test")
    original = day_of_reports(1, 200, seed=5)["S1"]
    fresh = day_of_reports(1, 100, seed=6)["S1"]
    fresh = [{**r, "station_id": "S2", "report_id": f"S2-new-{i:05d}"} for i, r in enumerate(fresh)]
    copies = _rekeyed(original[:60], "S2")  # 60 reports of S1 again, as S2's, with new ids
    now = datetime(2030, 1, 1, tzinfo=UTC)
    if window_by == "global":  # both in the same window: the in-window copy is blocked
        _ingest(settings, pool, original + copies + fresh, now)
        assert orch.close_due(now + timedelta(minutes=5))
    else:  # S1 released first, then S2's window meets the ledger
        _ingest(settings, pool, original, now)
        assert orch.close_due(now + timedelta(minutes=5))
        _ingest(settings, pool, copies + fresh, now + timedelta(hours=1))
        assert orch.close_due(now + timedelta(hours=1, minutes=5))
    with db.read() as s:
        released_content = list(s.execute(select(ReleasedFingerprint.content_fp)).scalars())
        states = dict(s.execute(select(PendingReport.state, PendingReport.id)).tuples().all())
        blocked = list(s.execute(select(PendingReport.station_id).where(PendingReport.state == "blocked")).scalars())
        manifests = [m for m in s.execute(select(Release.manifest)).scalars()]
    assert None not in released_content
    assert len(released_content) == len(set(released_content))  # no content released twice
    assert "pending" not in states
    assert len(blocked) == 60 and set(blocked) == {"S2"}
    assert sum(m["counts"]["blocked_content"] for m in manifests) == 60
    assert sum(m["counts"]["blocked"] for m in manifests) == 60
    db.dispose()

    from stream.cli.main import main

    capsys.readouterr()
    assert main(["status", "--database", url]) == 0
    out = capsys.readouterr().out
    assert "linking   blocked 60, never released: content 60 (same content as an already released report (a " \
           "re-send)" in out


def test_report_guard_releases_rekeyed_copies_again(pg: PostgresServer, tmp_path: Path) -> None:
    """The old rule (station + report id) lets the same content through under new ids: the attack surface."""
    url = pg.create_database("reportguard")
    migrations.upgrade(url)
    settings = Settings(database_url=url, data_dir=tmp_path, spec=spec_ref(),
                        privacy=StreamPrivacy(k=5, link_guard="report"), fingerprint_key=SecretStr(KEY),
                        windows=WindowPolicy(min_release_rows=1, idle_timeout_s=1.0))
    db = Database(url)
    pool = PoolRepository(db, window_policy(settings))
    orch = Orchestrator(settings, db, load_schema(settings.spec), "report-test")
    original = day_of_reports(1, 100, seed=5)["S1"]
    now = datetime(2030, 1, 1, tzinfo=UTC)
    _ingest(settings, pool, original, now)
    assert orch.close_due(now + timedelta(minutes=5))
    _ingest(settings, pool, _rekeyed(original[:30], "S2"), now + timedelta(hours=1))
    assert orch.close_due(now + timedelta(hours=1, minutes=5))
    with db.read() as s:
        released_content = list(s.execute(select(ReleasedFingerprint.content_fp)).scalars())
    assert len(released_content) - len(set(released_content)) == 30
    db.dispose()


def test_store_refuses_content_released_meanwhile(pg: PostgresServer, tmp_path: Path) -> None:
    """A window that passed the guard before another window holding the same content was stored (the
    guard read a count of 0 for each content, the ledger now holds 1): its store is refused
    (ReleaseConflict, so the orchestrator recomputes), and the recompute blocks the copies."""
    from db import ReleaseConflict, StoredRelease

    url = pg.create_database("refuse")
    migrations.upgrade(url)
    settings = Settings(database_url=url, data_dir=tmp_path, spec=spec_ref(), privacy=StreamPrivacy(k=5),
                        windows=WindowPolicy(idle_timeout_s=1.0, min_release_rows=10),  # S2's 10 reports may
                        fingerprint_key=SecretStr(KEY))  # release (fewer are carried in bulk, never claimed)
    db = Database(url)
    pool = PoolRepository(db, window_policy(settings))
    orch = Orchestrator(settings, db, load_schema(settings.spec), "refuse-test")
    original = day_of_reports(1, 60, seed=8)["S1"]
    now = datetime(2030, 1, 1, tzinfo=UTC)
    _ingest(settings, pool, original + _rekeyed(original[:10], "S2"), now)
    claimed = {w.key: w for w in (orch.claim(wid, "due", now) for wid, _ in orch.due(now + timedelta(minutes=5)))
               if w is not None}
    early = orch.repo.candidates(claimed["station:S2"])  # S2 looked before S1 was stored: all pass
    assert len(orch._eligible(early)[0]) == 10
    assert orch.release_window(claimed["station:S1"], now)
    late = StoredRelease(
        id="r-late", window_id=claimed["station:S2"].id, window_key="station:S2", stations=["S2"], engine="x",
        params={}, seed=0, k_achieved=5, l_achieved=None, information_loss=None, metrics={}, verification={},
        counts={"received": 10, "released": 10, "suppressed": 0, "held_back": 0}, checksum="", manifest={},
        columns=[], rows=[], released_ids=[c.pool_id for c in early],
        fingerprints=[(c.fingerprint, c.person_fp) for c in early], content_fps=[c.content_fp for c in early],
        content_seen={c.content_fp: 0 for c in early if c.content_fp})
    with pytest.raises(ReleaseConflict, match="content was released meanwhile"):
        orch.repo.store(late, "refuse-test", now)
    # recomputed: every copy is blocked, nothing is left to release; the window closes without a release
    # and its reports stay pending (counted as blocked by the release that next considers them)
    assert orch.release_window(claimed["station:S2"], now) is None
    with db.read() as s:
        states = list(s.execute(select(PendingReport.state).where(PendingReport.station_id == "S2")).scalars())
        contents = list(s.execute(select(ReleasedFingerprint.content_fp)).scalars())
    assert states == ["pending"] * 10 and len(contents) == len(set(contents)) == 60
    db.dispose()


def test_stream_release_order_is_independent_of_arrival_order(pg: PostgresServer, tmp_path: Path) -> None:
    """The same reports arriving in two orders give the same stored records in the same order (the two
    ledgers share one deployment id, as a copy of a ledger would: release ids, and so the publication order,
    depend on it)."""
    from db.deployment import DeploymentRow
    from db.models import ReleaseRecords

    reports = day_of_reports(1, 120, seed=9)["S1"]
    stored = []
    for name, order in (("asc", reports), ("desc", sorted(reports, key=lambda r: str(r["offence"]), reverse=True))):
        url = pg.create_database(f"order{name}")
        migrations.upgrade(url)
        settings = Settings(database_url=url, data_dir=tmp_path, spec=spec_ref(), privacy=StreamPrivacy(k=5),
                            windows=WindowPolicy(idle_timeout_s=1.0), fingerprint_key=SecretStr(KEY), engine="optimal")
        db = Database(url)
        with db.unit() as s:
            s.add(DeploymentRow(id=1, deployment_id="0" * 32))
        orch = Orchestrator(settings, db, load_schema(settings.spec), "order-test")
        now = datetime(2030, 1, 1, tzinfo=UTC)
        _ingest(settings, PoolRepository(db, window_policy(settings)), order, now)
        assert orch.close_due(now + timedelta(minutes=5))
        with db.read() as s:
            stored.append([rec.rows for rec in s.execute(select(ReleaseRecords)).scalars()])
        db.dispose()
    assert stored[0] == stored[1] and len(stored[0][0]) > 100
    offences = [row[-1] for row in stored[0][0]]
    assert offences != [r["offence"] for r in reports][: len(offences)]
