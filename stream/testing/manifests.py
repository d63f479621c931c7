"""Manifests that keep the wire contract (:class:`stream.wire.contracts.Manifest`) for tests of readers:
the fields a reader does not look at get plain placeholder values, so a test states only what it tests."""

from __future__ import annotations

from typing import Any

from stream.wire.contracts import Manifest


def contract_manifest(release_id: str, columns: list[str], records: int, checksum: str,
                      start: str = "2024-03-01T00:00:00+00:00", **fields: Any) -> dict[str, Any]:
    """An unsigned manifest of ``release_id`` whose window starts at ``start``; ``fields`` add or override
    any field (``rows``, ``codebook``, ``dp``, ``files`` ...). Checked against the contract."""
    day = start[:10]
    body: dict[str, Any] = {
        "release_id": release_id,
        "window": {"id": f"station:S1|{day}T00:00:00Z|0", "key": "station:S1", "start": start,
                   "end": start, "first_day": day, "last_day": day, "seq": 0, "close_reason": "due"},
        "stations": ["S1"], "engine": "test", "params": {}, "seed": 0, "k": 2, "l": None, "metrics": {},
        "counts": {"released": records}, "records": records, "columns": columns, "checksum": checksum,
        **fields}
    Manifest.parse(body)
    return body
