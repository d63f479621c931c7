"""JSON lines: one object per record in ``seq`` order, ``class_id`` then the columns, JSON-typed values."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def write_jsonl(path: Path, manifest: dict[str, Any], records: list[dict[str, Any]]) -> None:
    cols = [str(c) for c in manifest["columns"] if c != "class_id"]
    with path.open("w", encoding="utf-8") as fh:
        for r in records:
            row = {"class_id": r.get("class_id"), **{c: r["values"].get(c) for c in cols}}
            fh.write(json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n")
