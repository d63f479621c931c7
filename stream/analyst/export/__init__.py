"""Writing consumed releases: one file per release in CSV, Parquet or JSON lines, its manifest beside it.

Layout of an output folder (read back with :func:`stream.analyst.dataset.read_releases`):

* flat: ``OUT/<release id>.<ext>`` and its signed manifest ``OUT/_<release id>.manifest.json``;
* partitioned by date (``partition_by="date"``, one growing dataset): ``OUT/window_date=YYYY-MM-DD/``
  holding the same files, the date being the UTC day the release's window starts (hive style, so
  pyarrow, Spark or DuckDB read the folder as one table).

Sidecar files (manifest, codebook) and files being written start with ``_`` or ``.``, which pyarrow's
dataset discovery (and so ``pandas.read_parquet(folder)``), Spark and DuckDB's hive readers skip: a
folder of releases reads as its data alone. Folders written before this layout kept the manifest as
``<release id>.manifest.json``; :func:`manifest_path` finds either.

A release is written once: the data file is written last, under a temporary name renamed over it
once flushed to disk (:func:`stream.io.atomic.write_atomic`), so its presence means the release is
complete, and a release whose file exists is skipped (idempotent by
release id). The codebook (``stream.wire.codebook.write_codebook``: JSON and Markdown) is written beside
it, and so are the release's differentially private counts (``_<release id>.counts.json``,
:mod:`stream.analyst.counts`). File names come from the validated release id, never from a path.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from stream.analyst.counts import write_counts
from stream.analyst.export.csvfile import write_csv
from stream.analyst.export.jsonl import write_jsonl
from stream.analyst.export.parquet import write_parquet
from stream.io.atomic import write_atomic, write_text_atomic
from stream.wire.codebook import write_codebook
from stream.wire.release_ids import valid_release_id

FORMATS: tuple[str, ...] = ("csv", "parquet", "jsonl")
PARTITION_KEY = "window_date"  # not event_date: records may carry event_date columns of their own
UNKNOWN_DATE = "__HIVE_DEFAULT_PARTITION__"


def release_date(manifest: dict[str, Any]) -> str:
    """The release's partition date: as its manifest signs it (``files.partition``), else (older manifests)
    its window's start day (UTC: the first day of its events), else its first event's day."""
    def part(value: Any) -> dict[str, Any]:
        return value if isinstance(value, dict) else {}

    signed = part(part(manifest.get("files")).get("partition")).get(PARTITION_KEY)
    window, event_time = part(manifest.get("window")), part(manifest.get("event_time"))
    for value in (signed, window.get("start"), event_time.get("first")):
        if isinstance(value, str) and len(value) >= 10 and value[4] == "-" and value[7] == "-" \
                and value[:4].isdigit() and value[5:7].isdigit() and value[8:10].isdigit():
            return value[:10]
    return UNKNOWN_DATE


def release_folder(out_dir: Path, manifest: dict[str, Any], partition_by: str | None) -> Path:
    """Where a release's files go inside ``out_dir``."""
    if partition_by is None:
        return out_dir
    if partition_by != "date":
        raise ValueError(f"unknown partitioning {partition_by!r} (use 'date')")
    return out_dir / f"{PARTITION_KEY}={release_date(manifest)}"


def write_release(out_dir: Path, manifest: dict[str, Any], records: list[dict[str, Any]], fmt: str = "csv",
                  partition_by: str | None = None, raw_columns: tuple[str, ...] = ()) -> Path | None:
    """Write one complete release (records in ``seq`` order); returns its data file, or None if it was
    written before. ``raw_columns`` only matters for CSV (no formula neutralization in those columns)."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r} (use one of {', '.join(FORMATS)})")
    rid = valid_release_id(manifest.get("release_id"))
    if rid is None:
        raise ValueError("release id outside the allowed alphabet")
    folder = release_folder(out_dir, manifest, partition_by)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{rid}.{fmt}"
    if path.resolve().parent != folder.resolve():
        raise ValueError("release file would leave the output folder")
    if path.exists():
        return None
    write_text_atomic(folder / f"_{rid}.manifest.json", json.dumps(manifest, indent=2))
    write_codebook(folder, rid, manifest, [PARTITION_KEY] if partition_by else [])  # _<rid>.codebook.json, .md
    write_counts(folder, rid, manifest)  # _<rid>.counts.json: differentially private counts, if any
    if fmt == "csv":  # the data file last, whole (stream/io/atomic.py): its presence means the release is complete
        write_atomic(path, lambda tmp: write_csv(tmp, manifest, records, raw_columns))
    elif fmt == "jsonl":
        write_atomic(path, lambda tmp: write_jsonl(tmp, manifest, records))
    else:
        write_atomic(path, lambda tmp: write_parquet(tmp, manifest, records))
    return path


def written_release_ids(out_dir: Path, fmt: str) -> set[str]:
    """Ids of the releases already written in ``fmt`` under ``out_dir`` (flat or partitioned)."""
    if not out_dir.is_dir():
        return set()
    found = set()
    for path in out_dir.rglob(f"*.{fmt}"):
        rid = valid_release_id(path.name[: -len(fmt) - 1])
        if rid is not None and path.is_file():
            found.add(rid)
    return found


def manifest_path(data_file: Path, release_id: str) -> Path | None:
    """The manifest beside a release's data file (``_<id>.manifest.json``, or the older ``<id>.manifest.json``)."""
    for name in (f"_{release_id}.manifest.json", f"{release_id}.manifest.json"):
        if (data_file.parent / name).is_file():
            return data_file.parent / name
    return None
