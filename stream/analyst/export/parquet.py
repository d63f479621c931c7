"""Parquet (pyarrow): the release as a typed table (:func:`stream.analyst.export.types.release_frame`), so
``Int64``, ``float64``, ``boolean``, ``string`` and datetime columns round-trip."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from stream.analyst.export.types import release_frame


def write_parquet(path: Path, manifest: dict[str, Any], records: list[dict[str, Any]]) -> None:
    table = pa.Table.from_pandas(release_frame(manifest, records), preserve_index=False)
    pq.write_table(table, path)
