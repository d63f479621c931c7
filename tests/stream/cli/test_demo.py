"""`anonstream demo` finishes by itself: embedded broker, worker, simulated stations, exit 0."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import pytest

pytestmark = [pytest.mark.broker, pytest.mark.slow]


def test_demo_runs_a_day_and_its_releases_load_with_read_releases(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """The demo exits 0 with every report accounted for, and (issue 17's "done when") its releases, in
    its default folder as Parquet, load with read_releases and group by age_lo/age_hi or suburb_region
    with no further code."""
    from stream.analyst.dataset import read_releases
    from stream.cli.main import main
    from stream.testing.reports import spec_ref

    monkeypatch.chdir(tmp_path)
    for key in [k for k in os.environ if k.startswith("ANONSTREAM_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("ANONSTREAM_SPEC", spec_ref())
    folder = tmp_path / "var" / "demo" / "releases"
    folder.mkdir(parents=True)
    (folder / "stale.parquet").write_bytes(b"from an earlier demo")  # the default folder is emptied first
    code = main(["demo", "--stations", "2", "--reports", "150", "--idle-timeout", "2", "--timeout", "150"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "read_releases" in out and not (folder / "stale.parquet").exists()
    assert "dlq 3" in out and (tmp_path / "var" / "demo" / "anonstream.db").exists()
    printed = [line for line in out.splitlines() if line.startswith("release r-")]
    assert printed and len(list(folder.glob("*.parquet"))) == len(printed)
    df = read_releases(folder)
    released = sum(int(line.split("released ")[1].split("/")[0]) for line in out.splitlines()
                   if line.startswith("release r-"))
    assert len(df) == released > 0
    assert str(df["age_lo"].dtype) == "Int64" and str(df["age_hi"].dtype) == "Int64"
    by_age = df.groupby(["age_lo", "age_hi"]).size()
    assert by_age.sum() == len(df.dropna(subset=["age_lo", "age_hi"]))
    assert (df["age_lo"].dropna() <= df.loc[df["age_lo"].notna(), "age_hi"]).all()
    by_region = df.groupby("suburb_region").size()
    assert len(by_region) >= 1 and by_region.sum() == df["suburb_region"].notna().sum()
    assert len(list(folder.glob("*.codebook.md"))) == df["release_id"].nunique()
    # issue 26's "done when": a histogram per band at a chosen level, and what the releases preserve
    from stream.analyst import band_counts, read_codebook, read_utility
    from stream.io.specs import load_schema

    with warnings.catch_warnings(record=True) as caught:  # a decade resolves for few rows of a demo window
        warnings.simplefilter("always")
        ages = band_counts(df, "age", "band of width 10", read_codebook(folder), dp=load_schema("crime").spec.dp)
    assert ages.total == len(df) and all(band.startswith("[") for band in ages.counts.index)
    assert len(caught) == (ages.resolved < 0.5) and (ages.warning is None) == (ages.resolved >= 0.5)
    assert "age_band x sex x offence" in ages.dp_tables and all("age_band" in t for t in ages.dp_tables)
    util = read_utility(folder)
    assert set(util["release_id"]) == set(df["release_id"]) and util["resolved"].between(0, 1).all()
    assert read_codebook(folder)["utility"].startswith("Preserves")
