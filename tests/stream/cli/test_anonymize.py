"""The batch CLI as a user runs it: real processes, real files, exit codes and one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import ROOT, shared

SPEC = """
name = "tiny"
identifiers = ["name"]
[[qi]]
name = "age"
type = "numeric"
hierarchy = { widths = [10, 20], domain = [0, 100] }
[[qi]]
name = "colour"
type = "categorical"
hierarchy = { tree = { "Warm" = ["red", "orange"], "Cool" = ["blue", "green"] } }
[sensitive]
name = "offence"
"""


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "stream.cli.main", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)


@pytest.fixture
def tiny(tmp_path: Path) -> tuple[Path, Path]:
    spec = tmp_path / "tiny.toml"
    spec.write_text(SPEC)
    data = tmp_path / "tiny.csv"
    rows = [{"name": f"p{i}", "age": 20 + i % 30, "colour": ["red", "orange", "blue", "green"][i % 4],
             "offence": ["Theft", "Fraud", "Assault"][i % 3]} for i in range(40)]
    pd.DataFrame(rows).to_csv(data, index=False)
    return spec, data


def assert_one_line_error(proc: subprocess.CompletedProcess[str], fragment: str) -> None:
    assert proc.returncode == 2, proc.stderr
    lines = [ln for ln in proc.stderr.strip().splitlines() if ln.startswith("error:")]
    assert len(lines) == 1 and fragment in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr


def test_anonymize_writes_rows_and_report(tiny: tuple[Path, Path], tmp_path: Path) -> None:
    spec, data = tiny
    out, report = tmp_path / "out.csv", tmp_path / "report.json"
    proc = cli("anonymize", str(data), "--spec", str(spec), "--engine", "optimal", "-k", "4", "-l", "2",
               "--out", str(out), "--report", str(report))
    assert proc.returncode == 0, proc.stderr
    released = pd.read_csv(out, dtype=str)
    assert "name" not in released.columns
    assert released.groupby(["age", "colour"]).size().min() >= 4
    rep = json.loads(report.read_text())
    assert rep["verification"]["ok"] and rep["diagnostics"]["levels"] and "loss_metric" in rep["metrics"]
    assert rep["runtime_s"] >= 0
    stages = rep["stages"]  # where the time and memory went (docs/performance.md)
    assert set(stages) >= {"startup_s", "read_s", "warm_up_s", "engine_s", "verify_s", "report_s", "write_s"}
    peaks = list(rep["peak_rss_mib"].values())
    assert list(rep["peak_rss_mib"]) == ["startup", "read", "engine", "verify", "report", "write"]
    assert peaks == sorted(peaks) and peaks[0] > 0  # a high-water mark only rises
    # typed columns beside each label, the same as on the stream, explained by the report's codebook
    assert list(released.columns) == ["age", "age_lo", "age_hi", "colour", "colour_level", "colour_l1", "offence",
                                      "suppressed"]
    assert [c["name"] for c in rep["codebook"]["columns"]] == list(released.columns)
    ages = pd.read_csv(data)["age"]
    rows = released[released["age"] != "*"]
    assert rows["age"].str.fullmatch(r"\[\d+, \d+\)|\d+").all()  # real-valued bands are half-open [lo, hi)
    lo, hi = rows["age_lo"].astype(float), rows["age_hi"].astype(float)
    assert (lo >= ages.min() - 20).all() and (hi <= ages.max() + 20).all() and (lo < hi).all()
    # the utility report: full figures in the data owner's report, its paragraph in the codebook
    util = rep["utility"]
    assert util["public"] is False and util["rows"] == 40 and util["published"] == len(released)
    colours = util["qis"]["colour"]["levels"][0]
    assert colours["original"] == pd.read_csv(data)["colour"].value_counts().to_dict()
    assert util["sensitive"]["original"] == pd.read_csv(data)["offence"].value_counts().to_dict()
    assert util["crosstab"]["columns"] == ["age:1", "offence"]  # the default: first QI's first band x sensitive
    assert rep["codebook"]["utility"].startswith("Preserves")


def test_unknown_column_in_spec(tiny: tuple[Path, Path], tmp_path: Path) -> None:
    spec, data = tiny
    spec.write_text(SPEC.replace('name = "colour"', 'name = "favourite"'))
    assert_one_line_error(cli("anonymize", str(data), "--spec", str(spec)),
                          "lacks column(s) named in the spec: 'favourite'")


def test_value_missing_from_hierarchy(tiny: tuple[Path, Path]) -> None:
    spec, data = tiny
    df = pd.read_csv(data)
    df.loc[3, "colour"] = "purple"
    df.to_csv(data, index=False)
    assert_one_line_error(cli("anonymize", str(data), "--spec", str(spec)), "not in its hierarchy: 'purple'")


def test_text_in_numeric_qi(tiny: tuple[Path, Path]) -> None:
    spec, data = tiny
    df = pd.read_csv(data, dtype=str)
    df.loc[5, "age"] = "forty"
    df.to_csv(data, index=False)
    assert_one_line_error(cli("anonymize", str(data), "--spec", str(spec)), "non-numeric values: 'forty'")


def test_k_larger_than_rows(tiny: tuple[Path, Path]) -> None:
    spec, data = tiny
    assert_one_line_error(cli("anonymize", str(data), "--spec", str(spec), "-k", "50"),
                          "k=50 exceeds the number of rows (40)")


def test_empty_input(tiny: tuple[Path, Path]) -> None:
    spec, data = tiny
    data.write_text("name,age,colour,offence\n")
    assert_one_line_error(cli("anonymize", str(data), "--spec", str(spec)), "input is empty")


def test_unknown_engine_lists_valid_ones(tiny: tuple[Path, Path]) -> None:
    spec, data = tiny
    proc = cli("anonymize", str(data), "--spec", str(spec), "--engine", "magic")
    assert_one_line_error(proc, "unknown engine 'magic'; valid engines: optimal")
    assert "mondrian" in proc.stderr


def test_bad_engine_parameter_is_named(tiny: tuple[Path, Path]) -> None:
    spec, data = tiny
    assert_one_line_error(cli("anonymize", str(data), "--spec", str(spec), "--max-suppression", "1.5"),
                          "parameter 'max_suppression'")


def test_engines_lists_parameters_and_defaults() -> None:
    proc = cli("engines")
    assert proc.returncode == 0
    assert "optimal:" in proc.stdout and "--param max_suppression=0.0" in proc.stdout


def test_help_teaches() -> None:
    proc = cli("anonymize", "--help")
    assert proc.returncode == 0 and "Examples:" in proc.stdout and "--max-suppression" in proc.stdout


def test_adult_uci_spec_reads_headerless_file(tmp_path: Path) -> None:
    data = shared("adult-uci", "adult.data")
    head = tmp_path / "head.data"
    with data.open() as f:
        head.write_text("".join(f.readlines()[:400]))
    proc = cli("anonymize", str(head), "--spec", "adult-uci", "--engine", "mondrian", "-k", "5",
               "--out", str(tmp_path / "o.csv"))
    assert proc.returncode == 0, proc.stderr
    out = pd.read_csv(tmp_path / "o.csv", dtype=str)
    assert "fnlwgt" not in out.columns and out["age"].str.startswith("[").any()


def test_anonymize_out_neutralizes_formula_cells(tiny: tuple[Path, Path], tmp_path: Path) -> None:
    spec, _ = tiny
    data = tmp_path / "formulas.csv"
    rows = [{"name": f"p{i}", "age": 20 + i % 30, "colour": ["red", "orange", "blue", "green"][i % 4],
             "offence": ["=1+2", "@SUM(A1)", "-cmd", "+x", "Theft"][i % 5]} for i in range(40)]
    pd.DataFrame(rows).to_csv(data, index=False)
    out, raw = tmp_path / "out.csv", tmp_path / "raw.csv"
    assert cli("anonymize", str(data), "--spec", str(spec), "--engine", "optimal", "-k", "4", "--out",
               str(out)).returncode == 0
    offences = set(pd.read_csv(out, dtype=str)["offence"])
    assert offences == {"'=1+2", "'@SUM(A1)", "'-cmd", "'+x", "Theft"}
    assert cli("anonymize", str(data), "--spec", str(spec), "--engine", "optimal", "-k", "4", "--out",
               str(raw), "--raw-columns", "offence").returncode == 0
    assert set(pd.read_csv(raw, dtype=str)["offence"]) == {"=1+2", "@SUM(A1)", "-cmd", "+x", "Theft"}
