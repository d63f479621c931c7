"""CSV: a header, then one row per record in ``seq`` order; formula-like text neutralized (stream.io.csvsafe)."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from stream.io.csvsafe import neutralize_row


def write_csv(path: Path, manifest: dict[str, Any], records: list[dict[str, Any]],
              raw_columns: tuple[str, ...] = ()) -> None:
    """Write the release to ``path``; text cells that would run as spreadsheet formulas get a leading
    ``'`` except in ``raw_columns`` (numbers are never changed)."""
    cols = [str(c) for c in manifest["columns"] if c != "class_id"]
    raw = [False, *(c in raw_columns for c in cols)]
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(neutralize_row(["class_id", *cols], raw))
        for r in records:
            w.writerow(neutralize_row([r.get("class_id"), *(r["values"].get(c) for c in cols)], raw))
