"""``anonstream front``: table, PNG and JSON of a PBG-EA front, and clear policy errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stream.cli.main import main
from tests.conftest import shared

QIS = "age,workclass,education,marital-status,race,sex,native-country"


def test_front_prints_table_and_writes_png_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = shared("adult", "adult.csv")
    png, out = tmp_path / "front.png", tmp_path / "front.json"
    code = main(["front", str(data), "--spec", "adult", "--sensitive", "occupation", "--qis", QIS,
                 "--class-attribute", "salary-class", "--objectives", "k,l,CM", "--iterations", "3",
                 "--population", "6", "--select", "min CM where k >= 2", "--png", str(png), "--json", str(out)])
    text = capsys.readouterr().out
    assert code == 0
    assert "levels" in text and "members (Theorem 2 bound" in text
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    doc = json.loads(out.read_text())
    assert doc["qis"] == QIS.split(",")
    assert [m["selected"] for m in doc["front"]].count(True) == 1
    assert all(set(m) >= {"levels", "k", "l", "CM", "GLM"} for m in doc["front"])


def test_front_with_unsatisfiable_policy_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    data = shared("adult", "adult.csv")
    code = main(["front", str(data), "--spec", "adult", "--sensitive", "occupation", "--iterations", "1",
                 "--population", "4", "--select", "min GLM where k >= 99999999"])
    err = capsys.readouterr().err
    assert code == 2
    assert "no front member satisfies" in err and "closest:" in err


def test_front_rejects_unknown_objective(capsys: pytest.CaptureFixture[str]) -> None:
    data = shared("adult", "adult.csv")
    assert main(["front", str(data), "--spec", "adult", "--objectives", "k,precision"]) == 2
    assert "unknown quality index 'precision'" in capsys.readouterr().err
