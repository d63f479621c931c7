"""A headerless export and a table with no column named like a quasi-identifier (issue 41).

- A CSV whose first row is data (UCI Adult's layout) is found: the spec names its columns in
  ``[input] columns`` and says so first; ``--columns`` names them and the roles follow the names. A
  file with a real header (even one whose name is also a value, or year columns) is left alone.
- A table of numbers and codes with no person-like names (Cargo 2000's layout) gets QIs chosen by
  type, fewest values first, and runs as drafted (``anonymize --spec DRAFT`` with the drafted engine).
The oracle is the generated frame: its columns, its first row, its distinct counts.
"""

from __future__ import annotations

import contextlib
import io
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from stream.cli.main import main
from stream.specdraft.headerless import first_row_is_data


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def _people(n: int = 300, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"age": rng.integers(18, 80, n).astype(str), "workclass": rng.choice(["Private", "State-gov",
                                                                                              "Self-emp"], n),
                         "sex": rng.choice(["Male", "Female"], n), "hours": rng.integers(10, 60, n).astype(str),
                         "salary": rng.choice(["<=50K", ">50K"], n)})


def _logistics(n: int = 400, seed: int = 4) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"legid": np.arange(1000, 1000 + n).astype(str), "hops": rng.integers(1, 4, n).astype(str),
                         "dep_place": rng.choice([100, 200, 300, 400, 500], n).astype(str),
                         "dep_minutes": rng.integers(0, 3000, n).astype(str),
                         "carrier": rng.choice(["A", "B", "C"], n)})


def test_a_file_whose_first_row_is_data_is_drafted_with_named_columns(tmp_path: Path) -> None:
    frame = _people()
    src = tmp_path / "people.data"
    frame.to_csv(src, index=False, header=False, sep=",")
    assert first_row_is_data(src) is not None
    spec = tmp_path / "people.toml"
    code, out, err = _run("spec", "draft", str(src), "--out", str(spec))
    assert code == 0, out + err
    text = spec.read_text(encoding="utf-8")
    data = tomllib.loads(text)
    names = [f"column_{i}" for i in range(1, frame.shape[1] + 1)]
    assert data["input"]["columns"] == names
    assert text.split("# Decide first:")[1].lstrip("#\n -").startswith("The file has no header row")
    code, out, err = _run("spec", "check", str(src), "--spec", str(spec))
    assert code == 0 and f"{len(frame)} rows;" in out, out + err  # the first row is a row, not a header

    named = tmp_path / "named.toml"
    code, out, err = _run("spec", "draft", str(src), "--columns", ",".join(frame.columns), "--out", str(named))
    assert code == 0, out + err
    data = tomllib.loads(named.read_text(encoding="utf-8"))
    assert data["input"]["columns"] == list(frame.columns)
    assert {"age", "sex", "workclass"} <= {q["name"] for q in data["qi"]}  # roles by name again
    assert _run("spec", "check", str(src), "--spec", str(named))[0] == 0


@pytest.mark.parametrize("columns", ["age,sex", "age,,sex,hours,salary", "age,age,sex,hours,salary"])
def test_columns_naming_too_few_or_twice_is_one_line(tmp_path: Path, columns: str) -> None:
    src = tmp_path / "people.data"
    _people().to_csv(src, index=False, header=False)
    code, _out, err = _run("spec", "draft", str(src), "--columns", columns)
    assert code == 2 and err.startswith("error: --columns") and err.count("\n") == 1, err


def test_real_headers_are_kept(tmp_path: Path) -> None:
    frame = _people()
    plain = tmp_path / "plain.csv"
    frame.to_csv(plain, index=False)
    assert first_row_is_data(plain) is None
    one_echo = tmp_path / "echo.csv"  # one name that is also one of its column's values
    frame.rename(columns={"sex": "Male"}).to_csv(one_echo, index=False)
    assert first_row_is_data(one_echo) is None
    years = tmp_path / "years.csv"
    pd.DataFrame({"region": ["North", "South"] * 5, "2019": range(10), "2020": range(10, 20)}).to_csv(years,
                                                                                                 index=False)
    assert first_row_is_data(years) is None


def test_a_table_with_no_quasi_identifier_names_is_drafted_by_type_and_runs(tmp_path: Path) -> None:
    frame = _logistics()
    src, spec, out_csv = tmp_path / "legs.csv", tmp_path / "legs.toml", tmp_path / "released.csv"
    frame.to_csv(src, index=False)
    code, out, err = _run("spec", "draft", str(src), "--out", str(spec))
    assert code == 0, out + err
    text = spec.read_text(encoding="utf-8")
    data = tomllib.loads(text)
    qis = [q["name"] for q in data["qi"]]
    distinct = frame.nunique()
    assert "legid" in data["identifiers"] and "legid" not in qis  # unique: an identifier, never a QI
    others = [c for c in frame.columns if c not in qis and c not in data["identifiers"]]
    assert qis and all(distinct[q] <= distinct[c] for q in qis for c in others)  # fewest values first
    assert "chosen by type" in text.split("# Decide first:")[1].split("\n\n")[0]
    engine = next(line for line in out.splitlines() if "as drafted:" in line).split("anonymize ", 1)[1].split()
    code, out, err = _run("anonymize", *engine, "--out", str(out_csv))
    assert code == 0, out + err
    released = pd.read_csv(out_csv, dtype=str)
    assert len(released) >= 0.95 * len(frame) and "legid" not in released.columns


def test_a_title_line_above_the_table_is_one_line(tmp_path: Path) -> None:
    src = tmp_path / "people.test"
    frame = _people()
    src.write_text("|1x3 Cross validator\n" + frame.to_csv(index=False, header=False), encoding="utf-8")
    for extra in ((), ("--columns", ",".join(frame.columns))):
        code, _out, err = _run("spec", "draft", str(src), *extra)
        assert code == 2 and err.count("\n") == 1, err
        assert f"line 1 has 1 cell(s) and the rows below have {frame.shape[1]}" in err


def test_push_of_a_headerless_draft_without_stream_keys_is_refused_whole_in_one_line(tmp_path: Path) -> None:
    src, spec = tmp_path / "people.data", tmp_path / "people.toml"
    _people().to_csv(src, index=False, header=False)
    assert _run("spec", "draft", str(src), "--out", str(spec))[0] == 0
    code, out, err = _run("push", str(src), "--spec", str(spec), "--station", "S1", "--broker", "kafka://127.0.0.1:1")
    assert code == 2 and err.count("\n") == 1 and "sent" not in out, out + err
    assert "lacks column(s) named in the spec: 'report_id', 'event_time'" in err
