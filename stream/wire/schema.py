"""JSON Schema of the wire contracts (:mod:`stream.wire.contracts`), committed in ``docs/schema/``.

``python -m stream.wire.schema`` writes ``docs/schema/<name>.schema.json`` for the manifest, the record
message, the count tables' sidecar and the push receipt; ``python -m stream.wire.schema --check`` exits
1 when a committed file differs from the models (the tests check it too).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from stream.wire.contracts import SCHEMAS

DOCS = Path(__file__).resolve().parents[2] / "docs" / "schema"


def schema_texts() -> dict[str, str]:
    """``<name>.schema.json`` -> its text, generated from the models (stable: keys sorted)."""
    out = {}
    for name, model in SCHEMAS.items():
        schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", **model.model_json_schema()}
        out[f"{name}.schema.json"] = json.dumps(schema, indent=2, sort_keys=True) + "\n"
    return out


def stale(folder: Path = DOCS) -> list[str]:
    """The schema files in ``folder`` that are missing or differ from the models."""
    return [name for name, text in schema_texts().items()
            if not (folder / name).is_file() or (folder / name).read_text(encoding="utf-8") != text]


def main(argv: list[str] | None = None) -> int:
    """Write the schema files (or, with ``--check``, only report the stale ones)."""
    args = sys.argv[1:] if argv is None else argv
    if "--check" in args:
        names = stale()
        for name in names:
            print(f"docs/schema/{name} differs from stream/wire/contracts.py: run python -m stream.wire.schema",
                  file=sys.stderr)
        return 1 if names else 0
    DOCS.mkdir(parents=True, exist_ok=True)
    for name, text in schema_texts().items():
        (DOCS / name).write_text(text, encoding="utf-8")
        print(f"wrote docs/schema/{name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
