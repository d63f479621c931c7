"""``stream.wire.codebook.write_codebook`` on its own: the JSON and Markdown files beside a release."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from core.columns import build_codebook, typed_columns
from core.engines.registry import run
from core.generators import generate_crime_reports
from stream.io.specs import load_schema
from stream.wire.codebook import render_markdown, write_codebook


@pytest.fixture(scope="module")
def manifest() -> dict:
    schema = load_schema("crime")
    df = generate_crime_reports(np.random.default_rng(3), per_day=200)
    release = run("mondrian", df, schema, {"k": 5}, seed=0)
    days = ["2024-03-01"] * release.released
    context = {"event_date_lo": days, "event_date_hi": days, "station_id": "S1"}
    table = typed_columns(release.rows, schema, context)
    codebook = build_codebook(schema, table, suppressed=len(release.suppressed), context=list(context))
    return {"release_id": "r-abc", "engine": "mondrian", "k": 5, "l": None, "codebook": codebook,
            "columns": ["class_id", *table.columns]}


def test_writes_json_and_markdown(tmp_path: Path, manifest: dict) -> None:
    paths = write_codebook(tmp_path / "out", "r-abc", manifest)
    assert [p.name for p in paths] == ["_r-abc.codebook.json", "_r-abc.codebook.md"]  # "_": not data
    written = json.loads(paths[0].read_text())
    assert {k: v for k, v in written.items() if k != "reader_columns"} == manifest["codebook"]
    assert [c["name"] for c in written["reader_columns"]] == ["release_id"]
    md = paths[1].read_text()
    for col in [*manifest["columns"], "release_id"]:  # every column read_releases returns is explained too
        assert f"`{col}`" in md
    in_dataset = write_codebook(tmp_path / "ds", "r-abc", manifest, ["window_date"])
    assert "`window_date`" in in_dataset[1].read_text()
    assert "crime-reports" in md and md.count("\n") < 80  # short enough to read
    assert not list((tmp_path / "out").glob("*.tmp"))


def test_refuses_path_like_ids_and_skips_old_manifests(tmp_path: Path, manifest: dict) -> None:
    for bad in ("../x", str(tmp_path / "abs"), "", "a/b"):
        with pytest.raises(ValueError, match="alphabet"):
            write_codebook(tmp_path, bad, manifest)
    assert write_codebook(tmp_path, "r-old", {k: v for k, v in manifest.items() if k != "codebook"}) == []
    assert list(tmp_path.iterdir()) == []


def test_markdown_escapes_table_cells(manifest: dict) -> None:
    cb = {**manifest["codebook"], "columns": [{"name": "a|b", "type": "string", "meaning": "x\n| y"}]}
    md = render_markdown("r-abc", {**manifest, "codebook": cb})
    assert "| `a\\|b` | string | x \\| y |" in md
