"""End to end on a real broker and PostgreSQL: a generated day of 3 stations, bad records, resubmissions.

One worker process runs the whole module's scenario (starting faust costs seconds); each test checks
one property of it.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from sqlalchemy import func, select

from db.models import PendingReport, Release, ReleasedFingerprint
from stream.ops.broker import EmbeddedBroker
from stream.testing.reports import day_of_reports
from stream.testing.scenario import Scenario
from stream.testing.services import PostgresServer

pytestmark = [pytest.mark.broker, pytest.mark.postgres, pytest.mark.slow]
PER_STATION = 250


@pytest.fixture(scope="module")
def day_run(kafka: EmbeddedBroker, pg: PostgresServer,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    sc = Scenario(kafka, pg, tmp_path_factory.mktemp("day"))
    reports = day_of_reports(3, PER_STATION, seed=11)
    good = reports["S2"][0]
    bad = [("S2", b'{"report_id": "S2-broken", "station_id": "S2", '),
           ("S2", json.dumps({k: v for k, v in good.items() if k != "offence"} | {"report_id": "S2-x1"}).encode()),
           ("S2", json.dumps(good | {"report_id": "S2-x2", "offence": "Jaywalking on Mars"}).encode()),
           ("S2", b'{"$batch": "end", "id": "b-x", "station": "S2"}')]  # a batch marker without its rows
    # the bad records sit in the middle of S2's stream, so they share batches with good ones
    half = len(reports["S2"]) // 2
    first = {"S1": reports["S1"], "S2": reports["S2"][:half], "S3": reports["S3"]}
    sc.push(first)
    sc.push({}, bad)
    sc.push({"S2": reports["S2"][half:]})
    sc.start_worker()
    acc1 = sc.wait_settled(timeout=120)
    _asm1, releases1 = sc.releases()
    # phase 2: a station resubmits 40 reports already released, and corrects 5 of them
    again = reports["S1"][:40]
    corrected = [r | {"offence": "Fraud" if r["offence"] != "Fraud" else "Theft"} for r in reports["S3"][:5]]
    sc.push({"S1": again, "S3": corrected})
    acc2 = sc.wait_settled(timeout=60)
    asm2, releases2 = sc.releases()
    dlq = sc.read_dlq()
    yield {"sc": sc, "reports": reports, "bad": bad, "acc1": acc1, "acc2": acc2, "releases1": releases1,
           "releases2": releases2, "asm2": asm2, "dlq": dlq}
    sc.close()


def test_end_to_end_releases_match_manifests(day_run: dict[str, Any]) -> None:
    sc, releases, acc = day_run["sc"], day_run["releases1"], day_run["acc1"]
    total = sum(len(v) for v in day_run["reports"].values()) + len(day_run["bad"])
    assert releases, "no complete release reached the consumer"
    # every pushed report is accounted for, and nothing is left pending
    assert sum(acc.get(k, 0) for k in ("released", "suppressed", "dlq")) == total
    assert acc.get("pending", 0) == 0
    with sc.db.read() as s:
        stored = {r.id: r for r in s.execute(select(Release)).scalars()}
    assert set(stored) == {m["release_id"] for m, _ in releases}
    released_total = 0
    for manifest, records in releases:
        row = stored[manifest["release_id"]]
        assert row.state == "published"
        assert manifest["records"] == len(records) == manifest["counts"]["released"] == row.released
        assert manifest["checksum"] == row.checksum
        c = manifest["counts"]
        assert c["received"] == c["released"] + c["suppressed"] + c["held_back"] + c["blocked"]
        released_total += c["released"]
        # consumer-side check: every class of generalized QIs has at least k records
        frame = pd.DataFrame([r["values"] for r in records])
        qis = list(manifest["codebook"]["qis"])  # the QI labels (typed columns are functions of them)
        assert frame.groupby(qis).size().min() >= manifest["k"] >= sc.settings.privacy.k
        # no identifiers of any kind in the published records
        text = json.dumps(records)
        assert "report_id" not in text and "name" not in frame.columns and "dob" not in frame.columns
        for st_rows in day_run["reports"].values():
            assert not any(r["report_id"] in text or r["name"] in text for r in st_rows[:50])
    assert released_total == acc["released"]
    stations = {s for m, _ in releases for s in m["stations"]}
    assert stations == {"S1", "S2", "S3"}


def test_bad_records_dead_lettered_rest_of_batch_released(day_run: dict[str, Any]) -> None:
    dlq, acc = day_run["dlq"], day_run["acc1"]
    reasons = Counter(d["reason"] for d in dlq)
    assert reasons == {"malformed-json": 1, "missing-field": 1, "unknown-offence": 1, "malformed-marker": 1}
    for d in dlq:
        assert d["message"] and "\n" not in d["message"]
        assert d["payload"] in {raw.decode() for _, raw in day_run["bad"]}
    assert {d["station_id"] for d in dlq if d["reason"] != "malformed-json"} == {"S2"}
    # S2's good reports around the bad ones were all released or counted as suppressed
    s2 = [(m, r) for m, r in day_run["releases1"] if "S2" in m["stations"]]
    s2_out = sum(m["counts"]["released"] + m["counts"]["suppressed"] for m, _ in s2)
    assert s2_out == len(day_run["reports"]["S2"])
    assert acc["dlq"] == 4


def test_resubmitted_report_not_released_twice(day_run: dict[str, Any]) -> None:
    sc, acc1, acc2 = day_run["sc"], day_run["acc1"], day_run["acc2"]
    assert acc2.get("duplicate", 0) == 40 and acc2.get("correction", 0) == 5
    assert acc2["released"] == acc1["released"] and acc2.get("suppressed", 0) == acc1.get("suppressed", 0)
    assert {m["release_id"] for m, _ in day_run["releases2"]} == {m["release_id"] for m, _ in day_run["releases1"]}
    with sc.db.read() as s:
        n_fp = s.execute(select(func.count()).select_from(ReleasedFingerprint)).scalar_one()
        n_pool = s.execute(select(func.count()).select_from(PendingReport)).scalar_one()
    assert n_fp == acc1["released"]
    assert n_pool == sum(len(v) for v in day_run["reports"].values())
    assert day_run["asm2"].duplicate_manifests == 0
    # the corrections were of released reports: counted per station as such, never released
    from db.models import Counter as LedgerCounter

    with sc.db.read() as s:
        by = {(c.station_id, c.kind, c.reason): c.count for c in s.execute(select(LedgerCounter)).scalars()}
    assert by[("S3", "correction", "released")] == 5 and by[("S1", "duplicate", "duplicate")] == 40
    assert ("S3", "correction", "replaced") not in by


def test_consume_cli_writes_each_complete_release_once(day_run: dict[str, Any], tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    from stream.cli.main import main

    sc = day_run["sc"]
    for key, value in sc.settings.env().items():
        monkeypatch.setenv(key, value)
    out = tmp_path / "releases"
    assert main(["consume", "--out", str(out), "--idle", "2"]) == 0
    ids = {m["release_id"] for m, _ in day_run["releases2"]}
    assert {p.stem for p in out.glob("*.csv")} == ids
    for manifest, records in day_run["releases2"]:
        frame = pd.read_csv(out / f"{manifest['release_id']}.csv", dtype=str)
        assert len(frame) == manifest["records"] == len(records)
        assert list(frame.columns) == manifest["columns"]
    capsys.readouterr()
    assert main(["consume", "--out", str(out), "--idle", "2"]) == 0  # same group: resumes, nothing new
    assert "consume: 0 release(s) written" in capsys.readouterr().out
    assert main(["consume", "--out", str(out), "--idle", "2", "--from-start"]) == 0  # re-read: files exist
    printed = capsys.readouterr().out
    assert "consume: 0 release(s) written" in printed and "skipped 0 duplicate record(s)" not in printed

    # the analyst's path: one typed table from a dated Parquet dataset, grouped with no further code
    from stream.analyst.dataset import read_releases

    dataset = tmp_path / "dataset"
    assert main(["consume", "--out", str(dataset), "--idle", "2", "--format", "parquet", "--partition-by", "date",
                 "--group", "analyst-parquet"]) == 0
    df = read_releases(dataset)
    assert set(df["release_id"]) == ids and len(df) == sum(m["records"] for m, _ in day_run["releases2"])
    assert str(df["age_lo"].dtype) == "Int64" and str(df["suppressed"].dtype) == "boolean"
    assert pd.api.types.is_datetime64_any_dtype(df["event_date_lo"]) and "window_date" in df.columns
    assert pd.api.types.is_datetime64_any_dtype(df["event_date_hi"])
    assert (df["event_date_lo"] <= df["event_date_hi"]).all()
    assert (df["age_lo"].dropna() <= df["age_hi"].dropna()).all()
    assert df.groupby(["age_lo", "age_hi"]).size().sum() == df["age_lo"].notna().sum()
    assert df.groupby("suburb_region").size().sum() == df["suburb_region"].notna().sum()
    assert list((dataset).rglob("*.codebook.json")) and list((dataset).rglob("*.codebook.md"))
