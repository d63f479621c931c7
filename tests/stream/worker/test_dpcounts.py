"""Differentially private counts in the release path: tables in the manifest, the spend in the release's
transaction, a refusal before any noise when a block's cap would be exceeded, a conflicting spend."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr
from sqlalchemy import select

import migrations
from db import Database, PoolRepository
from db.budget import charge, remaining
from db.models import Counter, Release
from db.windows import WindowPolicy
from stream.config.privacy import StreamPrivacy
from stream.config.settings import Settings
from stream.io.specs import load_schema, resolve_spec_path
from stream.testing.reports import DAY, day_of_reports, ingest_reports, spec_ref
from stream.worker import dpcounts
from stream.worker.release import Orchestrator, window_policy

KEY = "dp-release-test-key"
NOW = datetime(2030, 1, 1, tzinfo=UTC)
BLOCK = f"station:S1/day:{DAY.date().isoformat()}"  # the generated reports' day


def _spec(tmp: Path, cap_epsilon: float = 10.0, person: bool = False) -> str:
    """The bundled crime spec with ``cap_epsilon`` set, person-level with ``person`` (a copy in ``tmp``)."""
    text = resolve_spec_path(spec_ref()).read_text(encoding="utf-8")
    text = re.sub(r"(?m)^cap_epsilon = .*$", f"cap_epsilon = {cap_epsilon}", text)
    if person:
        text = re.sub(r"(?m)^unit = .*$", 'unit = "person"\nperson = ["name", "dob"]\nmax_contributions = 2', text)
    path = tmp / "crime-dp.toml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def _ledger(tmp: Path, spec: str) -> tuple[Settings, Database, Orchestrator]:
    url = f"sqlite:///{tmp / 'ledger.db'}"
    migrations.upgrade(url)
    settings = Settings(database_url=url, data_dir=tmp, spec=spec, privacy=StreamPrivacy(k=5),
                        windows=WindowPolicy(idle_timeout_s=1.0), fingerprint_key=SecretStr(KEY),
                        signing_key=SecretStr("22" * 32), engine="mondrian", sample_seed=3)
    db = Database(url)
    ingest_reports(settings, PoolRepository(db, window_policy(settings)), day_of_reports(1, 300, seed=3)["S1"],
                   NOW, KEY.encode())
    return settings, db, Orchestrator(settings, db, load_schema(settings.spec), "dp-test", keep_encoded=True)


def _manifest(db: Database, rid: str) -> dict[str, Any]:
    with db.read() as s:
        release = s.get(Release, rid)
        assert release is not None
        return dict(release.manifest)


def test_release_carries_count_tables_and_charges_its_blocks(tmp_path: Path) -> None:
    settings, db, orch = _ledger(tmp_path, _spec(tmp_path))
    try:
        (rid,) = orch.close_due(NOW + timedelta(minutes=5))
        dp = _manifest(db, rid)["dp"]
        schema = load_schema(settings.spec)
        assert schema.spec.dp is not None
        assert [tuple(t["by"]) for t in dp["tables"]] == [tuple(g) for g in schema.spec.dp.groupings]
        assert dp["refused"] is None and dp["rho"] > 0 and dp["unit"] == "report"
        offence = dp["tables"][0]
        assert sum(offence["counts"]) > 0 and offence["ci95"] > 0
        # the spend is in the ledger, once per block, and the manifest states it exactly
        with db.read() as s:
            left = remaining(s, [b["block"] for b in dp["blocks"]])
        assert [b["block"] for b in dp["blocks"]] == [BLOCK]
        for b in dp["blocks"]:
            cap, spent = left[b["block"]]
            assert spent == pytest.approx(b["spent_rho"]) == pytest.approx(dp["rho"])
            assert cap == pytest.approx(b["cap_rho"])
    finally:
        db.dispose()


def test_a_block_over_its_cap_refuses_the_counts_before_any_noise(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    settings, db, orch = _ledger(tmp_path, _spec(tmp_path, cap_epsilon=1.0))
    drawn: list[int] = []
    real = dpcounts.count_tables
    def counted(*args: Any, **kwargs: Any) -> Any:
        drawn.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(dpcounts, "count_tables", counted)
    try:
        cfg = load_schema(settings.spec).spec.dp
        assert cfg is not None
        rho = cfg.rho
        block = BLOCK
        with db.unit() as s:  # another release spent half the block's budget already
            charge(s, [block], rho / 2, rho, purpose="test", release_id=None, now=NOW)
        (rid,) = orch.close_due(NOW + timedelta(minutes=5))
        m = _manifest(db, rid)
        assert m["dp"]["tables"] == [] and drawn == []
        refused = m["dp"]["refused"]
        assert refused["block"] == block and "would be exceeded" in refused["message"] and "left" in refused["message"]
        assert m["counts"]["released"] > 0  # the microdata release still went out
        with db.read() as s:
            assert remaining(s, [block])[block][1] == pytest.approx(rho / 2)  # nothing more spent
            n = s.execute(select(Counter.count).where(Counter.kind == "dp-refused")).scalar_one()
        assert n == 1
    finally:
        db.dispose()


def test_a_spend_that_moved_since_the_manifest_recomputes_the_window(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    _settings, db, orch = _ledger(tmp_path, _spec(tmp_path))
    real = dpcounts.dp_counts
    calls: list[float] = []

    def racing(*args: Any, **kwargs: Any) -> Any:  # another worker charges the block after our read
        out = real(*args, **kwargs)
        assert out is not None
        if not calls:
            with db.unit() as s:
                charge(s, out.charge.blocks, 0.001, out.charge.cap_rho, purpose="race", release_id=None, now=NOW)
        calls.append(out.section["rho"])
        return out

    monkeypatch.setattr("stream.worker.release.dp_counts", racing)
    try:
        (rid,) = orch.close_due(NOW + timedelta(minutes=5))
        dp = _manifest(db, rid)["dp"]
        assert len(calls) == 2  # the first computation's noise was discarded, never stored
        with db.read() as s:
            left = remaining(s, [b["block"] for b in dp["blocks"]])
        for b in dp["blocks"]:
            assert left[b["block"]][1] == pytest.approx(b["spent_rho"]) == pytest.approx(dp["rho"] + 0.001)
    finally:
        db.dispose()


def test_person_level_counts_bound_each_person_by_their_keyed_fingerprint(tmp_path: Path) -> None:
    _settings, db, orch = _ledger(tmp_path, _spec(tmp_path, person=True))
    try:
        (rid,) = orch.close_due(NOW + timedelta(minutes=5))
        dp = _manifest(db, rid)["dp"]
        assert dp["unit"] == "person"
        assert all(t["unit"] == "person" and t["max_contributions"] == 2 for t in dp["tables"])
    finally:
        db.dispose()


def test_a_grouping_without_a_public_domain_stops_the_worker_at_start_up(tmp_path: Path) -> None:
    from core.errors import SpecError
    from stream.worker.dpcounts import check_counts

    text = resolve_spec_path(spec_ref()).read_text(encoding="utf-8")
    path = tmp_path / "bad.toml"
    path.write_text(re.sub(r"(?ms)^groupings = \[.*?\]\]$", 'groupings = [["postcode"]]', text), encoding="utf-8")
    check_counts(load_schema(spec_ref()))
    with pytest.raises(SpecError, match="postcode"):
        check_counts(load_schema(str(path)))
