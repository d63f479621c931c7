"""End to end on a real broker and PostgreSQL: the records on the output topic carry the typed columns,
the manifest carries the codebook, and its signature (which covers the codebook) still verifies.

One worker releases one generated station-day; the checks read the topics as a consumer would.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from core.hierarchies.intervals import parse_interval
from stream.ops.broker import EmbeddedBroker
from stream.testing.reports import DAY, day_of_reports
from stream.testing.scenario import Scenario
from stream.testing.services import PostgresServer
from stream.wire.codebook import reader_columns, write_codebook
from stream.wire.signing import verify_manifest

pytestmark = [pytest.mark.broker, pytest.mark.postgres, pytest.mark.slow]
PER_STATION = 150


@pytest.fixture(scope="module")
def released(kafka: EmbeddedBroker, pg: PostgresServer,
             tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    sc = Scenario(kafka, pg, tmp_path_factory.mktemp("typed"))
    reports = day_of_reports(1, PER_STATION, seed=5)
    sc.push(reports)
    sc.start_worker()
    sc.wait_settled(timeout=120)
    _asm, releases = sc.releases()
    raw_manifests = sc.read_topic(sc.settings.topic_releases)
    yield {"sc": sc, "reports": reports, "releases": releases, "manifests": raw_manifests}
    sc.close()


def test_records_carry_typed_columns_and_the_window_context(released: dict[str, Any]) -> None:
    assert released["releases"], "no complete release reached the consumer"
    originals = pd.DataFrame(released["reports"]["S1"])
    for manifest, records in released["releases"]:
        columns = [c for c in manifest["columns"] if c != "class_id"]
        frame = pd.DataFrame([r["values"] for r in records])[columns]  # messages are JSON with sorted keys
        assert set(records[0]["values"]) == set(columns)
        for col in ("age_lo", "age_hi", "suburb_level", "suburb_region", "postcode_level", "reporter_group",
                    "suppressed", "event_date_lo", "event_date_hi", "station_id"):
            assert col in frame.columns, col
        # one day pushed: every class's events span that day alone (core.columns.dates)
        day = DAY.date().isoformat()
        assert (frame["event_date_lo"] == day).all() and (frame["event_date_hi"] == day).all()
        assert (frame["station_id"] == "S1").all()
        # each record's bounds are those its label states, and lie in the range of the pushed ages
        for label, lo, hi in zip(frame["age"], frame["age_lo"], frame["age_hi"], strict=True):
            if label == "*":
                assert pd.isna(lo) and pd.isna(hi)
            else:
                parsed = parse_interval(label)
                assert parsed is not None and (lo, hi) == (parsed[0], parsed[1])
        ages = pd.to_numeric(originals["age"])
        assert frame["age_lo"].dropna().min() <= ages.max() and frame["age_hi"].dropna().max() >= ages.min()
        # the region column groups the release: every named suburb lies in its region
        named = frame[frame["suburb_level"] == 0]
        assert (named["suburb_region"].notna()).all()
        assert not frame["suppressed"].any() or (frame.loc[frame["suppressed"], "age"] == "*").all()
        text = json.dumps(records)
        assert "report_id" not in text and "fingerprint" not in text
        assert not any(r["report_id"] in text for r in released["reports"]["S1"])


def test_manifest_carries_a_signed_codebook(released: dict[str, Any], tmp_path: Path) -> None:
    sc = released["sc"]
    public = sc.public_key()
    for manifest, records in released["releases"]:
        assert verify_manifest(manifest, public) is None
        cb = manifest["codebook"]
        assert [c["name"] for c in cb["columns"]] == manifest["columns"]
        assert cb["spec"]["name"] == "crime-reports" and len(cb["spec"]["version"]) == 64
        assert cb["rows"] == len(records) and cb["suppressed"]["not_published"] == manifest["counts"]["suppressed"]
        for qi, entry in cb["qis"].items():
            assert sum(s["share"] for s in entry["shares"]) == pytest.approx(1.0), qi
        # the utility report, in its publishable form, and the codebook's paragraph drawn from it
        util = manifest["utility"]
        assert util["public"] is True and util["published"] == len(records) == cb["rows"]
        assert util["suppressed"] == manifest["counts"]["suppressed"] and set(util["qis"]) == set(cb["qis"])
        assert util["crosstab"]["columns"] == ["suburb:region", "offence"] and "original" not in util["sensitive"]
        assert cb["utility"].startswith("Preserves") and cb["qis"]["age"]["grid"]["widths"] == [5, 10, 20, 40]
        # altering the codebook breaks the signature: it is part of the signed content
        forged = {**manifest, "codebook": {**cb, "rows": cb["rows"] + 1}}
        assert verify_manifest(forged, public) is not None
        paths = write_codebook(tmp_path, manifest["release_id"], manifest)
        assert [p.name for p in paths] == [f"_{manifest['release_id']}.codebook.json",
                                          f"_{manifest['release_id']}.codebook.md"]
        assert json.loads(paths[0].read_text()) == {**cb, "reader_columns": reader_columns([])}
        assert "suburb_region" in paths[1].read_text()
