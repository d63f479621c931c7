"""``band_counts`` on released rows: counts per band at a chosen level, coarser rows apart."""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from core.columns import build_codebook, typed_columns
from core.engines.registry import run
from core.generators import generate_crime_reports
from core.metrics.utility import utility_paragraph, utility_report
from stream.analyst import Bands, CoarseBandsWarning, band_counts, read_codebook, read_utility
from stream.analyst.export import write_release
from stream.io.specs import load_schema


@pytest.fixture(scope="module")
def release() -> tuple[pd.DataFrame, dict]:
    schema = load_schema("crime")
    df = generate_crime_reports(np.random.default_rng(4), per_day=300)
    rel = run("mondrian", df, schema, {"k": 5}, seed=0)
    table = typed_columns(rel.rows, schema)
    return table, build_codebook(schema, table, suppressed=len(rel.suppressed))


def counted(*args: Any, **kwargs: Any) -> Bands:
    """``band_counts``, checking that it warned exactly when under half the rows resolve."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        bands = band_counts(*args, **kwargs)
    coarse = [w for w in caught if issubclass(w.category, CoarseBandsWarning)]
    assert len(coarse) == (1 if bands.resolved < 0.5 else 0) == (0 if bands.warning is None else 1)
    assert not coarse or str(coarse[0].message) == bands.warning
    return bands


def test_decades_match_the_typed_bounds(release: tuple[pd.DataFrame, dict]) -> None:
    table, codebook = release
    bands = counted(table, "age", "band of width 10", codebook)
    lo, hi = table["age_lo"], table["age_hi"]
    inside = lo.notna() & (lo // 10 == hi // 10)
    expected = (lo[inside] // 10 * 10).astype(int).map(lambda d: f"[{d}, {d + 9}]").value_counts()
    assert bands.counts[bands.counts > 0].to_dict() == expected.to_dict()
    assert bands.coarser == int((~inside).sum()) and bands.total == len(table)
    firsts = [int(s.split(",")[0][1:]) for s in bands.counts.index]
    assert firsts == list(range(firsts[0], firsts[-1] + 1, 10))  # every decade between, in order


def test_tree_level_agrees_with_the_region_column(release: tuple[pd.DataFrame, dict]) -> None:
    table, codebook = release
    bands = counted(table, "suburb", "region", codebook)
    regions = table["suburb_region"].dropna().value_counts()
    assert bands.counts[bands.counts > 0].to_dict() == regions.to_dict()
    assert bands.coarser == int(table["suburb_region"].isna().sum())
    assert len(bands.counts) == 8  # every region of the spec, empty ones included


def test_read_codebook_from_a_folder_and_errors(release: tuple[pd.DataFrame, dict], tmp_path: Path) -> None:
    table, codebook = release
    (tmp_path / "r-1.codebook.json").write_text(json.dumps(codebook))
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "r-2.manifest.json").write_text(json.dumps({"codebook": codebook}))
    assert read_codebook(tmp_path) == codebook
    assert read_codebook(tmp_path / "sub" / "r-2.manifest.json") == codebook
    (tmp_path / "sub" / "r-3.codebook.json").write_text(json.dumps({**codebook, "spec": {"version": "other"}}))
    with pytest.raises(ValueError, match="2 spec versions"):
        read_codebook(tmp_path)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="no codebook found"):
        read_codebook(tmp_path / "empty")
    with pytest.raises(ValueError, match="no level 'decade'"):
        band_counts(table, "age", "decade", codebook)
    with pytest.raises(ValueError, match="no grid for 'height'"):
        band_counts(table, "height", 1, codebook)


def _consumed_folder(tmp_path: Path) -> Path:
    """Two crime releases written by the consumer's own writer, manifests with their utility reports."""
    schema = load_schema("crime")
    out = tmp_path / "releases"
    for i, engine in enumerate(("cg-kanon", "mondrian")):
        df = generate_crime_reports(np.random.default_rng(10 + i), per_day=150)
        rel = run(engine, df, schema, {"k": 5}, seed=0)
        table = typed_columns(rel.rows, schema)
        utility = utility_report(schema, df, rel.rows, k=5, public=True)
        manifest = {"release_id": f"r-{i}", "columns": ["class_id", *table.columns], "utility": utility,
                    "engine": engine, "k": 5, "l": None, "codebook": build_codebook(
                        schema, table, suppressed=len(rel.suppressed), utility=utility_paragraph(utility))}
        values = table.astype(object).where(table.notna(), None)
        records = [{"class_id": int(c), "values": dict(zip(table.columns, row, strict=True))}
                   for c, row in zip(rel.class_ids, values.itertuples(index=False, name=None), strict=True)]
        write_release(out, manifest, records, fmt="parquet")
    return out


def test_readme_analyst_example_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text()
    section = readme[readme.index("them and count at one level of the spec's hierarchy"):]
    code = re.findall(r"```python\n(.*?)```", section, flags=re.S)[0]
    assert "band_counts" in code and "groupby([\"age_lo\", \"age_hi\"])" not in code
    folder = _consumed_folder(tmp_path)
    with warnings.catch_warnings(record=True) as caught:  # the README shows a level few rows resolve at
        warnings.simplefilter("always")
        exec(compile(code.replace("var/demo/releases", str(folder)), "README.md", "exec"), {})
    assert all(issubclass(w.category, CoarseBandsWarning) for w in caught)
    out = capsys.readouterr().out
    assert "[20, 39]" in out and "Cape Flats" in out and "Preserves: " in out
    utility = read_utility(folder)
    assert set(utility["release_id"]) == {"r-0", "r-1"} and set(utility["qi"]) == set(load_schema("crime").qi_names)
    assert utility["resolved"].between(0, 1).all()


def test_a_large_table_rolls_up_through_its_typed_columns(release: tuple[pd.DataFrame, dict]) -> None:
    table, codebook = release
    small = {**codebook["qis"]["suburb"], "grid": {**codebook["qis"]["suburb"]["grid"], "rows": None}}
    large = {**codebook, "qis": {**codebook["qis"], "suburb": small}}  # as a table over MAX_TABLE_ROWS travels
    for level in ("value", "region", "*"):
        assert counted(table, "suburb", level, large).counts[lambda c: c > 0].sort_index().to_dict() == \
            counted(table, "suburb", level, codebook).counts[lambda c: c > 0].sort_index().to_dict()


def test_decades_of_a_400_report_window_warn_and_name_the_dp_table() -> None:
    """Issue 39: the stream's default release of a 400-report window resolves few rows to a decade; the
    histogram then warns, and names the spec's DP count table over age by decade."""
    schema = load_schema("crime")
    df = generate_crime_reports(np.random.default_rng(7), per_day=400)
    rel = run("cg-diverse", df, schema, {"k": 5, "l": 2, "max_suppression": 0.05}, seed=0)
    table = typed_columns(rel.rows, schema)
    codebook = build_codebook(schema, table, suppressed=len(rel.suppressed))
    lo, hi = table["age_lo"], table["age_hi"]
    share = float((lo.notna() & (lo // 10 == hi // 10)).mean())  # oracle: rows whose range fits one decade
    assert share < 0.5
    with pytest.warns(CoarseBandsWarning, match=r"age_band x sex, age_band x sex x offence") as caught:
        bands = band_counts(table, "age", "band of width 10", codebook, dp=schema.spec.dp)
    assert len(caught) == 1 and bands.warning == str(caught[0].message)
    assert bands.resolved == pytest.approx(share) and f"only {share:.0%} of the rows" in bands.warning
    assert bands.dp_tables == ("age_band x sex", "age_band x sex x offence")
    # by level number and from the [dp] table as a dict: the same table; without one, the advice instead
    assert schema.spec.dp is not None
    assert band_counts_quiet(table, codebook, 2, schema.spec.dp.model_dump()).dp_tables == bands.dp_tables
    plain = band_counts_quiet(table, codebook, 2, None)
    assert plain.dp_tables == () and plain.warning is not None and "coarser level" in plain.warning
    # every row resolves at the top: no warning (pytest's filter turns one into an error)
    top = band_counts(table, "age", "*", codebook, dp=schema.spec.dp)
    assert top.warning is None and top.resolved == 1.0


def band_counts_quiet(table: pd.DataFrame, codebook: dict, level: int, dp: object) -> Bands:
    with pytest.warns(CoarseBandsWarning):
        return band_counts(table, "age", level, codebook, dp=dp)


def test_dp_tables_for_a_region_and_a_plain_qi() -> None:
    from stream.analyst.bands import dp_tables_for

    dp = load_schema("crime").spec.dp
    assert dp_tables_for(dp, "suburb", 1, "region") == ("region x offence", "week x region")
    assert dp_tables_for(dp, "sex", 0, "value") == ("age_band x sex", "age_band x sex x offence")
    assert dp_tables_for(dp, "age", 1, "band of width 5") == ()
    assert dp_tables_for(None, "age", 2, "band of width 10") == ()
