"""``anonstream risk`` and the risk parts of ``anonymize`` as a user runs them."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from tests.stream.cli.test_anonymize import assert_one_line_error, cli, tiny  # noqa: F401  (fixture)


def test_risk_prints_the_profile(tiny: tuple[Path, Path]) -> None:  # noqa: F811
    spec, data = tiny
    proc = cli("risk", str(data), "--spec", str(spec), "--sampling-fraction", "0.1")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    for fragment in ("prosecutor", "journalist", "marketer", "sample uniques", "population uniques",
                     "Dankar's rule", "records by prosecutor risk", "homogeneous class", "separation"):
        assert fragment in out, out
    data_json = json.loads(cli("risk", str(data), "--spec", str(spec), "--population", "400", "--json").stdout)
    frame = pd.read_csv(data)
    sizes = frame.groupby(["age", "colour"]).size()
    assert data_json["prosecutor"]["highest"] == 1 / sizes.min()
    assert data_json["prosecutor"]["average"] == len(sizes) / len(frame)
    assert data_json["sampling_fraction"] == 40 / 400 and data_json["population"] == 400


def test_risk_rejects_bad_population_in_one_line(tiny: tuple[Path, Path]) -> None:  # noqa: F811
    spec, data = tiny
    assert_one_line_error(cli("risk", str(data), "--spec", str(spec), "--population", "10"), "smaller than the sample")
    proc = cli("risk", str(data), "--spec", str(spec), "--sampling-fraction", "0")
    assert proc.returncode == 2 and "must be in (0, 1]" in proc.stderr and "Traceback" not in proc.stderr


def test_anonymize_reports_risk_and_refuses_unsupported_bounds(tiny: tuple[Path, Path], tmp_path: Path) -> None:  # noqa: F811
    spec, data = tiny
    report = tmp_path / "report.json"
    proc = cli("anonymize", str(data), "--spec", str(spec), "--engine", "optimal", "-k", "4",
               "--param", "max_risk=0.1", "--report", str(report))
    assert proc.returncode == 0, proc.stderr
    rep = json.loads(report.read_text())
    assert rep["verification"]["max_risk"] <= 0.1 and rep["privacy"]["risk"]["prosecutor"]["highest"] <= 0.1
    assert "risk: prosecutor highest" in proc.stdout
    assert_one_line_error(cli("anonymize", str(data), "--spec", str(spec), "--engine", "cg-kanon",
                              "--param", "max_risk=0.1"), "cannot guarantee max_risk")
