"""Hypothesis strategies: small random tables with a matching schema."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from hypothesis import strategies as st

from core.encoding import Schema
from core.schema import parse_spec

COLORS = {"Warm": ["red", "orange", "yellow"], "Cool": ["blue", "green", "purple"]}
SHAPES = {"Round": ["circle", "oval"], "Angular": ["square", "triangle", "hexagon"]}
OFFENCES = ["Theft", "Robbery", "Fraud", "Assault", "Vandalism"]


def small_schema(with_sensitive: bool = True) -> Schema:
    spec: dict[str, Any] = {
        "name": "small",
        "identifiers": ["name"],
        "qi": [
            {"name": "age", "type": "numeric", "weight": 2, "hierarchy": {"widths": [5, 10, 20], "domain": [0, 100]}},
            {"name": "color", "type": "categorical", "hierarchy": {"tree": COLORS}},
            {"name": "shape", "type": "categorical", "hierarchy": {"tree": SHAPES}},
            {"name": "zip", "type": "masked", "hierarchy": {"mask": 3}},
        ],
    }
    if with_sensitive:
        spec["sensitive"] = {"name": "offence", "severity": {o: i + 1 for i, o in enumerate(OFFENCES)}}
    return Schema.from_spec(parse_spec(spec))


@st.composite
def small_tables(draw: st.DrawFn, min_rows: int = 8, max_rows: int = 60, few_offences: bool = False) -> pd.DataFrame:
    """``few_offences``: the offences come from the first 1 to 5 of :data:`OFFENCES` (drawn), so some tables
    cannot be made l-diverse at all."""
    seed, n = draw(st.integers(0, 2**32 - 1)), draw(st.integers(min_rows, max_rows))
    return make_table(seed, n, draw(st.integers(1, len(OFFENCES))) if few_offences else len(OFFENCES))


def make_table(seed: int, n: int, offences: int = len(OFFENCES)) -> pd.DataFrame:
    """A random table of ``n`` rows matching :func:`small_schema` (deterministic per seed); its offences
    are drawn from the first ``offences`` of :data:`OFFENCES`."""
    rng = np.random.default_rng(seed)
    colors = [c for group in COLORS.values() for c in group]
    shapes = [s for group in SHAPES.values() for s in group]
    return pd.DataFrame({
        "name": [f"person{i}" for i in range(n)],
        "age": rng.integers(15, 80, n),
        "color": rng.choice(colors, n),
        "shape": rng.choice(shapes, n),
        "zip": rng.choice(["801", "802", "811", "812", "900"], n),
        "offence": rng.choice(OFFENCES[:offences], n),
    })
