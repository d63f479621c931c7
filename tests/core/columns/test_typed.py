"""Typed release columns, checked row by row against the input, for every engine (issue 17 item 1).

The checks are written here from the spec alone (its tree / table rows, the mask rule, the date
calendar), not from the engines' or :mod:`core.columns`' code: each released row's ``<qi>_lo <=
original <= <qi>_hi``, ``<qi>_start <= date <= <qi>_end``, and for hierarchical QIs the original
lies under the label, ``<qi>_level`` is the label's level and each ancestor column is the
original's ancestor at that level.
"""

from __future__ import annotations

import pandas as pd
import pytest

from core.columns import build_codebook, release_columns, spec_version, typed_columns
from core.encoding import Schema
from core.engines.registry import engine_names, run
from core.generators import generate_crime_reports
from core.schema import parse_spec
from core.verify import verify_release
from stream.io.specs import load_schema

ROWS = 300


def _tree_paths(tree: dict, ancestors: tuple[str, ...] = ()) -> dict[str, list[str]]:
    """leaf -> [leaf, parent, ..., root-child] written from the spec's nested tree (no padding)."""
    out: dict[str, list[str]] = {}
    for key, child in tree.items():
        if isinstance(child, dict):
            out.update(_tree_paths(child, (key, *ancestors)))
        else:
            for leaf in child:
                out[str(leaf)] = [str(leaf), key, *ancestors]
    return out


def _chains(schema: Schema) -> dict[str, dict[str, list[str]]]:
    """Per tree / table QI: original value -> its labels from level 0 up (the top '*' appended)."""
    out: dict[str, dict[str, list[str]]] = {}
    for q in schema.spec.qi:
        h = q.hierarchy
        if h.kind == "tree":
            paths = _tree_paths(h.tree)
            depth = max(len(p) for p in paths.values())
            out[q.name] = {leaf: [p[0]] * (depth - len(p) + 1) + p[1:] + ["*"] for leaf, p in paths.items()}
        elif h.kind == "table":
            assert h.rows is not None, f"{q.name}: table rows not loaded"
            out[q.name] = {r[0]: list(r) + ([] if r[-1] == "*" else ["*"]) for r in h.rows}
    return out


def _with_day(spec_name: str) -> Schema:
    """The crime spec plus a date QI ``day`` (the event day), so date columns are exercised too."""
    spec = load_schema(spec_name).spec.model_dump(mode="json")
    spec["qi"] = [*spec["qi"], {"name": "day", "type": "date", "hierarchy": {"kind": "dates"}}]
    return Schema.from_spec(parse_spec(spec))


def _adult_with_severity() -> Schema:
    """Adult with salary-class as a sensitive attribute with severities (CG engines need one)."""
    spec = load_schema("adult").spec.model_dump(mode="json")
    spec["qi"] = [q for q in spec["qi"] if q["name"] != "salary-class"]
    spec["sensitive"] = {"name": "salary-class", "severity": {"<=50K": 1, ">50K": 2}}
    return Schema.from_spec(parse_spec(spec))


@pytest.fixture(scope="module")
def crime_input() -> pd.DataFrame:
    import numpy as np

    df = generate_crime_reports(np.random.default_rng(7), days=3, per_day=ROWS // 3)
    df["day"] = df["event_time"].str.slice(0, 10)
    return df


@pytest.fixture(scope="module")
def adult_input(adult_df: pd.DataFrame) -> pd.DataFrame:
    return adult_df.sample(ROWS, random_state=3)


def _check_row_by_row(schema: Schema, original: pd.DataFrame, table: pd.DataFrame) -> None:
    chains = _chains(schema)
    orig = original.loc[table.index]
    for q in schema.spec.qi:
        name, labels = q.name, table[q.name].astype(str)
        kind = q.hierarchy.kind
        star = labels == "*"
        if kind == "intervals":
            v = pd.to_numeric(orig[name]).astype(float)
            lo, hi = table[f"{name}_lo"].astype(float), table[f"{name}_hi"].astype(float)
            assert (lo[~star] <= v[~star]).all() and (v[~star] <= hi[~star]).all(), name
            half_open = labels.str.endswith(")")
            assert (v[half_open] < hi[half_open]).all(), name
            assert lo[star].isna().all() and hi[star].isna().all()
        elif kind == "dates":
            day = pd.to_datetime(orig[name])
            start, end = pd.to_datetime(table[f"{name}_start"]), pd.to_datetime(table[f"{name}_end"])
            assert (start[~star] <= day[~star]).all() and (day[~star] <= end[~star]).all(), name
        elif kind == "mask":
            for lab, value, level in zip(labels, orig[name].astype(str), table[f"{name}_level"], strict=True):
                if lab.startswith("{"):
                    assert value in lab[1:-1].split(",") and pd.isna(level)
                elif set(lab) != {"*"}:
                    kept = lab.rstrip("*")
                    assert len(lab) == len(value) and value.startswith(kept) and level == len(lab) - len(kept)
        else:
            chain = chains[name]
            anc_cols = [c for c in table.columns if c.startswith(f"{name}_") and c != f"{name}_level"]
            for i, (lab, value) in enumerate(zip(labels, orig[name].astype(str).str.strip(), strict=True)):
                path = chain[value]
                level = table[f"{name}_level"].iloc[i]
                if lab.startswith("{"):
                    assert value in lab[1:-1].split(",") and pd.isna(level)
                    continue
                assert lab in path, (name, lab, value)
                assert level == path.index(lab), (name, lab, level)
                for j, col in enumerate(anc_cols, start=1):
                    got = table[col].iloc[i]
                    assert (got == path[j]) if j >= level else pd.isna(got), (col, lab, got)
    all_star = (table[[q.name for q in schema.spec.qi]].astype(str) == "*").all(axis=1)
    assert (table["suppressed"] == all_star).all()


CASES = [("crime", lambda: load_schema("crime")), ("crime+day", lambda: _with_day("crime")),
         ("adult", lambda: load_schema("adult"))]


@pytest.mark.parametrize("engine", engine_names())
@pytest.mark.parametrize("case", [c[0] for c in CASES])
def test_typed_columns_bound_the_original_values(engine: str, case: str, crime_input: pd.DataFrame,
                                                 adult_input: pd.DataFrame) -> None:
    schema = dict(CASES)[case]()
    if case == "adult" and engine.startswith("cg-"):
        schema = _adult_with_severity()
    df = adult_input if case == "adult" else crime_input
    params = {"k": 3, "max_suppression": 0.1, **({"l": 2} if engine == "cg-diverse" else {})}  # adult: 2 classes
    release = run(engine, df, schema, params, seed=1)
    assert verify_release(df, release, schema).ok
    days = ["2024-01-01"] * release.released  # per row (core.columns.dates), the key per release
    context = {"event_date_lo": days, "event_date_hi": days, "station_id": "S1"}
    table = typed_columns(release.rows, schema, context)
    assert list(table.columns) == [c.name for c in release_columns(schema, list(context))]
    assert len(table) == release.released
    _check_row_by_row(schema, df, table)
    codebook = build_codebook(schema, table, suppressed=len(release.suppressed), context=list(context))
    listed = [c["name"] for c in codebook["columns"]]
    assert listed == ["class_id", *table.columns]  # every published column appears in the codebook
    for qi, entry in codebook["qis"].items():
        assert sum(s["share"] for s in entry["shares"]) == pytest.approx(1.0), qi
        assert sum(s["rows"] for s in entry["shares"]) == len(table)
    assert codebook["suppressed"]["not_published"] == len(release.suppressed)


def test_crime_columns_have_the_spec_level_names() -> None:
    cols = [c.name for c in release_columns(load_schema("crime"), ["event_date_lo", "event_date_hi", "station_id"])]
    assert cols == ["age", "age_lo", "age_hi", "sex", "sex_level", "suburb", "suburb_level", "suburb_region",
                    "postcode", "postcode_level", "reporter", "reporter_level", "reporter_group", "offence",
                    "suppressed", "event_date_lo", "event_date_hi", "station_id"]


def test_spec_version_is_the_content_not_the_file() -> None:
    a, b = load_schema("crime").spec, load_schema("crime").spec
    assert spec_version(a) == spec_version(b) and len(spec_version(a)) == 64
    changed = a.model_copy(update={"name": "crime-2"})
    assert spec_version(changed) != spec_version(a)


def test_labels_read_back_for_edge_cases() -> None:
    """Negative and real bounds, half-open bands, legacy labels and unknown labels."""
    from core.columns import interpreter

    spec = parse_spec({"qi": [{"name": "x", "type": "numeric", "hierarchy": {"widths": [0.5, 1]}}]})
    interp = interpreter(spec.qi[0], Schema.from_spec(spec).hierarchies["x"])
    assert interp.values("[-1.5, -1)") == (-1.5, -1.0)
    assert interp.values("[-5-3]") == (-5.0, 3.0)  # legacy closed range
    assert interp.values("2.25") == (2.25, 2.25)
    assert interp.values("*") == (None, None) and interp.values("garbage") == (None, None)


@pytest.mark.parametrize("name", ["crime", "adult", "adult-uci", "nypd"])
def test_every_bundled_spec_has_distinct_published_columns(name: str) -> None:
    cols = [c.name for c in release_columns(load_schema(name), ["event_date_lo", "event_date_hi", "station_id"])]
    assert len(cols) == len(set(cols)) and "class_id" not in cols


def test_a_generated_name_that_collides_is_a_spec_error() -> None:
    from core.errors import SpecError

    spec = load_schema("crime").spec.model_dump(mode="json")
    spec["passthrough"] = ["age_lo"]
    with pytest.raises(SpecError, match="age_lo"):
        release_columns(Schema.from_spec(parse_spec(spec)))
