"""Release ids are unique per deployment, not per signing key (issue 40): two deployments (two ledgers)
that share a signing key release the same window under different ids, each manifest stating its
deployment, and ``consume`` refuses a second, different content under an id it already holds."""

from __future__ import annotations

import json
from pathlib import Path

import migrations
from db import Database, deployment_id
from stream.analyst.assembler import ReleaseAssembler
from stream.testing.reports import day_of_reports
from stream.wire.contracts import Manifest
from stream.wire.signing import private_key_from_hex, sign_manifest
from tests.stream.worker.test_reproducible_release import SIGNING, release_bytes


def test_the_deployment_id_is_generated_once_per_ledger(tmp_path: Path) -> None:
    ids = []
    for name in ("a", "b"):
        url = f"sqlite:///{tmp_path / f'{name}.db'}"
        migrations.upgrade(url)
        db = Database(url)
        try:
            first = deployment_id(db)
            assert deployment_id(db) == first and len(first) == 32  # read back, never generated again
            ids.append(first)
        finally:
            db.dispose()
    assert ids[0] != ids[1]


def test_two_deployments_sharing_a_signing_key_give_different_release_ids(tmp_path: Path) -> None:
    """The same window, seed and signing key in two new deployments: two ids, two stated deployments, and
    ``consume`` keeps both; a manifest re-signed under the other's id is refused, not dropped silently."""
    reports = day_of_reports(1, 300, seed=3)["S1"]
    manifests = []
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        raw, _records = release_bytes(tmp_path / name, "cg-diverse", reports, deployment=None)
        manifests.append(json.loads(raw))
    a, b = (Manifest.parse(m) for m in manifests)
    assert a.deployment and b.deployment and a.deployment != b.deployment
    assert a.release_id != b.release_id
    key = private_key_from_hex(SIGNING)
    asm = ReleaseAssembler(key.public_key())
    assert asm.add_manifest(manifests[0]) == a.release_id
    assert asm.add_manifest(manifests[0]) is None and asm.duplicate_manifests == 1  # the same content again
    clash = sign_manifest({**manifests[1], "release_id": a.release_id}, key)  # other content, one id, one key
    assert asm.add_manifest(clash) is None
    assert asm.id_conflicts == 1 and asm.refused["another release under an id already held"] == 1
    assert asm.manifests[a.release_id] == manifests[0]  # the first content stays
