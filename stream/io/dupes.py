"""Report ids repeated inside one file, found in memory that does not grow with the file.

Before ``push`` sends anything it streams the file once, hashing each row's (station, report id), or
its report id alone when the spec's ids are department-wide (``id_scope = "global"``), both in their
canonical form (:func:`core.canonical.canonical_id`: ``0042`` is report ``42``), to 64 bits
(BLAKE2b) and writing ``(hash, line)`` pairs to temporary files, one sorted run of ``run_rows`` rows
at a time. A row is a duplicate when its hash occurs on an earlier line: within its
own run (adjacent after sorting) or in an earlier run (a binary search in that run's memory-mapped
file). Memory is one run plus the duplicates found; disk is 12 bytes per row, deleted at the end.
Two different ids share a 64-bit hash with probability about n^2 / 2^65 (1e-6 for 5 million rows).
"""

from __future__ import annotations

import hashlib
import tempfile
from array import array
from collections.abc import Iterator, Mapping
from pathlib import Path

import numpy as np

from core.canonical import canonical_id
from stream.io.rows import Row

_PAIR = np.dtype([("key", "<u8"), ("line", "<u4")])


def _digest(station: str, report_id: str) -> int:
    return int.from_bytes(hashlib.blake2b(f"{station}\x1f{report_id}".encode(), digest_size=8).digest(), "little")


def _sorted_run(keys: array, lines: array) -> np.ndarray:
    run = np.empty(len(keys), dtype=_PAIR)
    run["key"] = np.frombuffer(keys, dtype="<u8")
    run["line"] = np.frombuffer(lines, dtype="<u4")
    run.sort(order=("key", "line"))
    return run


def _dupes_within(run: np.ndarray) -> dict[int, int]:
    """Line -> first line, for keys repeated inside one sorted run."""
    same = np.flatnonzero(run["key"][1:] == run["key"][:-1]) + 1
    out: dict[int, int] = {}
    for i in same.tolist():
        j = i
        while j > 0 and run["key"][j - 1] == run["key"][i]:
            j -= 1
        out[int(run["line"][i])] = int(run["line"][j])
    return out


def _dupes_earlier(run: np.ndarray, earlier: np.ndarray, found: dict[int, int]) -> None:
    """Mark rows of ``run`` whose key occurs in an earlier run (its first line there wins)."""
    pos = np.searchsorted(earlier["key"], run["key"])
    ok = pos < len(earlier)
    hit = np.flatnonzero(ok)[earlier["key"][pos[ok]] == run["key"][ok]]
    for i in hit.tolist():
        line = int(run["line"][i])
        first = int(earlier["line"][pos[i]])
        if line not in found or found[line] > first:
            found[line] = first


def repeated_ids(rows: Iterator[Row], id_col: str, station_col: str, station: str | None,
                 run_rows: int = 250_000, global_ids: bool = False,
                 station_map: Mapping[str, str] | None = None) -> dict[int, int]:
    """``{line: first line}`` for every row whose (station, report id) appeared on an earlier line; with
    ``global_ids`` (department-wide ids) every row whose report id did, whatever its station. A station
    value ``station_map`` lists (the spec's, keys trimmed) is its mapped id, as the worker keys it: an
    area name and its station id are one station."""
    found: dict[int, int] = {}
    with tempfile.TemporaryDirectory(prefix="anonstream-ids-") as tmp:
        paths: list[Path] = []

        def close_run(keys: array, lines: array) -> None:
            run = _sorted_run(keys, lines)
            for line, first in _dupes_within(run).items():
                found[line] = first
            for p in paths:  # earlier runs hold earlier lines, so their first line wins
                _dupes_earlier(run, np.load(p, mmap_mode="r"), found)
            path = Path(tmp) / f"run{len(paths)}.npy"
            np.save(path, run)
            paths.append(path)

        keys, lines = array("Q"), array("I")  # 12 bytes a row, not Python ints
        for line, row in rows:
            rid = row.get(id_col)
            if rid in (None, ""):
                continue
            given = row.get(station_col)
            st = "*" if global_ids else station if station is not None else _station(given, station_map)
            keys.append(_digest(canonical_id(st), canonical_id(rid)))
            lines.append(line)
            if len(keys) >= run_rows:
                close_run(keys, lines)
                keys, lines = array("Q"), array("I")
        if keys:
            close_run(keys, lines)
    # a row repeated three times points at the very first line, not the second
    return {line: _root(found, first) for line, first in found.items()}


def _station(value: object, station_map: Mapping[str, str] | None) -> str:
    """The station a row's station value keys: through ``station_map`` when listed there."""
    text = str(value or "")
    return station_map.get(text.strip(), text) if station_map else text


def _root(found: dict[int, int], line: int) -> int:
    while line in found:
        line = found[line]
    return line
