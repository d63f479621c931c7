"""A file of another spec is one ``error:`` line (exit 2) before any row is read or sent (issue 41, item 3).

The error names the columns the file lacks and the spec its header holds best: a bundled one, or a
spec file that fitted a file here before. The oracle is each spec's own columns (``needed_columns``).
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from core.errors import InputDataError, preview
from stream.cli.main import main
from stream.io.header import check_file_header, needed_columns
from stream.io.specs import load_spec_data


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def _file_of(columns: list[str], path: Path, rows: int = 400) -> Path:
    path.write_text(",".join(columns) + "\n" + "".join(",".join(["x"] * len(columns)) + "\n" for _ in range(rows)),
                    encoding="utf-8")
    return path


@pytest.mark.parametrize("command", ["push", "anonymize"])
def test_a_file_of_the_nypd_spec_given_the_crime_spec_is_one_line_naming_nypd(command: str, tmp_path: Path) -> None:
    nypd = needed_columns(load_spec_data("nypd"), stream=True)
    src = _file_of(nypd, tmp_path / "arrests.csv")
    argv = ["push", str(src), "--spec", "crime", "--broker", "kafka://127.0.0.1:1", "--no-wait"] \
        if command == "push" else ["anonymize", str(src), "--spec", "crime", "--engine", "mondrian"]
    code, out, err = _run(*argv)
    crime = needed_columns(load_spec_data("crime"), stream=command == "push")
    missing = [c for c in crime if c not in nypd]
    assert code == 2 and out == "" and err.count("\n") == 1 and err.startswith("error: "), err
    assert f"it lacks column(s) named in the spec: {preview(missing, 6)} (" in err
    assert "none of the spec's columns is there" in err
    near = needed_columns(load_spec_data("nypd"), stream=command == "push")
    assert f"looks like spec 'nypd' ({len(near)} of its {len(near)} columns): --spec nypd" in err


def test_a_spec_file_given_before_is_named(tmp_path: Path) -> None:
    own = tmp_path / "station7.toml"
    own.write_text('name = "station7"\nid_column = "case"\ntime_column = "day"\nstation_column = "unit"\n'
                   '[[qi]]\nname = "age_band"\ntype = "categorical"\n'
                   'hierarchy = { rows = [["young", "*"], ["old", "*"]] }\n', encoding="utf-8")
    cols = needed_columns(load_spec_data(own), stream=True)
    src = _file_of(cols, tmp_path / "s7.csv")
    check_file_header(src, own, load_spec_data(own), stream=True)  # fits: remembered
    code, _, err = _run("anonymize", str(src), "--spec", "adult", "--engine", "mondrian")
    assert code == 2 and err.count("\n") == 1
    assert f"looks like spec '{own.resolve()}' (1 of its 1 columns)" in err


def test_a_file_with_every_needed_column_passes_and_one_missing_is_named(tmp_path: Path) -> None:
    spec = load_spec_data("nypd")
    cols = needed_columns(spec, stream=True)
    check_file_header(_file_of(["extra", *cols], tmp_path / "ok.csv"), "nypd", spec, stream=True)
    with pytest.raises(InputDataError, match=f"spec: '{cols[0]}' \\({len(cols) - 1} of its {len(cols)} columns are"):
        check_file_header(_file_of(cols[1:], tmp_path / "short.csv"), "nypd", spec, stream=True)


def test_push_without_the_station_column_needs_station(tmp_path: Path) -> None:
    spec = load_spec_data("crime")
    assert spec.station_column not in spec.used_columns()
    cols = [c for c in needed_columns(spec, stream=True) if c != spec.station_column]
    src = _file_of(cols, tmp_path / "one-station.csv")
    check_file_header(src, "crime", spec, stream=True, station_given=True)
    with pytest.raises(InputDataError, match=f"spec: '{spec.station_column}' "):
        check_file_header(src, "crime", spec, stream=True)


def test_a_partial_match_is_named_but_not_offered_as_the_fix(tmp_path: Path) -> None:
    """A batch table (Adult's columns) pushed: its closest spec also needs a report id and an event time, so
    the line names it as closest, with what it lacks, without telling the user to push with it."""
    adult = load_spec_data("adult")
    batch_cols = needed_columns(adult, stream=False)
    stream_cols = needed_columns(adult, stream=True)
    assert set(batch_cols) < set(stream_cols)
    src = _file_of(batch_cols, tmp_path / "adult.csv")
    with pytest.raises(InputDataError) as err:
        check_file_header(src, "crime", load_spec_data("crime"), stream=True)
    line = str(err.value)
    assert f"no spec matches its header in full (closest: 'adult', {len(batch_cols)} of its {len(stream_cols)}" \
           in line, line
    lacking = [c for c in stream_cols if c not in batch_cols]
    assert "--spec" not in line and line.endswith(f"it lacks {preview(lacking, 6)})"), line
