"""The downstream assembler: a release is complete only with its manifest and matching records."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import given, settings
from hypothesis import strategies as st

from stream.analyst.consumer import ReleaseAssembler, write_release_csv
from stream.testing.manifests import contract_manifest
from stream.wire.records import checksum, record_messages
from stream.wire.signing import sign_manifest

COLUMNS = ["class_id", "age", "sex", "offence"]
KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))


def _release(rid: str, n: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    rows = [[i % 3, f"[{20 + i % 3 * 5}-{24 + i % 3 * 5}]", "*", "Theft"] for i in range(n)]
    msgs = record_messages(rid, COLUMNS, rows)
    return sign_manifest(contract_manifest(rid, COLUMNS, n, checksum(msgs)), KEY), msgs


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 40), st.integers(0, 20), st.randoms(use_true_random=False))
def test_out_of_order_and_duplicated_delivery_yields_each_release_once(n: int, dups: int, rnd: random.Random) -> None:
    manifest, msgs = _release("r-a", n)
    stream = [("r", m) for m in msgs] + [("r", rnd.choice(msgs)) for _ in range(dups)] + [("m", manifest)] * 2
    rnd.shuffle(stream)
    asm = ReleaseAssembler(KEY.public_key())
    done = []
    for kind, obj in stream:
        asm.add_manifest(obj) if kind == "m" else asm.add_record(obj)
        done += list(asm.complete())
    assert len(done) == 1
    got_manifest, records = done[0]
    assert got_manifest == manifest and [r["seq"] for r in records] == list(range(n))


def test_incomplete_or_tampered_release_is_not_complete() -> None:
    manifest, msgs = _release("r-b", 10)
    asm = ReleaseAssembler(KEY.public_key())
    asm.add_manifest(manifest)
    for m in msgs[:-1]:
        asm.add_record(m)
    assert list(asm.complete()) == []  # one record missing
    asm.add_record(msgs[-1] | {"values": {**msgs[-1]["values"], "offence": "Murder"}})
    assert list(asm.complete()) == []  # checksum does not match


def test_csv_written_once(tmp_path: Path) -> None:
    manifest, msgs = _release("r-c", 5)
    random.Random(1).shuffle(msgs)
    ordered = sorted(msgs, key=lambda m: m["seq"])
    path = write_release_csv(tmp_path, manifest, ordered)
    assert path is not None and path.read_text().splitlines()[0] == ",".join(COLUMNS)
    assert len(path.read_text().splitlines()) == 6
    assert write_release_csv(tmp_path, manifest, ordered) is None
