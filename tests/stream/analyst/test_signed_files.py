"""Every file of a release is signed (issue 40): the count tables' sidecar and the codebook by content
hash, the date partition by value, the data file's rows by row hashes. ``releases check``,
``read_releases(verify=True)`` and ``read_counts(verify=True)`` refuse an edited sidecar, a release moved
to another partition and a deleted file, each with one line naming the file and what differs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from core.dp.tables import CountTable
from stream.analyst.check import ReleaseCheckError, check_releases
from stream.analyst.dataset import read_counts, read_releases
from stream.analyst.export import write_release
from stream.cli.main import main
from stream.testing.manifests import contract_manifest
from stream.wire.manifest import release_files
from stream.wire.records import checksum, record_messages
from stream.wire.rowhash import rows_digest
from stream.wire.signing import sign_manifest

KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
PUBLIC = KEY.public_key().public_bytes_raw().hex()
COLUMNS = ["class_id", "sex", "offence"]
ROWS = [[0, "F", "Theft"], [0, "F", "Theft"], [1, "M", "Assault"], [1, "M", "Assault"]]
TABLE = CountTable(by=("offence",), groups=(("Assault",), ("Theft",)), counts=(3, 2), ci95=4.0,
                   mechanism="gaussian", rho=0.02, unit="report")
DAY = "2024-03-01"


def _release(rid: str, signed_files: bool = True) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    msgs = record_messages(rid, COLUMNS, ROWS)
    dp = {"mechanism": "gaussian", "unit": "report", "epsilon": 1.0, "delta": 1e-6, "rho": 0.02,
          "tables": [TABLE.to_json()], "refused": None, "blocks": []}
    codebook = {"spec": {"name": "crime", "version": "v1"}, "rows": len(ROWS), "qis": {},
                "columns": [{"name": c, "type": "string", "meaning": f"the {c}"} for c in COLUMNS]}
    manifest = contract_manifest(rid, COLUMNS, len(ROWS), checksum(msgs), start=f"{DAY}T00:00:00+00:00",
                                 rows=rows_digest(COLUMNS, ROWS), dp=dp, codebook=codebook)
    if signed_files:  # as build_manifest makes it; without: a manifest from before `files` existed
        manifest["files"] = release_files(rid, manifest["window"], codebook, dp)
    return sign_manifest(manifest, KEY), msgs


def _written(tmp_path: Path, signed_files: bool = True) -> Path:
    """Two releases written by consume's writer as Parquet, partitioned by date; returns the folder."""
    out = tmp_path / "out"
    for rid in ("r-target", "r-other"):
        assert write_release(out, *_release(rid, signed_files), "parquet", "date") is not None
    return out


def _problems(out: Path) -> dict[str, str | None]:
    return {c.release_id: c.problem for c in check_releases(out, KEY.public_key())}


def _edit_json(path: Path, change: Any) -> None:
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")


def _refused_everywhere(out: Path, rid: str, *words: str, counts: bool = False) -> None:
    """``releases check``, ``read_releases(verify=True)`` (and ``read_counts(verify=True)``) refuse ``rid``
    with one line holding ``words``; the other release still checks."""
    problems = _problems(out)
    assert problems["r-other"] is None
    problem = problems[rid]
    assert problem is not None and all(w in problem for w in words), problem
    with pytest.raises(ReleaseCheckError) as exc:
        read_releases(out, verify=True, public_key=PUBLIC)
    assert set(exc.value.failed) == {rid}
    assert main(["releases", "check", str(out), "--public-key", PUBLIC]) == 1
    if counts:
        with pytest.raises(ReleaseCheckError) as exc:
            read_counts(out, verify=True, public_key=PUBLIC)
        assert set(exc.value.failed) == {rid} and all(w in exc.value.failed[rid] for w in words)


@pytest.mark.parametrize("signed_files", [True, False], ids=["files-signed", "older-manifest"])
def test_untouched_releases_check_with_their_sidecars(tmp_path: Path, signed_files: bool) -> None:
    out = _written(tmp_path, signed_files)
    assert _problems(out) == {"r-other": None, "r-target": None}
    assert len(read_releases(out, verify=True, public_key=PUBLIC)) == 2 * len(ROWS)
    counts = read_counts(out, verify=True, public_key=PUBLIC)
    assert sorted(counts["count"]) == sorted([*TABLE.counts, *TABLE.counts])


@pytest.mark.parametrize("signed_files", [True, False], ids=["files-signed", "older-manifest"])
def test_an_edited_counts_file_is_refused(tmp_path: Path, signed_files: bool) -> None:
    out = _written(tmp_path, signed_files)
    sidecar = out / f"window_date={DAY}" / "_r-target.counts.json"
    _edit_json(sidecar, lambda d: d["tables"][0]["counts"].__setitem__(1, 20))
    assert int(read_counts(sidecar)["count"].iloc[1]) == 20  # unverified, the edit reads as a count
    _refused_everywhere(out, "r-target", "_r-target.counts.json", "tables[0].counts[1]", counts=True)


def test_an_edited_codebook_is_refused(tmp_path: Path) -> None:
    out = _written(tmp_path)
    _edit_json(out / f"window_date={DAY}" / "_r-target.codebook.json",
               lambda d: d["columns"][1].__setitem__("meaning", "the victim's sex"))
    _refused_everywhere(out, "r-target", "_r-target.codebook.json", "columns[1].meaning")


def test_an_edited_codebook_page_is_refused(tmp_path: Path) -> None:
    out = _written(tmp_path)
    page = out / f"window_date={DAY}" / "_r-target.codebook.md"
    page.write_text(page.read_text().replace("the offence", "the charge"))
    _refused_everywhere(out, "r-target", "_r-target.codebook.md")


def test_a_release_moved_to_another_date_partition_is_refused(tmp_path: Path) -> None:
    out = _written(tmp_path)
    moved = out / "window_date=2024-03-02"
    moved.mkdir()
    for path in (out / f"window_date={DAY}").glob("*r-target*"):
        shutil.move(path, moved / path.name)
    _refused_everywhere(out, "r-target", "moved", "window_date=2024-03-02", f"window_date={DAY}")


@pytest.mark.parametrize("gone", ["r-target.parquet", "_r-target.counts.json", "_r-target.codebook.json"])
def test_a_deleted_file_is_refused(tmp_path: Path, gone: str) -> None:
    out = _written(tmp_path)
    (out / f"window_date={DAY}" / gone).unlink()
    _refused_everywhere(out, "r-target", gone, "missing", counts=gone.endswith("counts.json"))
