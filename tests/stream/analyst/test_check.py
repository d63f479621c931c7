"""``releases check`` / ``read_releases(verify=True)``: a release file re-hashes to its signed manifest in
every format, and any changed value, row or row order fails, naming the release."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from stream.analyst.check import ReleaseCheckError, check_releases
from stream.analyst.dataset import read_releases
from stream.analyst.export import write_release
from stream.cli.main import main
from stream.testing.manifests import contract_manifest
from stream.wire.records import checksum, record_messages
from stream.wire.rowhash import rows_digest
from stream.wire.signing import sign_manifest

KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
PUBLIC = KEY.public_key().public_bytes_raw().hex()
COLUMNS = ["class_id", "age_lo", "age_hi", "share", "postcode", "event_date", "offence", "suppressed", "seen_at"]
ROWS: list[list[Any]] = [[0, 20, 24, 0.25, "3053", "2024-03-01", "Theft", False, "2024-03-01T10:15:00+10:00"],
        [0, 20, 24, 1.0, "0123", "2024-03-01", "=HYPERLINK(1)", False, "2024-03-01T00:00:00Z"],
        [1, None, None, None, None, "2024-03-01", "Assault", True, None],
        [1, 30, 34, 2.5, "3000", "2024-03-01", "-Théft", False, "2024-03-01T23:59:59.250000Z"]]


def _release(rid: str) -> tuple[dict, list[dict]]:
    msgs = record_messages(rid, COLUMNS, ROWS)
    manifest = contract_manifest(rid, COLUMNS, len(ROWS), checksum(msgs), rows=rows_digest(COLUMNS, ROWS),
                                 codebook={"columns": [{"name": c, "type": "string", "meaning": c} for c in COLUMNS],
                                           "qis": {}})
    return sign_manifest(manifest, KEY), msgs


def _written(tmp_path: Path, fmt: str) -> tuple[Path, Path]:
    """Two releases of the same rows in ``fmt``, partitioned by date; the first one's file is returned."""
    out = tmp_path / fmt
    paths = [write_release(out, *_release(rid), fmt, "date") for rid in ("r-target", "r-other")]
    assert all(p is not None for p in paths)
    first = paths[0]
    assert first is not None
    return out, first


def _rewrite(path: Path, fmt: str, change: str) -> None:
    """Change one value, drop one row or swap two rows of a written release file, keeping its format."""
    rows: list[list[Any]]
    if fmt == "csv":
        with path.open(newline="") as fh:
            head, *rows = list(csv.reader(fh))
    elif fmt == "jsonl":
        objs = [json.loads(line) for line in path.read_text().splitlines()]
        head, rows = list(objs[0]), [list(o.values()) for o in objs]
    else:
        frame = pd.read_parquet(path)
        head, rows = list(frame.columns), [list(r) for r in frame.itertuples(index=False, name=None)]
    if change == "value":
        changed: list[Any] = rows[3]
        changed[head.index("age_lo")] = 31 if fmt != "csv" else "31"
    elif change == "row":
        rows = rows[:-1]
    else:
        rows[0], rows[1] = rows[1], rows[0]
    if fmt == "csv":
        with path.open("w", newline="") as fh:
            csv.writer(fh).writerows([head, *rows])
    elif fmt == "jsonl":
        path.write_text("".join(json.dumps(dict(zip(head, r, strict=True))) + "\n" for r in rows))
    else:
        pq.write_table(pa.Table.from_pandas(pd.DataFrame(rows, columns=head).astype(frame.dtypes.to_dict()),
                                            preserve_index=False), path)


@pytest.mark.parametrize("fmt", ["csv", "parquet", "jsonl"])
def test_an_untouched_release_checks_in_every_format(tmp_path: Path, fmt: str,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    out, _ = _written(tmp_path, fmt)
    assert [(r.release_id, r.ok, r.rows) for r in check_releases(out, KEY.public_key())] == [
        ("r-other", True, 4), ("r-target", True, 4)]
    assert main(["releases", "check", str(out), "--public-key", PUBLIC]) == 0
    assert "2 of 2 release file(s) match" in capsys.readouterr().out
    assert len(read_releases(out, verify=True, public_key=PUBLIC)) == 8


@pytest.mark.parametrize("change", ["value", "row", "order"])
@pytest.mark.parametrize("fmt", ["csv", "parquet", "jsonl"])
def test_one_changed_value_row_or_order_fails_and_names_the_release(tmp_path: Path, fmt: str, change: str,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    out, target = _written(tmp_path, fmt)
    _rewrite(target, fmt, change)
    assert main(["releases", "check", str(out), "--public-key", PUBLIC]) == 1
    printed = capsys.readouterr().out
    assert "release r-target: CHANGED" in printed and "release r-other: OK" in printed
    why = {"value": "row 4 differs", "row": "3 rows, its signed manifest says 4",
           "order": "the signed rows in another order (from row 1)"}[change]
    assert why in printed
    with pytest.raises(ReleaseCheckError, match="r-target") as err:
        read_releases(out, verify=True, public_key=PUBLIC)
    assert list(err.value.failed) == ["r-target"]
    assert len(read_releases(out)) in (7, 8)  # without verify it still reads


def test_an_altered_manifest_or_a_missing_one_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, target = _written(tmp_path, "csv")
    manifest = target.parent / "_r-target.manifest.json"
    doc = json.loads(manifest.read_text())
    manifest.write_text(json.dumps({**doc, "records": 3}))
    assert main(["releases", "check", str(target), "--public-key", PUBLIC]) == 1
    assert "bad signature" in capsys.readouterr().out
    manifest.unlink()
    assert main(["releases", "check", str(target), "--public-key", PUBLIC]) == 1
    assert "no manifest beside it" in capsys.readouterr().out
    assert main(["releases", "check", str(tmp_path / "nowhere"), "--public-key", PUBLIC]) == 2
    assert "error:" in capsys.readouterr().err


def test_the_data_alone_reads_as_a_dataset(tmp_path: Path) -> None:
    """Sidecars start with ``_``: pandas.read_parquet(folder) and pyarrow.dataset see the data only."""
    import pyarrow.dataset as ds

    out, target = _written(tmp_path, "parquet")
    assert sorted(p.name for p in target.parent.iterdir() if not p.name.startswith("_")) == [
        "r-other.parquet", "r-target.parquet"]
    assert {p.name for p in target.parent.glob("_r-target.*")} == {
        "_r-target.manifest.json", "_r-target.codebook.json", "_r-target.codebook.md"}
    assert len(pd.read_parquet(out)) == 8
    assert ds.dataset(out, format="parquet", partitioning="hive").to_table().num_rows == 8


def test_the_docs_verification_example_runs_with_cryptography_alone(tmp_path: Path) -> None:
    """The block after ``<!-- verification-example -->`` in docs/stream.md, run in an isolated interpreter
    (none of this project's modules importable): it verifies a consumed JSON-lines release and fails on a
    changed one."""
    import subprocess
    import sys

    docs = (Path(__file__).parents[3] / "docs" / "stream.md").read_text(encoding="utf-8")
    block = docs.split("<!-- verification-example -->", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    assert len(block.splitlines()) <= 30
    script = tmp_path / "verify.py"
    script.write_text(block, encoding="utf-8")
    _, target = _written(tmp_path, "jsonl")
    folder = target.parent

    def run(rid: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-I", str(script), str(folder), rid, PUBLIC], capture_output=True,
                              text=True, cwd=tmp_path, timeout=60, check=False)

    ok = run("r-target")
    assert ok.returncode == 0 and "release r-target: signature and all 4 rows verified" in ok.stdout, ok.stderr
    _rewrite(target, "jsonl", "value")
    changed = run("r-target")
    assert changed.returncode == 1 and "rows differ from the signed ones" in changed.stderr
    assert run("r-other").returncode == 0
