"""The manifest carries the release's utility report (the publishable figures), covered by its signature."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from types import SimpleNamespace

import numpy as np
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from core.columns import build_codebook, typed_columns
from core.engines.registry import run
from core.generators import generate_crime_reports
from core.metrics.utility import utility_paragraph, utility_report
from stream.io.specs import load_schema
from stream.wire.codebook import render_markdown
from stream.wire.manifest import build_manifest
from stream.wire.signing import sign_manifest, verify_manifest


def test_manifest_and_codebook_carry_the_utility_report() -> None:
    schema = load_schema("crime")
    df = generate_crime_reports(np.random.default_rng(5), per_day=200)
    release = run("cg-kanon", df, schema, {"k": 5}, seed=0)
    utility = utility_report(schema, df, release.rows, k=5, public=True)
    table = typed_columns(release.rows, schema)
    codebook = build_codebook(schema, table, suppressed=len(release.suppressed), utility=utility_paragraph(utility))
    t = datetime(2024, 3, 1, tzinfo=UTC)
    window = SimpleNamespace(id="S1:2024-03-01", key="S1", start=t, end=t, seq=0, close_reason="time")
    manifest = build_manifest("r-1", window, ("2024-03-01", "2024-03-01"), ["S1"], release, 0, sample_policy="all",
                              link_guard="report", k=5, l=None, risk=None, metrics={}, counts={}, records=len(table),
                              columns=[], checksum="0" * 64, codebook=codebook, utility=utility)
    fallback = release.diagnostics.get("nesting_fallback")  # QIs over 1.25x their free loss (issue 39)
    assert manifest["utility"] == json.loads(json.dumps({**utility, **({"nesting_fallback": fallback} if fallback
                                                                        else {})}))
    assert manifest["utility"]["public"] is True
    assert set(manifest["utility"]["qis"]) == set(schema.qi_names)
    assert manifest["utility"]["crosstab"]["columns"] == ["suburb:region", "offence"]  # as the bundled spec names
    assert manifest["codebook"]["utility"].startswith("Preserves: ")
    assert "largest cell error" in manifest["codebook"]["utility"]
    key = Ed25519PrivateKey.generate()
    signed = sign_manifest(manifest, key)
    assert verify_manifest(signed, key.public_key()) is None
    forged = {**signed, "utility": {**signed["utility"], "published": 1}}
    assert verify_manifest(forged, key.public_key()) is not None  # the figures are signed content
    md = render_markdown("r-1", signed)
    assert "## What the release preserves" in md and manifest["codebook"]["utility"][:40] in md
