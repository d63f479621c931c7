"""The counts sidecar beside a consumed release, and ``read_counts`` loading it."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from core.dp.tables import CountTable
from stream.analyst.counts import counts_name, read_counts, write_counts
from stream.analyst.dataset import read_counts as reexported
from stream.analyst.export import write_release
from stream.testing.manifests import contract_manifest

OFFENCE = CountTable(by=("offence",), groups=(("Theft",), ("Robbery",)), counts=(12, 0), ci95=5.0,
                     mechanism="gaussian", rho=0.01, unit="report")
REGION = CountTable(by=("region", "offence"), groups=(("North", "Theft"), ("South", "Theft")), counts=(7, 3),
                    ci95=5.0, mechanism="gaussian", rho=0.01, unit="report")


def _manifest(rid: str, tables: list[CountTable], refused: dict | None = None) -> dict:
    return contract_manifest(rid, ["class_id", "sex"], 1, "x", start="2026-11-20T00:00:00+00:00",
                             dp={"mechanism": "gaussian", "unit": "report", "epsilon": 1.0, "delta": 1e-6,
                                 "rho": 0.02, "tables": [t.to_json() for t in tables], "refused": refused,
                                 "blocks": []})


def test_consume_writes_the_sidecar_and_read_counts_loads_it(tmp_path: Path) -> None:
    assert reexported is read_counts
    m = _manifest("r1", [OFFENCE, REGION])
    data = write_release(tmp_path, m, [{"release_id": "r1", "seq": 0, "values": {"class_id": 1, "sex": "F"}}],
                         "parquet", partition_by="date")
    assert data is not None and (data.parent / counts_name("r1")).is_file()
    assert counts_name("r1").startswith("_")
    write_counts(tmp_path, "r2", _manifest("r2", [], {"block": "station:S1/day:2026-11-20", "message": "no"}))
    frame = read_counts(tmp_path)
    assert set(frame["release_id"]) == {"r1"}  # r2's counts were refused: no rows
    assert set(frame["grouping"]) == {"offence", "region×offence"}
    assert {"count", "ci95", "offence", "region"} <= set(frame.columns)
    only = read_counts(tmp_path, by=("offence",))
    assert list(only.columns) == ["release_id", "offence", "count", "ci95", "sd", "mechanism", "rho"]
    assert only.set_index("offence")["count"].to_dict() == {"Theft": 12, "Robbery": 0}
    assert (only["ci95"] == 5.0).all()
    pd.testing.assert_frame_equal(read_counts(data, by=("offence",)), only)  # from the release's data file


def test_read_counts_of_nothing(tmp_path: Path) -> None:
    assert read_counts(tmp_path).empty
    with pytest.raises(FileNotFoundError):
        read_counts(tmp_path / "missing")


def test_read_counts_consistent_view(tmp_path: Path) -> None:
    """The default is the published (unbiased, possibly negative) counts; the consistent view makes each
    release's tables agree on their shared margin, non-negative and whole."""
    offence = CountTable(by=("offence",), groups=(("Theft",), ("Robbery",)), counts=(14, -3), ci95=5.0,
                         mechanism="gaussian", rho=0.01, unit="report")
    region = CountTable(by=("region", "offence"), groups=(("North", "Theft"), ("North", "Robbery"),
                                                          ("South", "Theft"), ("South", "Robbery")),
                        counts=(7, 2, 3, -1), ci95=5.0, mechanism="gaussian", rho=0.01, unit="report")
    write_counts(tmp_path, "r1", _manifest("r1", [offence, region]))
    unbiased = read_counts(tmp_path)
    assert unbiased["count"].min() == -3 and (unbiased["sd"] == offence.sd).all()
    view = read_counts(tmp_path, view="consistent")
    assert view["count"].min() >= 0 and view["ci95"].isna().all() and view["sd"].isna().all()
    margins = view.groupby(["grouping", "offence"])["count"].sum().unstack("grouping")
    assert (margins["offence"] == margins["region×offence"]).all()
    assert read_counts(tmp_path, by=("offence",), view="consistent")["count"].tolist() == \
        margins.loc[["Theft", "Robbery"], "offence"].tolist()
    with pytest.raises(ValueError, match="view"):
        read_counts(tmp_path, view="clipped")  # type: ignore[arg-type]  # an unknown view on purpose
