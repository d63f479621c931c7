"""Every command that reads a file, given what stations really hand it (stream/cli/_paths.py):

a Windows-1252 export is read as written; a folder, a binary file, a missing file, or an output
whose folder does not exist is one ``error:`` line and exit 2 (docs/operations.md), before any work.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from stream.cli.main import main

SPEC = """
identifiers = ["report_id", "name"]
time_column = "arrested"

[[qi]]
name = "arrested"
type = "date"
hierarchy = { levels = ["day", "month", "year"], format = "us" }

[[qi]]
name = "sex"
type = "categorical"
hierarchy = { rows = [["F", "*"], ["M", "*"]] }

[sensitive]
name = "offence"
"""
NAMES = ["José Núñez", "Zoë Müller", "Renée O’Connor", "Bob Smith"]
WHEN = ["01/08/2024 00:00", "02/13/2024 12:00:00 AM", "01/08/2024", "02/13/2024 12:30:00 PM"]


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    lines = ["report_id,station_id,name,arrested,sex,offence"]
    lines += [f"r{i},S1,{NAMES[i % 4]},{WHEN[i % 4]},{'FM'[i % 2]},{['Agresión', 'Theft'][i % 2]}" for i in range(40)]
    export = tmp_path / "export.csv"
    export.write_bytes(("\r\n".join(lines) + "\r\n").encode("cp1252"))
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC)
    binary = tmp_path / "photo.csv"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    folder = tmp_path / "folder"
    folder.mkdir()
    return {"export": export, "spec": spec, "binary": binary, "folder": folder, "missing": tmp_path / "nope.csv",
            "out": tmp_path / "out.csv", "no-folder": tmp_path / "absent" / "out.csv"}


BROKER = ["--broker", "kafka://127.0.0.1:1"]  # unreachable: push stops after reading, before sending
COMMANDS = {  # command -> (argv for an input, an output path and the spec; its output option)
    "anonymize": (lambda i, o, s: ["anonymize", i, "--spec", s, "-k", "2", "--out", o], "--out"),
    "anonymize --report": (lambda i, o, s: ["anonymize", i, "--spec", s, "-k", "2", "--report", o], "--report"),
    "spec draft": (lambda i, o, s: ["spec", "draft", i, "--out", o], "--out"),
    "spec check": (lambda i, o, s: ["spec", "check", i, "--spec", s], None),
    "risk": (lambda i, o, s: ["risk", i, "--spec", s], None),
    "front": (lambda i, o, s: ["front", i, "--spec", s, "--iterations", "2", "--population", "4", "--png", o],
              "--png"),
    "front --json": (lambda i, o, s: ["front", i, "--spec", s, "--iterations", "2", "--json", o], "--json"),
    "push": (lambda i, o, s: ["push", i, "--spec", s, "--station", "S1", *BROKER, "--rejects", o], "--rejects"),
}


def _one_error(capsys: pytest.CaptureFixture[str], *says: str) -> str:
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), captured.err
    assert all(s in lines[0] for s in says), lines[0]
    assert "Traceback" not in captured.err and "%" not in captured.out  # no work started: no progress
    return lines[0]


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize(("given", "says"), [("folder", "is a folder, not a file"),
                                             ("binary", "is not a text file (binary content)"),
                                             ("missing", "input file not found")])
def test_an_input_that_is_not_a_table_is_one_line_exit_2(files: dict[str, Path], capsys: pytest.CaptureFixture[str],
                                                         command: str, given: str, says: str) -> None:
    argv, _option = COMMANDS[command]
    assert main(argv(str(files[given]), str(files["out"]), str(files["spec"]))) == 2
    _one_error(capsys, says, str(files[given]))
    assert not files["out"].exists()


@pytest.mark.parametrize("command", [c for c, (_, option) in COMMANDS.items() if option])
def test_an_output_whose_folder_does_not_exist_is_one_line_exit_2_before_any_work(files: dict[str, Path],
                                                                                  capsys: pytest.CaptureFixture[str],
                                                                                  command: str) -> None:
    argv, option = COMMANDS[command]
    assert main(argv(str(files["export"]), str(files["no-folder"]), str(files["spec"]))) == 2
    _one_error(capsys, f"{option} {files['no-folder']}: folder {files['no-folder'].parent} does not exist")
    assert main(argv(str(files["export"]), str(files["folder"]), str(files["spec"]))) == 2
    _one_error(capsys, f"{option} {files['folder']} is a folder; give a file name")


def test_generate_checks_its_output_folder_first(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["generate", "crime-reports", "--per-day", "5", "--out", str(files["no-folder"])]) == 2
    _one_error(capsys, "--out", "does not exist")


@pytest.mark.parametrize("command", ["anonymize", "spec check", "risk", "spec draft"])
def test_a_windows_1252_export_is_read_as_written(files: dict[str, Path], capsys: pytest.CaptureFixture[str],
                                                  command: str) -> None:
    argv, _option = COMMANDS[command]
    assert main(argv(str(files["export"]), str(files["out"]), str(files["spec"]))) == 0
    err = capsys.readouterr().err
    assert "export.csv: text read as Windows-1252 (cp1252), detected" in err and "Traceback" not in err
    if command == "anonymize":
        assert "Agresión" in files["out"].read_text(encoding="utf-8")  # written back as UTF-8


def test_push_reads_a_windows_1252_export_before_it_needs_the_broker(files: dict[str, Path],
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    argv, _option = COMMANDS["push"]
    assert main(argv(str(files["export"]), str(files["out"]), str(files["spec"]))) == 3  # read whole, no broker
    err = capsys.readouterr().err
    assert "text read as Windows-1252" in err and "error: broker kafka://127.0.0.1:1 is unreachable" in err


def test_a_declared_encoding_the_file_breaks_is_one_line(files: dict[str, Path],
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    files["spec"].write_text(SPEC + '\n[input]\nencoding = "utf-8"\n')
    for command in ("anonymize", "spec check", "risk", "push"):
        argv, _option = COMMANDS[command]
        assert main(argv(str(files["export"]), str(files["out"]), str(files["spec"]))) == 2
        _one_error(capsys, "export.csv, line 2: byte 0xe9 is not UTF-8 text")


def test_push_reads_parquet_without_sniffing_its_bytes(files: dict[str, Path],
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    import pandas as pd

    parquet = files["export"].with_suffix(".parquet")
    pd.read_csv(files["export"], dtype=str, encoding="cp1252").to_parquet(parquet)
    argv, _option = COMMANDS["push"]
    assert main(argv(str(parquet), str(files["out"]), str(files["spec"]))) == 3  # read whole, no broker
    assert "error: broker kafka://127.0.0.1:1 is unreachable" in capsys.readouterr().err


OUTPUTS = {  # every command that writes a file or a folder: argv for an output path (input, spec); its option
    **{name: (argv, option) for name, (argv, option) in COMMANDS.items() if option},
    "aggregate": (lambda i, o, s: ["aggregate", i, "--spec", s, "--by", "sex", "--epsilon", "1", "--out", o], "--out"),
    "generate": (lambda i, o, s: ["generate", "crime-reports", "--per-day", "5", "--out", o], "--out"),
    "releases export": (lambda i, o, s: ["releases", "export", "r1", "--out", o], "--out"),
    "releases report": (lambda i, o, s: ["releases", "report", "r1", "--out", o], "--out"),
    "consume": (lambda i, o, s: ["consume", *BROKER, "--out", o], "--out"),
    "demo": (lambda i, o, s: ["demo", "--out", o], "--out"),
}
FOLDERS = {"consume", "demo"}  # their --out is a folder


def _kinds(tmp_path: Path) -> dict[str, Path]:
    """Outputs that are not regular files: the device /dev/null, a FIFO, a link to nothing, a link to a folder."""
    import os

    (tmp_path / "dangling.csv").symlink_to(tmp_path / "nothing.csv")
    (tmp_path / "to-folder.csv").symlink_to(tmp_path / "folder")
    os.mkfifo(tmp_path / "fifo.csv")
    return {"device": Path("/dev/null"), "fifo": tmp_path / "fifo.csv", "dangling": tmp_path / "dangling.csv",
            "link-to-folder": tmp_path / "to-folder.csv"}


@pytest.mark.parametrize("command", OUTPUTS)
def test_an_output_that_is_not_a_regular_file_is_refused_and_left_alone(files: dict[str, Path],
                                                                        capsys: pytest.CaptureFixture[str],
                                                                        tmp_path: Path, command: str) -> None:
    """``--out /dev/null`` never replaces the device (nor a FIFO, nor what a link points to): one line, exit 2."""
    import os

    argv, option = OUTPUTS[command]
    for kind, path in _kinds(tmp_path).items():
        if command in FOLDERS and kind == "link-to-folder":
            continue  # a link to a folder is a folder
        before = os.lstat(path)
        assert main(argv(str(files["export"]), str(path), str(files["spec"]))) == 2, kind
        _one_error(capsys, f"{option} {path}")
        after = os.lstat(path)
        assert (after.st_mode, after.st_ino, after.st_rdev, after.st_uid) == (
            before.st_mode, before.st_ino, before.st_rdev, before.st_uid), kind
    assert not (tmp_path / "nothing.csv").exists() and list((tmp_path / "folder").iterdir()) == []
    assert not [p for p in tmp_path.iterdir() if p.name.endswith((".tmp", ".csv.tmp"))]


@pytest.mark.parametrize("command", ["spec draft", "generate", "anonymize", "anonymize --report"])
def test_a_link_to_a_file_is_written_through_and_stays_a_link(files: dict[str, Path],
                                                              capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                              command: str) -> None:
    import os

    argv, _option = OUTPUTS[command]
    real = tmp_path / "folder" / "real.csv"
    real.write_text("old\n")
    link = tmp_path / "link.csv"
    link.symlink_to(real)
    assert main(argv(str(files["export"]), str(link), str(files["spec"]))) == 0
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert real.read_text() != "old\n" and real.stat().st_size > 0
    assert sorted(p.name for p in real.parent.iterdir()) == ["real.csv"]


def test_spec_draft_prints_for_an_out_of_dash(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["spec", "draft", str(files["export"]), "--out", "-"]) == 0
    assert "[[qi]]" in capsys.readouterr().out and not Path("-").exists()
