"""The wire contracts (:mod:`stream.wire.contracts`): the committed JSON Schema is the one the models give,
what a real worker publishes keeps them, an older manifest still reads, and a field they do not know is
refused."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from db.console_queries import WINDOW_STATES
from stream.ops.broker import EmbeddedBroker
from stream.testing.manifests import contract_manifest
from stream.testing.services import PostgresServer
from stream.wire.contracts import SCHEMAS, Manifest, PushReceipt, RecordMessage, WindowState
from stream.wire.receipts import receipt
from stream.wire.schema import DOCS, schema_texts, stale


def test_the_committed_schema_is_the_generated_one() -> None:
    assert stale() == [], "run: python -m stream.wire.schema"
    assert sorted(schema_texts()) == sorted(f"{name}.schema.json" for name in SCHEMAS)
    assert "docs/schema/manifest.schema.json" in (DOCS.parent / "stream.md").read_text(encoding="utf-8")


def test_an_older_manifest_reads_and_an_unknown_field_is_refused() -> None:
    older = contract_manifest("r-1", ["class_id", "sex"], 0, "x", created_at="2024-03-02T00:00:00+00:00")
    parsed = Manifest.parse(older)  # no files, rows, deployment, codebook: releases made before them
    assert parsed.files is None and parsed.deployment is None and parsed.partition() == "2024-03-01"
    with pytest.raises(ValidationError, match="surprise"):
        Manifest.parse({**older, "surprise": 1})
    with pytest.raises(ValidationError):
        parsed.records = 5  # frozen


def test_receipts_and_records_keep_their_contract() -> None:
    made = receipt("ab" * 16, "w-1", "default", [0, 1, 2, 7], {"missing-value": [3]})
    assert PushReceipt.model_validate(made).accepted == [(0, 2), (7, 7)]
    with pytest.raises(ValidationError):
        receipt("not-a-push-id", "w-1", "default", [0], {})
    with pytest.raises(ValidationError):
        RecordMessage.model_validate({"release_id": "r-1", "seq": "0", "class_id": 0, "values": {}})


def test_window_states_are_one_enum() -> None:
    assert tuple(WindowState) == WINDOW_STATES and WindowState.CARRIED.value == "carried"


@pytest.mark.broker
@pytest.mark.postgres
@pytest.mark.slow
def test_what_a_real_worker_publishes_keeps_the_contracts(kafka: EmbeddedBroker, pg: PostgresServer, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker run on the broker: every manifest on the releases topic and every record validates; each
    manifest states its deployment and signs its files; ``consume`` writes them and ``releases check``
    passes on what it wrote."""
    from stream.cli.main import main
    from stream.testing.reports import day_of_reports
    from stream.testing.scenario import Scenario

    sc = Scenario(kafka, pg, tmp_path / "sc")
    try:
        sc.push(day_of_reports(2, 60, seed=5))
        sc.start_worker()
        sc.wait_settled(timeout=120)
        manifests = sc.read_topic(sc.settings.topic_releases)
        records = sc.read_topic(sc.settings.topic_anonymized)
        assert manifests and records
        parsed = [Manifest.parse(m) for m in manifests]
        assert len({m.deployment for m in parsed}) == 1 and parsed[0].deployment
        assert all(m.files is not None and m.files.partition["window_date"] == m.window.start[:10] for m in parsed)
        assert all(m.files is not None and m.files.codebook for m in parsed)
        assert sum(m.records for m in parsed) == len(records)
        for r in records:
            RecordMessage.model_validate(r)
        out = tmp_path / "out"
        monkeypatch.setenv("ANONSTREAM_TOPIC_RELEASES", sc.settings.topic_releases)
        monkeypatch.setenv("ANONSTREAM_TOPIC_ANONYMIZED", sc.settings.topic_anonymized)
        key = sc.public_key().public_bytes_raw().hex()
        assert sc.settings.broker_url is not None
        assert main(["consume", "--broker", sc.settings.broker_url, "--out", str(out), "--public-key", key,
                     "--partition-by", "date", "--format", "parquet", "--idle", "3", "--timeout", "90",
                     "--group", ""]) == 0
        capsys.readouterr()
        assert main(["releases", "check", str(out), "--public-key", key]) == 0
        assert f"{len(parsed)} of {len(parsed)} release file(s) match" in capsys.readouterr().out
    finally:
        sc.close()
