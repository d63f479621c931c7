"""Batch ``anonymize`` with k only lists the classes that give away their offence, and warns once (issue 39)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from core.generators import generate_crime_reports
from stream.cli.main import main
from stream.io.specs import load_schema


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("single") / "reports.csv"
    frame = generate_crime_reports(np.random.default_rng(3), per_day=400)
    # nine reports in ten are thefts, so k-only classes often hold one offence
    frame["offence"] = np.where(np.arange(len(frame)) % 10 == 0, frame["offence"], "Theft")
    frame.to_csv(path, index=False)
    return path


def _run(reports: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[dict, str, Path]:
    out, report = tmp_path / "out.csv", tmp_path / "report.json"
    code = main(["anonymize", str(reports), "--spec", "crime", "--engine", "mondrian", "-k", "5", "--out",
                 str(out), "--report", str(report), *extra])
    assert code == 0
    return json.loads(report.read_text()), capsys.readouterr().err, out


def test_k_only_lists_single_offence_classes_and_warns_once(reports: Path, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    summary, err, out = _run(reports, tmp_path, capsys)
    single = summary["single_offence_classes"]
    qis = load_schema("crime").qi_names
    # the oracle: the written file's QI labels grouped with pandas, distinct offences counted
    table = pd.read_csv(out, dtype=str, keep_default_na=False)
    stats = table.groupby(qis)["offence"].agg(["nunique", "size", "first"])
    expected = stats[stats["nunique"] == 1]
    assert single["sensitive"] == "offence" and single["classes"] == len(expected) > 0
    assert single["rows"] == int(expected["size"].sum())
    listed = {(tuple(c["labels"][q] for q in qis), c["rows"], c["value"]) for c in single["list"]}
    assert listed == {(key, int(r["size"]), r["first"]) for key, r in expected.iterrows()}
    warnings = [line for line in err.splitlines() if "single value of 'offence'" in line]
    assert len(warnings) == 1 and f"{single['classes']} class(es) ({single['rows']} rows)" in warnings[0]
    assert "-l 2" in warnings[0]


def test_with_l_asked_nothing_is_listed_or_warned(reports: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    summary, err, _ = _run(reports, tmp_path, capsys, "-l", "2")
    assert "single_offence_classes" not in summary and "single value" not in err
    assert summary["verification"]["l_distinct"] >= 2
