"""``anonstream generate crime-reports`` as a user runs it, and the bundled crime / NYPD specs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from core.encoding import encode
from core.engines.registry import get_engine, make_params
from core.verify import verify_release
from stream.cli.main import main
from stream.io.specs import load_schema
from stream.io.tables import read_table
from tests.conftest import shared


def test_generate_jsonl_is_deterministic_and_reads_back(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "reports.jsonl"
    args = ["generate", "crime-reports", "--stations", "2", "--days", "2", "--per-day", "60", "--seed", "1"]
    assert main([*args, "--out", str(out)]) == 0
    first = out.read_bytes()
    assert main([*args, "--out", str(out)]) == 0
    assert out.read_bytes() == first
    lines = first.decode().splitlines()
    assert len(lines) == 2 * 2 * 60
    rec = json.loads(lines[0])
    assert set(rec) == {"report_id", "station_id", "event_time", "name", "dob", "age", "sex", "suburb", "postcode",
                        "reporter", "offence"}
    assert isinstance(rec["age"], int)
    assert "wrote 240 reports" in capsys.readouterr().out
    frame = read_table(out)
    assert encode(frame, load_schema("crime")).n == 240


def test_generate_csv_matches_jsonl(tmp_path: Path) -> None:
    base = ["generate", "crime-reports", "--per-day", "50", "--seed", "9"]
    assert main([*base, "--out", str(tmp_path / "r.csv")]) == 0
    assert main([*base, "--out", str(tmp_path / "r.jsonl")]) == 0
    csv = read_table(tmp_path / "r.csv")
    lines = (tmp_path / "r.jsonl").read_text(encoding="utf-8").splitlines()
    jsonl = pd.DataFrame([json.loads(line) for line in lines]).astype(str)
    pd.testing.assert_frame_equal(csv, jsonl[csv.columns])
    assert csv["postcode"].str.fullmatch(r"\d{4}").all()


def test_generate_bad_output_is_a_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["generate", "crime-reports", "--per-day", "5", "--out", str(tmp_path / "r.txt")]) == 2
    assert "--out must end in .jsonl" in capsys.readouterr().err
    assert main(["generate", "crime-reports", "--stations", "0", "--out", str(tmp_path / "r.csv")]) == 2
    assert "stations must be between" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_nypd_spec_covers_every_offence_and_anonymizes() -> None:
    path = shared("nypd-arrests-queens-2021", "nypd_arrests_queens_2021.csv")
    df = read_table(path)
    schema = load_schema("nypd")
    batch = encode(df, schema)  # fails if an offence lacks a severity
    assert batch.n == len(df)
    assert schema.severity is not None
    assert set(schema.severity) == set(df["OFNS_DESC"])
    assert min(schema.severity.values()) >= 1
    assert schema.severity["RAPE"] > schema.severity["ROBBERY"] > schema.severity["FELONY ASSAULT"]
    assert schema.severity["FELONY ASSAULT"] > schema.severity["ASSAULT 3 & RELATED OFFENSES"]
    felony = df[df["LAW_CAT_CD"] == "F"]["OFNS_DESC"].unique()
    misdemeanour_only = set(df["OFNS_DESC"]) - set(felony)
    assert max(schema.severity[o] for o in misdemeanour_only) < min(schema.severity[o] for o in felony)
    assert set(schema.spec.identifiers) >= {"ARREST_KEY", "Latitude", "Longitude"}
    sample = df.sample(1500, random_state=0)
    for name in ("cg-kanon", "cg-diverse"):
        eng = get_engine(name)
        rel = eng.anonymize(encode(sample, schema), make_params(eng, {"k": 5, "time_limit": 0, "max_iterations": 5}),
                            np.random.default_rng(0))
        report = verify_release(sample, rel, schema)
        assert report.ok, report.failures
        assert "ARREST_KEY" not in rel.rows.columns


@pytest.mark.parametrize("spec", ["crime", "nypd"])
def test_bundled_specs_name_their_stream_columns(spec: str) -> None:
    s = load_schema(spec).spec
    assert s.id_column and s.station_column and s.time_column
    assert s.sensitive is not None and s.sensitive.severity
