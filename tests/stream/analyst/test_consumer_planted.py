"""A consumer nobody can silence: records planted under a release's predicted id and ``seq`` are refused by
the signed row hashes, whenever they arrive, and the genuine release is written."""

from __future__ import annotations

from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from stream.analyst.consumer import ReleaseAssembler
from stream.ops.broker import EmbeddedBroker
from stream.testing.manifests import contract_manifest
from stream.testing.services import PostgresServer
from stream.wire.records import checksum, dumps, record_messages
from stream.wire.rowhash import rows_digest
from stream.wire.signing import sign_manifest

KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
COLUMNS = ["class_id", "age", "offence"]
ROWS = [[i % 2, f"[{20 + i % 2 * 5}, {24 + i % 2 * 5}]", "Theft"] for i in range(6)]


def _release(rid: str, with_rows: bool = True) -> tuple[dict, list[dict]]:
    msgs = record_messages(rid, COLUMNS, ROWS)
    manifest = contract_manifest(rid, COLUMNS, len(ROWS), checksum(msgs))
    if with_rows:
        manifest["rows"] = rows_digest(COLUMNS, ROWS)
    return sign_manifest(manifest, KEY), msgs


def _forged(rid: str, seq: int, offence: str = "Murder") -> dict:
    return {"release_id": rid, "seq": seq, "class_id": 0, "values": {"age": "[90, 99]", "offence": offence}}


@pytest.mark.parametrize("when", ["before", "between", "after"])
def test_planted_records_never_silence_the_genuine_release(when: str) -> None:
    manifest, msgs = _release("r-x")
    planted = [_forged("r-x", s, o) for s in (0, 3) for o in ("Murder", "Arson")]
    stream = {"before": [*planted, *msgs, manifest], "between": [*msgs[:3], *planted, *msgs[3:], manifest],
              "after": [*msgs, manifest, *planted]}[when]
    asm = ReleaseAssembler(KEY.public_key())
    done = []
    for m in stream:
        asm.add_raw(dumps(m), is_manifest=m is manifest)
        done += list(asm.complete())
    assert [(d["release_id"], [r["values"]["offence"] for r in recs]) for d, recs in done] == [
        ("r-x", ["Theft"] * 6)]
    assert asm.conflicts == (4 if when != "after" else 0) and asm.duplicate_records == (4 if when == "after" else 0)
    assert asm.incomplete() == []


def test_a_flood_of_planted_records_marks_the_release_to_be_read_again() -> None:
    """More than MAX_CANDIDATES distinct records for one seq before the manifest: the genuine one may be
    refused for lack of room, so the release is marked (follow_releases reads its records again once the
    manifest is in, and then only the genuine record is kept)."""
    from stream.analyst.consumer import MAX_CANDIDATES

    manifest, msgs = _release("r-f")
    asm = ReleaseAssembler(KEY.public_key())
    for i in range(MAX_CANDIDATES):
        asm.add_raw(dumps(_forged("r-f", 0, f"Murder {i}")), is_manifest=False)
    for m in [*msgs, manifest]:
        assert asm.add_raw(dumps(m), is_manifest=m is manifest) == "r-f"
    assert list(asm.complete()) == [] and asm.overflowed == {"r-f"} and asm.incomplete() == ["r-f"]
    asm.add_raw(dumps(msgs[0]), is_manifest=False)  # read again: now the signed hash decides at once
    assert [(d["release_id"], len(r)) for d, r in asm.complete()] == [("r-f", 6)]


def test_a_verified_manifest_whose_release_never_completes_is_counted() -> None:
    manifest, msgs = _release("r-y")
    asm = ReleaseAssembler(KEY.public_key())
    for m in [_forged("r-y", 2), *msgs[:2], *msgs[3:], manifest]:
        asm.add_raw(dumps(m), is_manifest=m is manifest)
    assert list(asm.complete()) == [] and asm.incomplete() == ["r-y"] and asm.conflicts == 1


def test_older_manifests_without_row_hashes_still_complete_when_nothing_conflicts() -> None:
    manifest, msgs = _release("r-old", with_rows=False)
    asm = ReleaseAssembler(KEY.public_key())
    for m in [*msgs, manifest]:
        asm.add_raw(dumps(m), is_manifest=m is manifest)
    assert [d["release_id"] for d, _ in asm.complete()] == ["r-old"]


@pytest.mark.broker
def test_a_flood_read_before_its_manifest_is_read_again_on_a_real_broker(kafka: EmbeddedBroker) -> None:
    """The records (a flood of planted ones first) are read before the manifest exists; once it is
    published and verified, follow_releases seeks back and writes the genuine release."""
    import uuid

    from stream.analyst.consumer import MAX_CANDIDATES, follow_releases
    from stream.ops.broker import ensure_topics
    from stream.ops.kafka_clients import make_producer

    tag = uuid.uuid4().hex[:8]
    releases, records = f"t{tag}.crime.releases", f"t{tag}.crime.anonymized"
    boot = [kafka.url.split("://")[-1]]
    ensure_topics(boot, {releases: 1, records: 1})
    manifest, msgs = _release("r-flood")
    producer = make_producer(boot)
    for m in [*(_forged("r-flood", 0, f"Murder {i}") for i in range(MAX_CANDIDATES + 2)), *msgs]:
        producer.send(records, key=b"r-flood", value=dumps(m))
    producer.flush()
    asm = ReleaseAssembler(KEY.public_key())
    written: list[list[str]] = []
    sent: list[bool] = []

    def stop() -> bool:  # the manifest goes out once the flood has overflowed seq 0
        if "r-flood" in asm.overflowed and not sent:
            producer.send(releases, key=b"r-flood", value=dumps(manifest)).get(timeout=30)
            sent.append(True)
        return bool(written)

    try:
        follow_releases(boot, releases, records, lambda m, r: written.append([x["values"]["offence"] for x in r]),
                        stop, idle_s=20, public_key=KEY.public_key(), assembler=asm)
    finally:
        producer.close()
    assert written == [["Theft"] * 6] and asm.conflicts >= MAX_CANDIDATES


@pytest.mark.broker
@pytest.mark.postgres
@pytest.mark.slow
def test_a_record_planted_under_the_predicted_id_before_a_real_release(kafka: EmbeddedBroker, pg: PostgresServer,
                                                                       tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """The attack of issue 26: the release id is predicted from the window id, the default seed, the
    public key id and the deployment id (public in every manifest), a forged record is published under
    it as seq 0 before the worker releases the window;
    ``consume`` (default group) writes the genuine release, reports the conflict, writes nothing forged."""
    from db import deployment_id
    from stream.analyst.consumer import MAX_CANDIDATES
    from stream.cli.main import main
    from stream.ops.kafka_clients import make_producer
    from stream.testing.reports import DAY, day_of_reports
    from stream.testing.scenario import Scenario
    from stream.wire.signing import key_id
    from stream.worker.sampling import release_id, window_seed

    sc = Scenario(kafka, pg, tmp_path / "sc")
    try:
        public = sc.public_key()
        window = f"{sc.settings.window_key_for('S1')}|{DAY.strftime('%Y-%m-%dT%H:%M:%SZ')}|0"
        predicted = release_id(window, window_seed(sc.settings.sample_seed, window),
                               deployment=key_id(public) + deployment_id(sc.db))
        producer = make_producer(sc.settings.bootstrap_servers())
        for seq, n in ((0, MAX_CANDIDATES + 1), (1, 1)):  # a flood for seq 0: more than a consumer keeps
            for i in range(n):
                producer.send(sc.settings.topic_anonymized, key=predicted.encode(),
                              value=dumps(_forged(predicted, seq, f"PLANTED {i}")))
        producer.flush()
        producer.close()
        sc.push(day_of_reports(1, 60, seed=11))
        sc.start_worker()
        sc.wait_settled(timeout=120)
        out = tmp_path / "out"
        monkeypatch.setenv("ANONSTREAM_TOPIC_RELEASES", sc.settings.topic_releases)
        monkeypatch.setenv("ANONSTREAM_TOPIC_ANONYMIZED", sc.settings.topic_anonymized)
        key = public.public_bytes_raw().hex()
        assert sc.settings.broker_url is not None
        assert main(["consume", "--broker", sc.settings.broker_url, "--out", str(out), "--public-key", key,
                     "--idle", "3", "--timeout", "90"]) == 0
        printed = capsys.readouterr().out
        assert (out / f"{predicted}.csv").is_file(), printed  # the genuine release, under the predicted id
        assert "PLANTED" not in (out / f"{predicted}.csv").read_text()
        assert "record(s) conflicting with their release's signed row hashes" in printed
        assert "never completed" not in printed
        assert main(["releases", "check", str(out), "--public-key", key]) == 0
    finally:
        sc.close()
