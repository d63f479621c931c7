"""Bad settings and bad input files: one line on stderr naming the problem, exit code 2, nothing sent."""

from __future__ import annotations

import contextlib
import socket
from pathlib import Path

import pytest

from stream.cli.main import main


def test_an_invalid_setting_names_its_variable_and_value(monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("ANONSTREAM_RELEASE_PROCESSES", "maybe")
    assert main(["run"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert err.startswith("error: invalid setting: ANONSTREAM_RELEASE_PROCESSES:") and "'maybe'" in err


def test_an_unknown_engine_is_one_line_before_anything_starts(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("ANONSTREAM_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("ANONSTREAM_ENGINE", "cg-kanonn")
    assert main(["run"]) == 2
    captured = capsys.readouterr()
    assert captured.err.strip().splitlines() == [captured.err.strip()] and "unknown engine 'cg-kanonn'" in captured.err
    assert captured.out == "" and not (tmp_path / "home").exists()  # no broker, no ledger, no announcement


def test_an_unknown_engine_of_a_feed_names_the_feed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pipelines = tmp_path / "pipelines.toml"
    pipelines.write_text('[[feed]]\nname = "a"\ninput = "in.a"\nspec = "crime"\nengine = "mondrain"\n'
                         'outputs = { records = "a.r", releases = "a.m", dlq = "a.d" }\n')
    with contextlib.ExitStack() as stack:  # the default web port taken (by a worker the README left running ...)
        sock = stack.enter_context(socket.socket())
        with contextlib.suppress(OSError):  # ... or by anything else: then it is taken already
            sock.bind(("127.0.0.1", 6066))
            sock.listen()
        assert main(["run", "--pipelines", str(pipelines)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "feed[1].engine: unknown engine 'mondrain'" in err  # not the port


def test_an_invalid_secret_is_named_but_never_echoed(monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("ANONSTREAM_MODE", "production")
    monkeypatch.setenv("ANONSTREAM_K", "0")
    monkeypatch.setenv("ANONSTREAM_FINGERPRINT_KEY", "s3cret-value")
    assert main(["run"]) == 2
    err = capsys.readouterr().err
    assert "ANONSTREAM_K" in err and "s3cret-value" not in err


@pytest.mark.parametrize(("line", "says"), [("not json", "not valid JSON"), ("[1, 2]", "a JSON list")])
def test_a_bad_json_line_stops_the_push_naming_the_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str,
                                                        says: str) -> None:
    path = tmp_path / "reports.jsonl"
    path.write_text('{"report_id": "r1", "station_id": "S1"}\n\n' + line + "\n")
    # an unreachable broker: the file is rejected before anything would be sent
    assert main(["push", str(path), "--station", "S1", "--broker", "kafka://127.0.0.1:1"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"error: {path}, line 3: {says}" + (" (Expecting value at column 1)" if says.startswith("not")
                                                       else ", expected an object")
