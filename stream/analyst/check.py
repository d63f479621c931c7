"""Check release files on disk against the signed manifest beside each: ``anonstream releases check PATH``
and ``read_releases(path, verify=True)``.

For every release file under PATH (CSV, Parquet or JSON lines, flat or partitioned) the manifest beside
it must carry a valid signature by the service's public key, name the same release, and list signed row
hashes (``rows``, :mod:`stream.wire.rowhash`) that the file's rows re-hash to, in order: the file's
columns are the signed ones, it holds exactly the signed number of rows, and their root matches. Any
changed value, added, removed or reordered row, or changed column fails the release, naming the first
row that differs. Releases consumed before manifests carried row hashes cannot be checked (they fail
with that reason). The files beside it must be the ones the manifest signs (:mod:`stream.analyst.sidecars`:
counts sidecar, codebook, date partition), and every manifest under PATH must have its data file: a
deleted data file fails its release as well.
"""

from __future__ import annotations

import csv
import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from stream.analyst.export import FORMATS, manifest_path
from stream.analyst.sidecars import ReleaseCheckError, load_signed, resolve_public_key, sidecar_problems
from stream.io.csvsafe import unneutralize
from stream.wire.release_ids import valid_release_id
from stream.wire.rowhash import SHORT, digest_of_hashes, row_hash, short_hashes

__all__ = ["Checked", "ReleaseCheckError", "check_releases", "resolve_public_key", "verify_releases"]


@dataclass(frozen=True)
class Checked:
    """The verdict on one release file: ``problem`` is None when it matches its signed manifest."""

    release_id: str
    path: Path
    rows: int
    problem: str | None

    @property
    def ok(self) -> bool:
        return self.problem is None


def release_data_files(root: Path) -> list[tuple[Path, str]]:
    """Release data files under ``root`` (or ``root`` itself), sorted by path, with their format."""
    if root.is_file():
        fmt = root.suffix.lstrip(".")
        if fmt not in FORMATS:
            raise ValueError(f"{root.name}: not a release file (.csv, .parquet or .jsonl)")
        return [(root, fmt)]
    found = []
    for fmt in FORMATS:
        found += [(p, fmt) for p in root.rglob(f"*.{fmt}")
                  if p.is_file() and valid_release_id(p.name[: -len(fmt) - 1]) is not None]
    return sorted(found)


def file_rows(path: Path, fmt: str) -> tuple[list[str], list[list[Any]]]:
    """A release file's column names and rows, values as stored (CSV text with formula quoting undone)."""
    if fmt == "parquet":
        table = pq.ParquetFile(path).read()  # the file alone (read_table would add hive partition columns)
        columns = [table.column(i).to_pylist() for i in range(table.num_columns)]
        return list(table.column_names), [list(r) for r in zip(*columns, strict=True)]
    if fmt == "jsonl":
        header: list[str] | None = None
        rows: list[list[Any]] = []
        with path.open(encoding="utf-8") as fh:
            for line in fh:
                if not line.strip():
                    continue
                obj = json.loads(line)
                if not isinstance(obj, dict):
                    raise ValueError("a line that is not a JSON object")
                header = header if header is not None else list(obj)
                if list(obj) != header:
                    raise ValueError(f"line {len(rows) + 1} has other columns than the first")
                rows.append(list(obj.values()))
        return header or [], rows
    with path.open(newline="", encoding="utf-8") as fh:
        reader = csv.reader(fh)
        head = next(reader, [])
        return head, [[unneutralize(v) for v in row] for row in reader]


def _where(got: list[bytes], signed: list[bytes]) -> str:
    """Which row differs, and whether the rows are the signed ones in another order."""
    short = [h[:SHORT] for h in got]
    if len(short) == len(signed) and Counter(short) == Counter(signed):
        first = next(i for i, (a, b) in enumerate(zip(short, signed, strict=True)) if a != b)
        return f"the signed rows in another order (from row {first + 1})"
    first = next((i for i, (a, b) in enumerate(zip(short, signed, strict=False)) if a != b),
                 min(len(short), len(signed)))
    return f"row {first + 1} differs from the signed row"


def check_file(path: Path, fmt: str, public_key: Ed25519PublicKey, root: Path | None = None) -> Checked:
    """Re-hash one release file and compare it, and the files beside it, with the signed manifest beside it
    (``root``: the folder checked, whose ``window_date=`` partitions the manifest must agree with)."""
    rid = path.name[: -len(fmt) - 1]

    def bad(problem: str, rows: int = 0) -> Checked:
        return Checked(rid, path, rows, problem)

    mpath = manifest_path(path, rid)
    if mpath is None:
        return bad(f"no manifest beside it (_{rid}.manifest.json)")
    try:
        manifest, contract = load_signed(mpath, rid, public_key)
    except ValueError as exc:
        return bad(str(exc))
    digest = manifest.get("rows")
    signed = short_hashes(digest) if isinstance(digest, dict) else None
    if not isinstance(digest, dict) or signed is None:
        return bad("its manifest carries no row hashes (released before they existed): cannot be checked")
    try:
        header, rows = file_rows(path, fmt)
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        return bad(f"unreadable {fmt} file ({exc})")
    except Exception as exc:  # a damaged Parquet file raises pyarrow's own errors
        return bad(f"unreadable {fmt} file ({type(exc).__name__})")
    if header != digest.get("columns"):
        return bad(f"columns {header} differ from the signed columns {digest.get('columns')}", len(rows))
    if any(len(r) != len(header) for r in rows):
        return bad("a row with another number of cells than the header", len(rows))
    hashes = [row_hash(r) for r in rows]
    if len(rows) != manifest.get("records"):
        return bad(f"{len(rows)} rows, its signed manifest says {manifest.get('records')}", len(rows))
    if digest_of_hashes(hashes)["root"] != digest.get("root"):
        return bad(_where(hashes, signed), len(rows))
    return Checked(rid, path, len(rows), sidecar_problems(path.parent, root or path.parent, rid, manifest, contract))


def orphan_manifests(root: Path, data: list[tuple[Path, str]]) -> list[Checked]:
    """Manifests under ``root`` whose release has no data file beside them (deleted, or never written)."""
    if not root.is_dir():
        return []
    have = {(p.parent, p.name[: -len(fmt) - 1]) for p, fmt in data}
    out = []
    for mpath in sorted(root.rglob("*.manifest.json")):
        rid = valid_release_id(mpath.name.removeprefix("_")[: -len(".manifest.json")])
        if rid is not None and (mpath.parent, rid) not in have:
            names = " or ".join(f"{rid}.{fmt}" for fmt in FORMATS)
            out.append(Checked(rid, mpath, 0, f"its data file is missing ({names}; its signed manifest "
                                              f"{mpath.name} is here)"))
    return out


def check_releases(path: str | Path, public_key: Ed25519PublicKey) -> list[Checked]:
    """Every release file under ``path`` checked against its signed manifest (FileNotFoundError if no such path)."""
    root = Path(path)
    if not root.exists():
        raise FileNotFoundError(f"{root}: no such file or folder")
    data = release_data_files(root)
    found = [check_file(file, fmt, public_key, root) for file, fmt in data]
    return sorted(found + orphan_manifests(root, data), key=lambda c: (str(c.path.parent), c.release_id))


def verify_releases(path: str | Path, public_key: Ed25519PublicKey) -> list[Checked]:
    """:func:`check_releases`, raising :class:`ReleaseCheckError` naming every release that does not match."""
    results = check_releases(path, public_key)
    failed = {r.release_id: r.problem for r in results if r.problem is not None}
    if failed:
        raise ReleaseCheckError(failed)
    return results
