"""``anonstream releases list|show``, ``anonstream status`` and ``anonstream console`` on the seeded ledger."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from stream.cli.main import main
from stream.ops.broker import free_port
from tests.stream.console.seed import Seeded

ROOT = Path(__file__).resolve().parents[3]


def _db(seeded: Seeded) -> list[str]:
    return ["--database", seeded.settings.db_url()]


def test_releases_list(seeded: Seeded, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["releases", "list", *_db(seeded)]) == 0
    out = capsys.readouterr().out
    assert all(rid in out for rid in seeded.releases.values())
    assert f"{len(seeded.releases)} of {len(seeded.releases)} release(s)" in out
    assert main(["releases", "list", "--station", "P1", "--json", *_db(seeded)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [r["id"] for r in data["releases"]] == [seeded.releases["P1"]]
    assert main(["releases", "list", "--since", "2999-01-01", *_db(seeded)]) == 0
    assert "0 of 0 release(s)" in capsys.readouterr().out
    assert main(["releases", "list", "--since", "someday", *_db(seeded)]) == 2
    assert "not a date" in capsys.readouterr().err


def test_releases_show(seeded: Seeded, capsys: pytest.CaptureFixture[str]) -> None:
    rid = seeded.releases["S2"]
    assert main(["releases", "show", rid, *_db(seeded)]) == 0
    out = capsys.readouterr().out
    assert f"release {rid}" in out and "engine    mondrian" in out and "offence frequency" in out
    assert main(["releases", "show", rid, "--json", *_db(seeded)]) == 0
    assert json.loads(capsys.readouterr().out)["id"] == rid
    assert main(["releases", "show", "r-missing", *_db(seeded)]) == 2
    assert "no release" in capsys.readouterr().err
    assert main(["releases", "verify", rid, *_db(seeded)]) == 2  # no broker configured
    assert "no broker configured" in capsys.readouterr().err


def test_status(seeded: Seeded, capsys: pytest.CaptureFixture[str]) -> None:
    # reports wait and no worker ever wrote a heartbeat (5), and a window is held (4): both, the worker first
    assert main(["status", *_db(seeded)]) == 5
    out = capsys.readouterr().out
    assert out.startswith("ACTION NEEDED: no worker running (no worker has ever written a heartbeat")
    assert f"  also: window {seeded.held_window} held" in out
    for line in ("worker", "pool", "dlq", "lag", "windows"):
        assert f"\n{line} " in "\n" + out
    assert f"HELD {seeded.held_window}" in out and "T1" in out
    assert "malformed-json 1" in out
    assert main(["status", "--json", *_db(seeded)]) == 5
    health = json.loads(capsys.readouterr().out)
    assert health["dlq"]["by_reason"] == seeded.rejected
    assert [f["check"] for f in health["verdict"]["findings"]][:2] == ["worker", "held"]


def test_unmigrated_database_is_a_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["status", "--database", f"sqlite:///{tmp_path / 'empty.db'}"]) == 2
    assert "not migrated" in capsys.readouterr().err


def test_console_command_serves_the_database(seeded: Seeded) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANONSTREAM_")}
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.Popen([sys.executable, "-m", "stream.cli.main", "console", "--port", str(port), *_db(seeded)],
                            env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 60
        line = ""
        while "serving on" not in line and time.monotonic() < deadline:
            line = proc.stdout.readline() if proc.stdout else ""
            assert proc.poll() is None or line, "console exited early"
        assert f"serving on http://127.0.0.1:{port}" in line
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/releases", timeout=30) as resp:
            assert {r["id"] for r in json.loads(resp.read())["releases"]} == set(seeded.releases.values())
    finally:
        proc.terminate()
        code = proc.wait(timeout=20)
        if proc.stdout:
            proc.stdout.close()
        assert code == 0
