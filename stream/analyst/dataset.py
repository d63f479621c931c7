"""Load consumed releases into pandas: ``read_releases(path) -> DataFrame``.

``path`` is a folder written by ``anonstream consume`` (flat, or partitioned with ``--partition-by date``,
in any of CSV, Parquet and JSON lines, even mixed), or one release file. Every release's rows come with
its ``release_id`` and the partition columns of its folder (``window_date`` as a date), unless the
records carry a column of that name already (the codebook beside each release lists these too).
``read_releases(path, verify=True)`` first checks every file against its signed manifest. Columns are
typed the same way whatever the format (:mod:`stream.analyst.export.types`): integers ``Int64``, decimals
``float64``, dates and times ``datetime64``, yes/no ``boolean``, everything else ``string``. CSV holds no
types, so there a text column whose every value is written like a number (e.g. unmasked postcodes)
reads as a number; Parquet and JSON lines keep the types exactly.

    >>> from stream.analyst.dataset import read_releases
    >>> df = read_releases("releases/")
    >>> df.groupby(["release_id", "sex"]).size()

``read_counts(path)`` (:mod:`stream.analyst.counts`) loads the releases' differentially private count
tables, written beside them, with each cell's ``count`` and ``ci95``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from stream.analyst.check import release_data_files, resolve_public_key, verify_releases
from stream.analyst.counts import read_counts
from stream.analyst.export.types import typed_column, typed_frame
from stream.io.csvsafe import unneutralize

__all__ = ["read_counts", "read_releases"]


def _read_one(path: Path, fmt: str) -> pd.DataFrame:
    if fmt == "parquet":
        return pd.read_parquet(path)
    if fmt == "jsonl":
        with path.open(encoding="utf-8") as fh:
            rows = [json.loads(line) for line in fh if line.strip()]
        return typed_frame(pd.DataFrame(rows, dtype=object))
    frame = pd.read_csv(path, dtype=str, keep_default_na=False, na_values=[""])
    frame = frame.astype(object).where(frame.notna(), None)
    for c in frame.columns:
        quoted = frame[c].str.startswith("'", na=False)
        if quoted.any():
            frame.loc[quoted, c] = frame.loc[quoted, c].map(unneutralize)
    return typed_frame(frame, from_text=True)


def _partitions(path: Path, root: Path) -> dict[str, str]:
    """``key=value`` folder names between ``root`` and the file (hive-style partitions)."""
    rel = path.parent.relative_to(root) if root.is_dir() else Path()
    return dict(part.split("=", 1) for part in rel.parts if "=" in part)


def read_releases(path: str | Path, verify: bool = False,
                  public_key: str | Ed25519PublicKey | None = None) -> pd.DataFrame:
    """Every release under ``path`` as one typed DataFrame with ``release_id`` (and partition) columns.

    With ``verify``, every release file is first re-hashed and compared with the signed manifest beside
    it (:mod:`stream.analyst.check`); :class:`stream.analyst.check.ReleaseCheckError` names each release
    that does not match. ``public_key`` (a key, 64 hex digits or ``@file``) defaults to the one
    ``consume`` uses (``ANONSTREAM_RELEASE_PUBLIC_KEY``, else the local worker's key)."""
    root = Path(path)
    if not root.exists():
        raise FileNotFoundError(f"{root}: no such file or folder")
    if verify:
        verify_releases(root, resolve_public_key(public_key))
    frames = []
    keys: list[str] = []
    for file, fmt in release_data_files(root):
        frame = _read_one(file, fmt)
        frame.insert(0, "release_id", pd.Series([file.name[: -len(fmt) - 1]] * len(frame), dtype="string",
                                                index=frame.index))
        for key, value in _partitions(file, root).items():
            if key not in frame.columns:
                frame[key] = None if value == "__HIVE_DEFAULT_PARTITION__" else value
                keys += [key] if key not in keys else []
        frames.append(frame)
    if not frames:
        return pd.DataFrame({"release_id": pd.Series(dtype="string")})
    data = pd.concat(frames, ignore_index=True, sort=False)
    out = {}
    for c in data.columns:  # a column typed alike in every file keeps its type; others are typed again
        kinds = {str(f[c].dtype) for f in frames if c in f.columns}
        if len(kinds) == 1 and c not in keys and all(c in f.columns for f in frames):
            out[c] = data[c]
        else:
            col = data[c].astype(object)
            out[c] = typed_column(col.where(col.notna(), None), from_text=c in keys)
    return pd.DataFrame(out)
