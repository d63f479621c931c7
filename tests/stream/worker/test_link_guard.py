"""The content guard counts occurrences: co-offenders in one export are all released, a re-send is not.

The rule (:func:`stream.worker.link_guard.occurrences_blocked`) on its own, then through the worker on a
real ledger: co-arrests released in full, the same export sent again under new arrest keys blocked in
full, a later export in another layout (``6/17/2020``, ``m``, ``044``) blocked on its shared reports
only, and held-back co-offenders released by a later window.
"""

from __future__ import annotations

import random
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr
from sqlalchemy import func, select

import migrations
from db import Database, PoolRepository
from db.models import PendingReport, Release, ReleasedFingerprint
from db.windows import WindowPolicy
from stream.config.privacy import StreamPrivacy
from stream.config.settings import Settings
from stream.io.specs import load_schema
from stream.testing.reports import ARRESTS_SPEC, ingest_reports, overlapping_exports
from stream.testing.services import PostgresServer
from stream.worker.link_guard import Occurrence, occurrences_blocked
from stream.worker.release import Orchestrator, window_policy

KEY = "occurrence-test-key"
NOW = datetime(2030, 1, 1, tzinfo=UTC)


def _occ(cohort: str, content: str | None, fp: str, released: bool = False) -> Occurrence:
    return Occurrence(cohort, content, fp, released)


def test_co_offenders_are_released_and_a_resend_is_blocked() -> None:
    export = [_occ("S1", "c", "r1"), _occ("S1", "c", "r2"), _occ("S1", "c", "r3"), _occ("S1", "d", "r4")]
    assert occurrences_blocked(export, {}) == set()  # three co-offenders and one other report: all released
    assert occurrences_blocked(export, {"c": 3, "d": 1}) == {0, 1, 2, 3}  # the same export again: all blocked
    assert occurrences_blocked(export, {"c": 1}) == {0}  # one released before: the 2nd and 3rd are new


def test_occurrences_are_numbered_by_fingerprint_not_arrival() -> None:
    export = [_occ("S1", "c", f"r{i}") for i in range(5)]
    for seed in range(5):
        shuffled = random.Random(seed).sample(export, len(export))
        blocked = occurrences_blocked(shuffled, {"c": 3})
        assert sorted(shuffled[i].fingerprint for i in blocked) == ["r0", "r1", "r2"]


def test_a_copy_from_another_station_in_the_same_window_counts_the_first_as_released() -> None:
    window = [_occ("S1", "c", "a1"), _occ("S1", "c", "a2"), _occ("S2", "c", "b1"), _occ("S2", "c", "b2"),
              _occ("S2", "c", "b3")]
    assert occurrences_blocked(window, {}) == {2, 3}  # S2's first two repeat S1's; its third is new


def test_released_reports_and_siblings_take_the_first_occurrences() -> None:
    again = [_occ("S1", "c", "x1", released=True), _occ("S1", "c", "x2", released=True), _occ("S1", "c", "x3")]
    assert occurrences_blocked(again, {"c": 2}) == set()  # x1, x2 are the released two; x3 is the third
    held = [_occ("S1", "c", "b")]  # held back by the release that released its co-offender
    assert occurrences_blocked(held, {"c": 1}, {("S1", "c"): 1}) == set()
    assert occurrences_blocked(held, {"c": 1}) == {0}  # without the sibling it looks like a re-send


def test_reports_without_content_are_never_blocked_by_it() -> None:
    assert occurrences_blocked([_occ("S1", None, "r1"), _occ("S1", None, "r2")], {}) == set()


# --- through the worker, on a real ledger ------------------------------------------------------------

def _setup(pg: Any, tmp_path: Path, name: str, **extra: Any) -> tuple[Settings, Database, PoolRepository,
                                                                     Orchestrator]:
    url = pg.create_database(name)
    migrations.upgrade(url)
    spec = tmp_path / "arrests.toml"
    spec.write_text(ARRESTS_SPEC)
    values: dict[str, Any] = {"k": 5, "max_suppression": 0.0, "engine": "optimal", "fingerprint_key": KEY,
                              "idle_timeout_s": 1.0, "person_columns": [],
                              "windows": {"min_release_rows": 1},  # small windows on purpose: released, not carried
                              **extra}
    settings = Settings(database_url=url, data_dir=tmp_path, spec=str(spec), **values)
    db = Database(url)
    return (settings, db, PoolRepository(db, window_policy(settings)),
            Orchestrator(settings, db, load_schema(settings.spec), f"{name}-test"))


def _key(r: dict[str, str]) -> tuple[str, ...]:
    """A report's content as a person reads it, whatever the layout."""
    m, d, y = (int(x) for x in r["arrest_date"].split("/"))
    return r["precinct"], f"{y}-{m:02d}-{d:02d}", str(int(r["age"])), r["sex"].upper(), r["offence"]


def _states(db: Database) -> Counter[str]:
    with db.read() as s:
        return Counter(dict(s.execute(select(PendingReport.state, func.count())
                                      .group_by(PendingReport.state)).tuples().all()))


def _content_counts(db: Database) -> Counter[int]:
    """How many contents the ledger released once, twice ..."""
    with db.read() as s:
        rows = s.execute(select(ReleasedFingerprint.content_fp, func.count())
                         .group_by(ReleasedFingerprint.content_fp)).all()
    return Counter(int(n) for _, n in rows)


def _ingest(settings: Settings, pool: PoolRepository, reports: list[dict[str, str]], now: datetime) -> None:
    ingest_reports(settings, pool, reports, now, KEY.encode(), person_guard=False)


def _open_windows(orch: Orchestrator, now: datetime) -> list[Any]:
    return [w for w in (orch.claim(wid, "due", now) for wid, _ in orch.due(now)) if w is not None]


@pytest.mark.postgres
def test_co_arrests_all_released_then_a_resend_is_blocked_whole(pg: PostgresServer, tmp_path: Path) -> None:
    settings, db, pool, orch = _setup(pg, tmp_path, "coarrest")
    export, _, _ = overlapping_exports(seed=3)
    mult = Counter(_key(r) for r in export)
    assert sum(n - 1 for n in mult.values()) >= 20  # the 20 co-arrests, plus any chance ones
    _ingest(settings, pool, export, NOW)
    assert orch.close_due(NOW + timedelta(minutes=5))
    assert _states(db) == Counter({"released": len(export)})  # every co-arrest released, none blocked

    # the same export again under new arrest keys: every report is an occurrence already released
    later = NOW + timedelta(hours=1)
    _ingest(settings, pool, [{**r, "arrest_key": f"R{i:05d}"} for i, r in enumerate(export)], later)
    windows = _open_windows(orch, later + timedelta(minutes=5))
    guarded = [orch._eligible(orch.repo.candidates(w)) for w in windows]
    assert sum(len(ok) for ok, _, _ in guarded) == 0
    assert sum(n for _, _, by in guarded for (_, rule), n in by.items() if rule == "content") == len(export)
    assert all(orch.release_window(w, later + timedelta(minutes=5)) is None for w in windows)
    assert _states(db) == Counter({"released": len(export), "pending": len(export)})
    released = _content_counts(db)
    assert sum(n * c for n, c in released.items()) == len(export)  # nothing released twice

    # a third co-arrest of a content released twice, and a copy of a single arrest: only the third is new
    pair = next(k for k, n in mult.items() if n == 2)
    single = next(r for r in export if mult[_key(r)] == 1)
    third = [{**r, "arrest_key": f"T{i}"} for i, r in enumerate([r for r in export if _key(r) == pair])]
    third.append({**third[0], "arrest_key": "T9"})
    third.append({**single, "arrest_key": "T10"})
    latest = NOW + timedelta(hours=2)
    _ingest(settings, pool, third, latest)
    windows = _open_windows(orch, latest + timedelta(minutes=5))
    ok = [c for w in windows for c in orch._eligible(orch.repo.candidates(w))[0]]
    assert len(ok) == 1 and ok[0].content_seen == 2  # the re-sent copies, still pending, stay blocked too
    db.dispose()


@pytest.mark.postgres
def test_a_second_export_in_another_layout_releases_no_shared_report_again(pg: PostgresServer, tmp_path: Path) -> None:
    """Export B shares 60 reports with A, written 6/17/2020, m, 044 under new keys: they are blocked,
    B's own arrests (and co-arrests) are released."""
    settings, db, pool, orch = _setup(pg, tmp_path, "layouts")
    a, b, picks = overlapping_exports(seed=5)
    _ingest(settings, pool, a, NOW)
    assert orch.close_due(NOW + timedelta(minutes=5))
    assert _states(db) == Counter({"released": len(a)})
    _ingest(settings, pool, b, NOW + timedelta(hours=1))
    assert orch.close_due(NOW + timedelta(hours=1, minutes=5))
    in_a, in_b = Counter(_key(r) for r in a), Counter(_key(r) for r in b)
    expected_blocked = sum(min(n, in_a[k]) for k, n in in_b.items())
    assert expected_blocked >= len(picks)  # every shared report, plus any fresh one that repeats A by chance
    assert _states(db) == Counter({"released": len(a) + len(b) - expected_blocked, "blocked": expected_blocked})
    with db.read() as s:
        manifests = list(s.execute(select(Release.manifest)).scalars())
    assert sum(m["counts"]["blocked_content"] for m in manifests) == expected_blocked
    assert all("re-send" in m["blocked_reasons"]["content"] for m in manifests if m["counts"]["blocked"])
    # each content released as often as the larger export holds it: no shared report twice
    want = Counter(max(in_a[k], in_b[k]) for k in in_a.keys() | in_b.keys())
    assert _content_counts(db) == want
    db.dispose()


@pytest.mark.postgres
def test_held_back_co_offenders_are_released_by_a_later_window(pg: PostgresServer, tmp_path: Path) -> None:
    """Sampling half of a window splits co-arrest pairs: the one held back is released later, not
    taken for a re-send of its released sibling."""
    settings, db, pool, orch = _setup(pg, tmp_path, "heldback", sample_policy="fraction", sample_fraction=0.5)
    export, _, _ = overlapping_exports(seed=7, n=100, co=40, stations=("101",))
    _ingest(settings, pool, export, NOW)
    assert orch.close_due(NOW + timedelta(minutes=5))
    with db.read() as s:
        held = s.execute(select(PendingReport.content_fp).where(PendingReport.state == "pending")).scalars().all()
        gone = set(s.execute(select(ReleasedFingerprint.content_fp)).scalars())
    assert any(c in gone for c in held)  # some co-arrest pair was split by the sample
    filler = [{**r, "arrest_date": "06/15/2020"} for r in overlapping_exports(seed=8, n=120, co=0,
                                                                               stations=("101",))[0]]
    for hour in range(1, 12):  # each later window of the key adopts what is still pending of the export
        now = NOW + timedelta(hours=hour)
        _ingest(settings, pool, [{**r, "arrest_key": f"F{hour}-{r['arrest_key']}"}
                                 for r in filler[10 * hour:10 * hour + 10]], now)
        orch.close_due(now + timedelta(minutes=5))
        if not _export_states(db)["pending"]:
            break
    assert _export_states(db) == Counter({"released": len(export)})  # none taken for a re-send
    db.dispose()


def _export_states(db: Database) -> Counter[str]:
    """Pool states of the reports of 1 June (the export; the filler is dated 15 June)."""
    with db.read() as s:
        return Counter(dict(s.execute(select(PendingReport.state, func.count())
                                      .where(PendingReport.event_time < datetime(2020, 6, 2, tzinfo=UTC))
                                      .group_by(PendingReport.state)).tuples().all()))


@pytest.mark.postgres
def test_the_bundled_nypd_export_blocks_no_co_arrest(pg: PostgresServer, tmp_path: Path) -> None:
    """Two precincts of the NYPD export, pushed unsorted as exported: every arrest is released or pending,
    none blocked, although many share their content with another arrest (co-arrests)."""
    import pandas as pd

    from tests.conftest import shared

    frame = pd.read_csv(shared("nypd-arrests-queens-2021", "nypd_arrests_queens_2021.csv"), dtype=str,
                        keep_default_na=False)
    rows = frame[frame["ARREST_PRECINCT"].isin(["113", "114"])].to_dict("records")
    url = pg.create_database("nypd")
    migrations.upgrade(url)
    settings = Settings(database_url=url, data_dir=tmp_path, spec="nypd", privacy=StreamPrivacy(k=5),
                        windows=WindowPolicy(idle_timeout_s=1.0, size_s=31 * 86400), fingerprint_key=SecretStr(KEY))
    db = Database(url)
    pool = PoolRepository(db, window_policy(settings))
    orch = Orchestrator(settings, db, load_schema(settings.spec), "nypd-test")
    content = ("ARREST_DATE", "ARREST_PRECINCT", "AGE_GROUP", "PERP_SEX", "PERP_RACE", "OFNS_DESC")
    co_arrests = sum(n - 1 for n in Counter(tuple(r[c] for c in content) for r in rows).values())
    assert co_arrests > 100
    for i in range(0, len(rows), 500):
        ingest_reports(settings, pool, rows[i:i + 500], NOW, KEY.encode(), person_guard=False)
    later = NOW + timedelta(days=1)
    for _ in range(20):  # until no window is due (carried reports join the next window of their key)
        if not orch.close_due(later):
            break
    states = _states(db)
    assert "blocked" not in states and states["released"] + states["pending"] == len(rows)
    assert states["released"] >= len(rows) - 50
    db.dispose()
