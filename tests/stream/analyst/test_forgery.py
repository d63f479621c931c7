"""Releases that can be trusted: signed manifests, validated ids, garbage skipped, formulas neutralized."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from core.errors import ParamsError
from stream.analyst.consumer import ReleaseAssembler, write_release_csv
from stream.io.csvsafe import neutralize
from stream.ops.broker import EmbeddedBroker
from stream.testing.manifests import contract_manifest
from stream.wire.records import checksum, dumps, record_messages
from stream.wire.signing import load_private_key, private_key_from_hex, sign_manifest, verify_manifest

SERVICE = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
ATTACKER = Ed25519PrivateKey.from_private_bytes(bytes(range(1, 33)))
COLUMNS = ["class_id", "age", "offence"]


def _release(rid: str, rows: list[list[object]],
             key: Ed25519PrivateKey | None = SERVICE) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    msgs = record_messages(rid, COLUMNS, rows)
    manifest = contract_manifest(rid, COLUMNS, len(rows), checksum(msgs))
    return (sign_manifest(manifest, key) if key is not None else manifest), msgs


def _feed(asm: ReleaseAssembler, manifest: dict[str, object], msgs: list[dict[str, object]]) -> list:
    for m in msgs:
        asm.add_raw(dumps(m), is_manifest=False)
    asm.add_raw(dumps(manifest), is_manifest=True)
    return list(asm.complete())


def test_signature_covers_every_field_and_only_the_service_key_verifies() -> None:
    manifest, _ = _release("r-1", [[0, "[20-24]", "Theft"]] * 2)
    assert verify_manifest(manifest, SERVICE.public_key()) is None
    assert verify_manifest(manifest, ATTACKER.public_key()) == "signed by another key"
    assert (problem := verify_manifest({**manifest, "k": 50}, SERVICE.public_key())) is not None
    assert problem.startswith("bad signature")
    unsigned = {k: v for k, v in manifest.items() if k != "signature"}
    assert verify_manifest(unsigned, SERVICE.public_key()) == "unsigned manifest"
    # an attacker who copies the service's key id still cannot sign
    forged = sign_manifest(unsigned, ATTACKER)
    forged["signature"]["key_id"] = manifest["signature"]["key_id"]
    assert (problem := verify_manifest(forged, SERVICE.public_key())) is not None
    assert problem.startswith("bad signature")


@pytest.mark.parametrize("rid", ["../outside/x", "/tmp/abs", "..", "a/b", "r-1\x00", "é", "x" * 65, 7, None])
def test_ids_that_are_not_plain_names_are_refused(tmp_path: Path, rid: object) -> None:
    manifest, msgs = _release("r-ok", [[0, "[20-24]", "Theft"]] * 2)
    manifest = sign_manifest({**manifest, "release_id": rid}, SERVICE)  # even signed by the service
    asm = ReleaseAssembler(SERVICE.public_key())
    assert _feed(asm, manifest, [{**m, "release_id": rid} for m in msgs]) == []
    assert sum(asm.refused.values()) >= 1
    with pytest.raises(ValueError):
        write_release_csv(tmp_path / "out", manifest, msgs)
    assert not (tmp_path / "outside").exists() and not Path("/tmp/abs.csv").exists()


def test_forged_and_garbage_messages_are_refused_and_the_consumer_keeps_going() -> None:
    asm = ReleaseAssembler(SERVICE.public_key())
    for raw in (b"\xff\xfe not json", b"[1, 2]", b"null", None, b'"text"', b"[" * 10_000 + b"]" * 10_000):
        asm.add_raw(raw, is_manifest=True)
        asm.add_raw(raw, is_manifest=False)
    forged, fmsgs = _release("r-forged", [[0, "[20-24]", "Murder"]] * 3, key=ATTACKER)
    unsigned, umsgs = _release("r-unsigned", [[0, "[20-24]", "Murder"]] * 3, key=None)
    assert _feed(asm, forged, fmsgs) == [] and _feed(asm, unsigned, umsgs) == []
    good, gmsgs = _release("r-good", [[0, "[20-24]", "Theft"]] * 3)
    done = _feed(asm, good, gmsgs)
    assert [m["release_id"] for m, _ in done] == ["r-good"]
    assert asm.refused["unsigned manifest"] == 1 and asm.refused["signed by another key"] == 1
    assert asm.refused["not JSON"] >= 2 and asm.refused["not a JSON object"] >= 2


def test_csv_cells_that_would_run_as_formulas_are_neutralized(tmp_path: Path) -> None:
    rows = [[0, "=HYPERLINK(\"http://x\")", "+1"], [0, "-2", "@SUM(A1)"], [1, "\tx", "\rx"], [1, "[20-24]", "Theft"]]
    manifest, msgs = _release("r-csv", rows)
    path = write_release_csv(tmp_path, manifest, msgs)
    assert path is not None
    text = path.read_bytes().decode()
    for bad in ("=HYPERLINK", "+1", "-2", "@SUM", "\tx", "\rx"):
        assert f"'{bad}" in text
    assert "[20-24]" in text and "'[20-24]" not in text
    raw = write_release_csv(tmp_path / "raw", manifest, msgs, raw_columns=("age",))
    assert raw is not None and "\n0,-2," in raw.read_bytes().decode().replace("\r\n", "\n")
    assert neutralize(-2) == -2 and neutralize(1.5) == 1.5


def test_signing_key_rules(tmp_path: Path) -> None:
    with pytest.raises(ParamsError, match="64 hex digits"):
        private_key_from_hex("a")
    with pytest.raises(ParamsError, match="ANONSTREAM_SIGNING_KEY"):
        load_private_key(None, tmp_path, production=True)
    first = load_private_key(None, tmp_path, production=False)  # embedded: generated once, then kept
    again = load_private_key(None, tmp_path, production=False)
    assert first.private_bytes_raw() == again.private_bytes_raw()
    assert (tmp_path / "signing.key").stat().st_mode & 0o777 == 0o600
    assert json.loads(json.dumps(sign_manifest({"release_id": "r"}, first)))["signature"]["alg"] == "ed25519"


@pytest.mark.broker
def test_consume_on_a_real_broker_writes_only_verified_releases_inside_out(kafka: EmbeddedBroker, tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch,
                                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """A forged manifest, a path-traversal id, an absolute id and garbage on the releases topic: ``consume``
    writes nothing outside ``--out``, accepts nothing forged, and keeps going to the genuine release."""
    import uuid

    from stream.cli.main import main
    from stream.ops.broker import ensure_topics
    from stream.ops.kafka_clients import make_producer

    tag = uuid.uuid4().hex[:8]
    releases, records = f"t{tag}.crime.releases", f"t{tag}.crime.anonymized"
    ensure_topics([kafka.url.split("://")[-1]], {releases: 1, records: 1})
    good, gmsgs = _release("r-good", [[0, "[20-24]", "Theft"], [0, "[20-24]", "=cmd|' /C calc'!A0"]])
    forged, fmsgs = _release("r-forged", [[0, "[20-24]", "Murder"]] * 2, key=ATTACKER)
    traversal, tmsgs = _release("../outside/x", [[0, "[20-24]", "Theft"]] * 2)
    absolute, amsgs = _release(str(tmp_path / "abs"), [[0, "[20-24]", "Theft"]] * 2)
    producer = make_producer([kafka.url.split("://")[-1]])
    producer.send(releases, value=b"\x00garbage, not JSON")
    producer.send(releases, value=b"[" * 5000)
    for manifest, msgs in ((forged, fmsgs), (traversal, tmsgs), (absolute, amsgs), (good, gmsgs)):
        for m in msgs:
            producer.send(records, value=dumps(m))
        producer.send(releases, value=dumps(manifest))
    producer.send(releases, value=b"\xff after the good one")
    producer.flush()
    producer.close()

    out = tmp_path / "deep" / "out"
    monkeypatch.setenv("ANONSTREAM_TOPIC_RELEASES", releases)
    monkeypatch.setenv("ANONSTREAM_TOPIC_ANONYMIZED", records)
    monkeypatch.setenv("ANONSTREAM_RELEASE_PUBLIC_KEY", SERVICE.public_key().public_bytes_raw().hex())
    assert main(["consume", "--broker", kafka.url, "--out", str(out), "--idle", "3", "--timeout", "60"]) == 0
    printed = capsys.readouterr().out
    files = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file())
    assert files == ["deep/out/_r-good.manifest.json", "deep/out/r-good.csv"], files
    assert "'=cmd" in (out / "r-good.csv").read_text()
    assert "refused" in printed and "signed by another key" in printed and "not JSON" in printed


def test_keys_cli_prints_the_public_key_and_fresh_secrets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    from stream.cli.main import main
    from stream.config.settings import weak_key

    monkeypatch.setenv("ANONSTREAM_DATA_DIR", str(tmp_path))
    assert main(["keys", "public"]) == 2  # no key yet: it says so, and never creates one that is not the service's
    assert "no signing key" in capsys.readouterr().err and not (tmp_path / "signing.key").exists()
    expected = load_private_key(None, tmp_path, production=False).public_key().public_bytes_raw().hex()  # the service's
    assert main(["keys", "public"]) == 0
    public = capsys.readouterr().out.strip()
    assert public == expected and len(public) == 64
    assert main(["keys", "generate"]) == 0
    secret = capsys.readouterr().out.strip()
    assert len(secret) == 64 and weak_key(secret) is None
    monkeypatch.setenv("ANONSTREAM_SIGNING_KEY", secret)
    assert main(["keys", "public"]) == 0
    assert capsys.readouterr().out.strip() == private_key_from_hex(secret).public_key().public_bytes_raw().hex()
