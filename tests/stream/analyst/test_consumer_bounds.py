"""What ``consume`` holds for a release is bounded (issue 40): 20,000 records planted under one release
id are refused and counted, before its manifest (past ``max_unconfirmed``) and after it (past its record
count, or not matching its signed row hashes), and the genuine release is still assembled."""

from __future__ import annotations

import tracemalloc
from collections.abc import Iterator

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from stream.analyst.assembler import ReleaseAssembler
from stream.testing.manifests import contract_manifest
from stream.wire.records import checksum, dumps, record_messages
from stream.wire.rowhash import rows_digest
from stream.wire.signing import sign_manifest

KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
COLUMNS = ["class_id", "age", "offence"]
ROWS = [[i % 2, f"[{20 + i % 2 * 5}, {24 + i % 2 * 5}]", "Theft"] for i in range(6)]
PLANTED = 20_000
CAP = 1_000
# holding every planted record peaks at 19.4 MiB (measured with no cap); the capped assembler at 1.0 MiB,
# and what it holds does not grow with PLANTED (the 200,000 took consume to 456 MB)
PEAK_BYTES = 4 * 2**20


def _release(rid: str) -> tuple[dict, list[dict]]:
    msgs = record_messages(rid, COLUMNS, ROWS)
    manifest = contract_manifest(rid, COLUMNS, len(ROWS), checksum(msgs), rows=rows_digest(COLUMNS, ROWS))
    return sign_manifest(manifest, KEY), msgs


def _planted(rid: str) -> Iterator[bytes]:
    """Distinct records under ``rid``, one per seq, encoded one at a time (the test holds none of them)."""
    for seq in range(PLANTED):
        yield dumps({"release_id": rid, "seq": seq, "class_id": 0,
                     "values": {"age": "[90, 99]", "offence": f"planted {seq}"}})


def _flood(asm: ReleaseAssembler, rid: str) -> int:
    """Feed the planted records; returns tracemalloc's peak while doing so."""
    tracemalloc.start()
    try:
        for raw in _planted(rid):
            asm.add_raw(raw, is_manifest=False)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _held(asm: ReleaseAssembler, rid: str) -> int:
    return sum(len(c) for c in asm.records.get(rid, {}).values())


@pytest.mark.slow
def test_records_planted_before_the_manifest_are_capped() -> None:
    manifest, msgs = _release("r-flood")
    asm = ReleaseAssembler(KEY.public_key(), max_unconfirmed=CAP)
    peak = _flood(asm, "r-flood")
    assert _held(asm, "r-flood") == CAP and asm.held["r-flood"] == CAP
    assert asm.refused[f"more than {CAP} records before their manifest"] == PLANTED - CAP
    assert peak < PEAK_BYTES, f"peak {peak / 2**20:.0f} MiB"
    assert "r-flood" in asm.overflowed  # follow_releases reads its records again once the manifest is in
    assert asm.add_manifest(manifest) == "r-flood"
    assert _held(asm, "r-flood") == 0  # none of the planted records matches a signed row hash
    for m in msgs:  # read again, as follow_releases does after an overflow
        asm.add_record(m)
    (done,) = list(asm.complete())
    assert [r["values"]["offence"] for r in done[1]] == ["Theft"] * len(ROWS)


@pytest.mark.slow
def test_records_planted_after_the_manifest_are_refused() -> None:
    manifest, msgs = _release("r-flood")
    asm = ReleaseAssembler(KEY.public_key())  # the default cap: the manifest bounds this release
    asm.add_manifest(manifest)
    peak = _flood(asm, "r-flood")
    assert _held(asm, "r-flood") == 0
    beyond = PLANTED - len(ROWS)
    assert asm.refused["record beyond its manifest's record count"] == beyond
    assert asm.conflicts == len(ROWS)  # those within the count do not match their signed row hash
    assert peak < PEAK_BYTES, f"peak {peak / 2**20:.0f} MiB"
    for m in msgs:
        asm.add_record(m)
    assert [d["release_id"] for d, _ in asm.complete()] == ["r-flood"]
