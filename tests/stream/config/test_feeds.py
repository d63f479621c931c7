"""Two feeds in one deployment, on the real broker and PostgreSQL, served by one worker process.

``crime`` (generated crime reports, CG-Kanon) and ``arrests`` (NYPD Queens 2021 arrests, Mondrian)
each have their own input and output topics. Both feeds receive reports under the SAME station and
report ids (each crime report takes the precinct and arrest key of an arrest). Checked: every report
is accounted for in its own feed (none counted as a duplicate of the other feed's), each feed's
releases carry only its own spec's columns and pass an independent k check, no report of one feed is
ever in the other feed's pool or windows, and release ids never collide across feeds.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.request
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from sqlalchemy import select

from core.columns.typed import release_columns
from db.models import PendingReport, Release, Window
from stream.analyst.consumer import ReleaseAssembler
from stream.cli.main import main
from stream.config.feeds import feed_named
from stream.intake.fingerprints import fingerprint
from stream.io.specs import load_schema
from stream.ops.broker import EmbeddedBroker
from stream.ops.kafka_clients import make_producer
from stream.testing.reports import day_of_reports
from stream.testing.scenario import Scenario
from stream.testing.services import PostgresServer
from stream.wire.records import context_columns
from tests.conftest import ROOT, shared

pytestmark = [pytest.mark.broker, pytest.mark.postgres, pytest.mark.slow]
PRECINCTS = ("101", "102", "105")
PER_PRECINCT = 120
K = 5

PIPELINES = """
[[feed]]
name = "crime"
input = "{t}.crime.reports"
spec = "crime"
engine = "cg-kanon"
privacy = {{ k = {k} }}
outputs = {{ records = "{t}.crime.anonymized", releases = "{t}.crime.releases", dlq = "{t}.crime.dlq" }}

[[feed]]
name = "arrests"
input = "{t}.arrests.reports"
spec = "nypd"
engine = "mondrian"
privacy = {{ k = {k}, max_suppression = 0.2 }}
windows = {{ size_s = 34560000, lateness_s = 0 }}   # 400 days: a precinct's year in one or two windows
outputs = {{ records = "{t}.arrests.anonymized", releases = "{t}.arrests.releases", dlq = "{t}.arrests.dlq" }}
"""


def _columns(spec: str) -> set[str]:
    """What a report of this spec keeps in the pool: its QIs, sensitive value and pass-through columns."""
    s = load_schema(spec).spec
    return {*s.qi_names, *([s.sensitive.name] if s.sensitive else []), *s.passthrough}


def _published(spec: str) -> set[str]:
    """Every column a release of this spec publishes (labels, typed columns, window context; per station)."""
    schema = load_schema(spec)
    return {c.name for c in release_columns(schema, context_columns(schema.spec.publish_context, "station"))}


def _releases(sc: Scenario, feed: Any) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
    asm = ReleaseAssembler(sc.public_key())
    for m in sc.read_topic(feed.topic_releases):
        asm.add_manifest(m)
    for r in sc.read_topic(feed.topic_anonymized):
        asm.add_record(r)
    return list(asm.complete())


@pytest.fixture(scope="module")
def two_feeds(kafka: EmbeddedBroker, pg: PostgresServer,
              tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    work = tmp_path_factory.mktemp("feeds")
    tag = f"f{uuid.uuid4().hex[:8]}"
    pipelines = work / "feeds.toml"
    pipelines.write_text(PIPELINES.format(t=tag, k=K))
    sc = Scenario(kafka, pg, work, pipelines=pipelines, release_concurrency=1)  # a release process per feed
    crime, arrests = feed_named(sc.settings, "crime"), feed_named(sc.settings, "arrests")

    nypd = pd.read_csv(shared("nypd-arrests-queens-2021", "nypd_arrests_queens_2021.csv"), dtype=str)
    picked = pd.concat([nypd[nypd["ARREST_PRECINCT"] == p].head(PER_PRECINCT) for p in PRECINCTS])
    arrests_csv = work / "arrests.csv"
    picked.to_csv(arrests_csv, index=False)
    # the crime feed gets reports under the same station and report ids: precinct + arrest key
    generated = day_of_reports(len(PRECINCTS), PER_PRECINCT, seed=5)
    shared_ids: list[tuple[str, str]] = []
    producer = make_producer(sc.settings.bootstrap_servers())
    for precinct, rows in zip(PRECINCTS, generated.values(), strict=True):
        keys = picked[picked["ARREST_PRECINCT"] == precinct]["ARREST_KEY"].tolist()
        for report, key in zip(rows, keys, strict=True):
            shared_ids.append((precinct, key))
            producer.send(crime.topic_reports, key=precinct.encode(),
                          value=json.dumps(report | {"station_id": precinct, "report_id": key}).encode())
    producer.flush()
    producer.close()
    sc.pushed += len(shared_ids)

    push = subprocess.run(
        [sys.executable, "-m", "stream.cli.main", "push", str(arrests_csv), "--feed", "arrests", "--pipelines",
         str(pipelines), "--broker", sc.settings.broker_url or ""],
        capture_output=True, text=True, cwd=ROOT,
        env={**{k: v for k, v in os.environ.items() if not k.startswith("ANONSTREAM_")}, "PYTHONPATH": str(ROOT),
             "ANONSTREAM_HOME": str(work)})
    assert push.returncode == 0, push.stdout + push.stderr
    assert f"sent {len(picked)} report(s), rejected 0" in push.stdout
    sc.pushed += len(picked)

    sc.start_worker()
    acc = sc.wait_settled(timeout=180)
    assert "Traceback" not in sc.logs() and "serving 2 feeds" in sc.logs()
    yield {"sc": sc, "acc": acc, "crime": crime, "arrests": arrests, "shared_ids": shared_ids,
           "crime_out": _releases(sc, crime), "arrests_out": _releases(sc, arrests), "picked": picked}
    sc.close()


def test_both_feeds_accept_every_report_under_the_same_ids(two_feeds: dict[str, Any]) -> None:
    acc = two_feeds["acc"]
    assert acc.get("dlq", 0) == 0 and acc.get("duplicate", 0) == 0 and acc.get("correction", 0) == 0
    assert sum(acc.get(k, 0) for k in ("released", "suppressed", "pending", "blocked")) == \
        2 * len(two_feeds["shared_ids"])


def test_each_feeds_releases_carry_only_its_own_columns(two_feeds: dict[str, Any]) -> None:
    for name, spec in (("crime_out", "crime"), ("arrests_out", "nypd")):
        releases = two_feeds[name]
        assert releases, f"no release of feed {name}"
        own = _published(spec)
        assert _columns(spec) <= own
        for manifest, records in releases:
            assert set(manifest["columns"]) - {"class_id"} == own
            frame = pd.DataFrame([r["values"] for r in records])
            assert set(frame.columns) == own
            qis = list(load_schema(spec).spec.qi_names)
            assert frame.groupby(qis).size().min() >= K  # independent k check (pandas, not our verifier)
    assert _published("crime").isdisjoint(_columns("nypd")) and _published("nypd").isdisjoint(_columns("crime"))


def test_a_report_of_one_feed_is_never_in_the_others_pool(two_feeds: dict[str, Any]) -> None:
    sc, crime, arrests = two_feeds["sc"], two_feeds["crime"], two_feeds["arrests"]
    with sc.db.read() as s:
        rows = s.execute(select(PendingReport.fingerprint, PendingReport.data, Window.feed, Window.key)
                         .join(Window, PendingReport.window_id == Window.id)).all()
    per_feed = Counter(feed for _fp, _d, feed, _k in rows)
    assert per_feed == {"crime": len(two_feeds["shared_ids"]), "arrests": len(two_feeds["picked"])}
    for _fp, data, feed, key in rows:
        assert key.startswith(f"{feed}/")
        assert set(data) <= _columns("crime" if feed == "crime" else "nypd")
    by_feed = {feed: {fp for fp, _d, f, _k in rows if f == feed} for feed in ("crime", "arrests")}
    for station, report_id in two_feeds["shared_ids"]:
        mine = fingerprint(crime.key_bytes(), station, report_id)
        theirs = fingerprint(arrests.key_bytes(), "*", report_id)  # the nypd spec's arrest keys are department-wide
        assert mine in by_feed["crime"] and mine not in by_feed["arrests"]
        assert theirs in by_feed["arrests"] and theirs not in by_feed["crime"]


def test_release_ids_never_collide_across_feeds(two_feeds: dict[str, Any]) -> None:
    sc = two_feeds["sc"]
    crime_ids = {m["release_id"] for m, _ in two_feeds["crime_out"]}
    arrests_ids = {m["release_id"] for m, _ in two_feeds["arrests_out"]}
    assert crime_ids and arrests_ids and crime_ids.isdisjoint(arrests_ids)
    with sc.db.read() as s:
        stored = s.execute(select(Release.id, Window.feed).join(Window, Release.window_id == Window.id)).all()
    assert {rid for rid, feed in stored if feed == "crime"} == crime_ids
    assert {rid for rid, feed in stored if feed == "arrests"} == arrests_ids
    # each release went to its own feed's topics only, and was published there
    assert all(manifest["k"] >= K for manifest, _ in two_feeds["crime_out"] + two_feeds["arrests_out"])


def test_status_has_a_section_per_feed_and_a_feed_filter(two_feeds: dict[str, Any],
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    sc = two_feeds["sc"]
    where = ["--database", sc.settings.database_url or "", "--broker", sc.settings.broker_url or ""]
    assert main(["status", "--feed", "arrests", "--json", *where]) == 0
    arrests = json.loads(capsys.readouterr().out)["feed"]
    assert arrests["feed"] == "arrests" and arrests["releases"] == {"published": len(two_feeds["arrests_out"])}
    assert sum(arrests[k] for k in ("released", "suppressed", "pending", "blocked")) == len(two_feeds["picked"])
    assert arrests["released"] == sum(m["counts"]["released"] for m, _ in two_feeds["arrests_out"])
    assert main(["status", *where]) == 0
    out = capsys.readouterr().out
    section = out.split("\nfeeds\n", 1)[1].splitlines()
    assert [line.split()[0] for line in section] == ["arrests", "crime"]
    assert main(["status", "--feed", "nope", *where]) == 2
    assert "no feed named 'nope' in the ledger (feeds: arrests, crime)" in capsys.readouterr().err


def test_metrics_carry_a_feed_label(two_feeds: dict[str, Any]) -> None:
    sc = two_feeds["sc"]
    port = re.search(r"worker on http://127\.0\.0\.1:(\d+)/", sc.logs())
    assert port, sc.logs()[-2000:]
    body = urllib.request.urlopen(f"http://127.0.0.1:{port.group(1)}/metrics", timeout=10).read().decode()
    for feed, out in (("crime", two_feeds["crime_out"]), ("arrests", two_feeds["arrests_out"])):
        published = re.search(rf'anonstream_releases_published_total{{feed="{feed}"}} (\S+)', body)
        assert published and float(published.group(1)) == len(out)
        assert re.search(rf'anonstream_last_release_k{{feed="{feed}"}} (\d+)', body)
        assert f'anonstream_consumer_lag{{feed="{feed}",partition=' in body


def test_console_filters_releases_by_feed_and_lists_the_feeds(two_feeds: dict[str, Any]) -> None:
    from db.console_queries import ReleaseFilter
    from stream.console.health_page import health_page
    from stream.console.pages import releases_page
    from stream.console.service import ConsoleService

    sc = two_feeds["sc"]
    svc = ConsoleService(sc.settings, sc.db, broker_timeout_s=2.0)
    for feed in ("crime", "arrests"):
        data = svc.releases(ReleaseFilter(feed=feed, limit=1000))
        assert {r["id"] for r in data["releases"]} == {m["release_id"] for m, _ in two_feeds[f"{feed}_out"]}
        assert {r["feed"] for r in data["releases"]} == {feed} and data["feeds"] == ["arrests", "crime"]
        html = releases_page(data | {"query": {"feed": feed}})
        assert f"<option selected>{feed}</option>" in html
    health = svc.health()
    page = health_page(health)
    assert "<h2>Feeds</h2>" in page and 'href="/releases?feed=arrests"' in page
    assert set(health["lag"]["feeds"]) == {"crime", "arrests"} and health["lag"]["error"] is None
    # a release's analysis and re-verification use its own feed's spec and records topic
    for feed, spec in (("crime", "crime"), ("arrests", "nypd")):
        rid = two_feeds[f"{feed}_out"][0][0]["release_id"]
        release = svc.release(rid)
        assert release is not None and release["analysis"]["qi_columns"] == list(load_schema(spec).spec.qi_names)
        again = svc.reverify(rid, "test", timeout_s=30)
        assert again["ok"] and again["topic"] == two_feeds[feed].topic_anonymized, again


def test_consume_follows_one_feeds_topics(two_feeds: dict[str, Any], tmp_path: Path) -> None:
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    sc = two_feeds["sc"]
    key = sc.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw).hex()
    out = tmp_path / "arrests"
    assert main(["consume", "--feed", "arrests", "--pipelines", str(sc.settings.pipelines), "--broker",
                 sc.settings.broker_url or "", "--public-key", key, "--out", str(out), "--idle", "3"]) == 0
    written = sorted(out.glob("*.csv"))
    assert {p.stem for p in written} == {m["release_id"] for m, _ in two_feeds["arrests_out"]}
    header = written[0].read_text().splitlines()[0].split(",")
    assert set(header) - {"class_id"} == _published("nypd")
