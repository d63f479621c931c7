"""A station's first export, drafted right the first time (issue 41, items 1 and 3).

Each failure seen on held-out real exports, reproduced on a small generated file:
- outcome columns (charge degree, recidivism, arrest type with juvenile arrests, disposition) are
  withheld or sensitive, never a QI under another label nor a silent pass-through; every column has
  its fate and reason; a unique key gets ``id_scope = "global"``;
- a table without a severity-bearing column drafts an engine that runs it, and ``spec check`` runs it;
- a station column of area names (with spaces) gets a ``station_map``, and push's own validator then
  accepts every row the check passed.
The oracle is the generated frame: which columns are outcomes, QIs, the key, the station names.
"""

from __future__ import annotations

import contextlib
import io
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from core.canonical import station_id
from stream.cli.main import main
from stream.intake.validate import Clean, ReportValidator
from stream.io.rows import rows_for_spec
from stream.io.specs import load_schema
from stream.specdraft.fates import parse

OUTCOMES = ["c_charge_degree", "two_year_recid", "arrest_type", "disposition", "juv_flag"]
AREAS = ["Queens North", "Queens South", "Bronx / 4th", "Staten Island"]


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def _dates(rng: np.random.Generator, n: int) -> list[str]:
    return [f"2025-{m:02d}-{d:02d}" for m, d in zip(rng.integers(1, 13, n), rng.integers(1, 29, n), strict=True)]


def _arrests(n: int = 240, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "case_id": [f"A{i:05d}" for i in rng.permutation(n)],
        "arrest_date": _dates(rng, n),
        "precinct": rng.choice(["101", "102", "103", "104"], n),
        "age": [str(a) for a in rng.integers(16, 70, n)],
        "sex": rng.choice(["F", "M"], n),
        "race": rng.choice(["WHITE", "BLACK", "HISPANIC", "ASIAN"], n),
        "offense": rng.choice(["Assault", "Larceny", "Robbery", "Drug possession", "Trespass"], n),
        "c_charge_degree": rng.choice(["F", "M"], n),
        "two_year_recid": rng.choice(["0", "1"], n),
        "arrest_type": rng.choice(["Adult Arrest", "Juvenile Arrest"], n),
        "disposition": rng.choice(["Dismissed", "Convicted", "Pending"], n),
        "juv_flag": rng.choice(["Y", "N"], n),
    })


def _draft(frame: pd.DataFrame, tmp_path: Path, *extra: str) -> tuple[Path, Path, str, dict]:
    src, spec = tmp_path / "export.csv", tmp_path / "export.toml"
    frame.to_csv(src, index=False)
    code, _out, err = _run("spec", "draft", str(src), "--out", str(spec), *extra)
    assert code == 0, err
    text = spec.read_text(encoding="utf-8")
    return src, spec, text, tomllib.loads(text)


def test_every_column_has_a_fate_and_outcomes_are_never_qis_nor_pass_through(tmp_path: Path) -> None:
    frame = _arrests()
    src, spec, text, data = _draft(frame, tmp_path)
    fates = parse(text)
    assert list(fates) == list(frame.columns)  # every column, in the file's order, none silently
    assert all(why.strip() for _, why in fates.values())
    qis = {q["name"] for q in data["qi"]}
    released_plain = set(data["passthrough"])
    for col in OUTCOMES:
        assert fates[col][0] in {"withheld", "sensitive"}, (col, fates[col])
        assert col not in qis and col not in released_plain
    assert data["sensitive"]["name"] == "offense"
    assert {"arrest_date", "age", "sex", "race", "precinct"} <= qis  # race is a QI, not dropped
    assert data["id_column"] == "case_id" and data["id_scope"] == "global"
    assert "unique across the whole sample" in fates["case_id"][1]
    code, out, err = _run("spec", "check", str(src), "--spec", str(spec))
    assert code == 0, out + err
    table = [line.split()[:2] for line in out.splitlines()[1: len(frame.columns) + 1]]
    assert table == [[c, fates[c][0]] for c in frame.columns]
    assert "engine: cg-diverse on 240 sampled rows: releases" in out
    rows = _as_drafted(src, spec, text, tmp_path)  # cg-diverse at l 2 (its batch default, l 3, is not drafted)
    classes = rows.groupby(sorted(qis))["offense"]
    assert int(classes.size().min()) >= 5 and int(classes.nunique().min()) >= 2


def test_an_outcome_is_a_pass_through_only_when_chosen(tmp_path: Path) -> None:
    _, _, text, data = _draft(_arrests(), tmp_path, "--passthrough", "disposition")
    assert data["passthrough"] == ["disposition"]
    assert parse(text)["disposition"] == ("passthrough", "chosen with --passthrough: released unchanged")


def test_outcomes_are_found_by_their_values_too(tmp_path: Path) -> None:
    frame = _arrests().rename(columns={"arrest_type": "col_a", "disposition": "col_b"})
    _, _, text, _data = _draft(frame, tmp_path)
    fates = parse(text)
    for col in ("col_a", "col_b"):  # "Adult Arrest" / "Juvenile Arrest", "Dismissed" / "Convicted" / "Pending"
        assert fates[col][0] == "withheld" and "(values: " in fates[col][1], fates[col]


def test_a_table_without_severity_drafts_an_engine_that_runs_it(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    n = 300
    frame = pd.DataFrame({"report_id": [str(i) for i in range(n)], "event_date": _dates(rng, n),
                          "age": [str(a) for a in rng.integers(18, 90, n)], "sex": rng.choice(["F", "M"], n),
                          "zip": rng.choice(["10001", "10002", "10003", "11001"], n)})
    src, spec, text, data = _draft(frame, tmp_path)
    assert "sensitive" not in data
    assert "# engine: mondrian -k 5 --max-suppression 0.05 -- no sensitive attribute" in text
    code, out, err = _run("spec", "check", str(src), "--spec", str(spec))
    assert code == 0, out + err
    assert "engine: mondrian on 300 sampled rows: releases" in out
    code, out, _ = _run("spec", "check", str(src), "--spec", str(spec), "--engine", "cg-kanon")
    assert code == 1 and "needs a sensitive attribute" in out
    rows = _as_drafted(src, spec, text, tmp_path)
    qis = [q["name"] for q in data["qi"]]
    assert int(rows.groupby(qis).size().min()) >= 5  # k of the default, counted on the release


def _as_drafted(src: Path, spec: Path, text: str, tmp_path: Path) -> pd.DataFrame:
    """The release of the spec's own 'as drafted' anonymize command."""
    line = next(t for t in text.splitlines() if t.startswith("#   as drafted: anonstream anonymize FILE"))
    options = line.split("--spec THIS ", 1)[1].split()
    released = tmp_path / "released.csv"
    code, _, err = _run("anonymize", str(src), "--spec", str(spec), *options, "--out", str(released))
    assert code == 0, err
    return pd.read_csv(released, dtype=str, keep_default_na=False)


def test_a_station_column_of_area_names_is_mapped_and_push_accepts_every_row(tmp_path: Path) -> None:
    rng = np.random.default_rng(9)
    n = 200
    frame = pd.DataFrame({"report_id": [f"R{i}" for i in range(n)], "event_date": _dates(rng, n),
                          "station": rng.choice(AREAS, n), "age": [str(a) for a in rng.integers(18, 90, n)],
                          "sex": rng.choice(["F", "M"], n),
                          "offence": rng.choice(["Theft", "Assault", "Robbery", "Burglary"], n)})
    src, spec, _, data = _draft(frame, tmp_path)
    assert data["station_column"] == "station" and set(data["station_map"]) == set(AREAS)
    code, out, err = _run("spec", "check", str(src), "--spec", str(spec))
    assert code == 0, out + err
    schema = load_schema(spec)
    validator = ReportValidator(schema)
    for line, row in rows_for_spec(src, schema.spec.input):
        got = validator.check(dict(row))
        assert isinstance(got, Clean), (line, got)
        assert got.station_id == station_id(data["station_map"][row["station"]])
    # without the map, the check says what push would say: every row refused as invalid-station
    bare = tmp_path / "bare.toml"
    bare.write_text(spec.read_text(encoding="utf-8").split("[station_map]")[0] + "\n[input]"
                    + spec.read_text(encoding="utf-8").split("[input]", 1)[1], encoding="utf-8")
    code, out, _ = _run("spec", "check", str(src), "--spec", str(bare))
    assert code == 1 and f"push would reject {n} x invalid-station" in out


@pytest.mark.parametrize("bad", ["not a station!", " "])
def test_a_station_map_naming_no_station_id_is_refused(tmp_path: Path, bad: str) -> None:
    from core.encoding import Schema
    from core.errors import SpecError
    from core.schema import parse_spec

    spec = parse_spec({"qi": [{"name": "age", "type": "numeric", "hierarchy": {"widths": [10]}}],
                       "station_map": {"Queens North": bad}})
    with pytest.raises(SpecError, match="station_map"):
        ReportValidator(Schema.from_spec(spec))
