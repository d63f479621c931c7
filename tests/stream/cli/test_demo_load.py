"""Issue 39: what the demo releases depends on its input, not on the machine's load.

Two runs of ``anonstream demo`` on one machine once gave 3 releases of 2,000 reports and 5 (two
stations split 606 + 1,394): a window closed by idling while its station's reports were still on
their way to a busy worker. The demo's push is now a batch (begin and end markers), and a batch's
windows close when its end marker is ingested, however long its rows take. Here the demo runs with a
process burning a core, and an idle timeout far shorter than the worker's own pause between two
ingested batches (``take_within_s``), so any window closed by idling would show as a split release.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest

pytestmark = [pytest.mark.broker, pytest.mark.slow]

STATIONS, REPORTS, SEED, DAY = 2, 1500, 7, "2024-03-01"


def expected_releases() -> dict[tuple[str, str, int], int]:
    """From the demo's input alone: one release per station's day, holding every report of it."""
    from db.windows import WindowPolicy
    from stream.station.simulate import generate_day

    policy = WindowPolicy()
    reports = generate_day(STATIONS, REPORTS, SEED, datetime.fromisoformat(DAY).replace(tzinfo=UTC))
    out: Counter[tuple[str, str, int]] = Counter()
    for station, rows in reports.items():
        days = {policy.start_of(datetime.fromisoformat(str(r["event_time"])).astimezone(UTC)) for r in rows}
        assert len(days) == 1, days  # one day per station: one window, whatever the merging
        out[(f"station:{station}", days.pop().date().isoformat(), 0)] += len(rows)
    return dict(out)


def released(folder: Path) -> dict[tuple[str, str, int], int]:
    """The releases the demo wrote: (window key, window day, sequence) -> reports the window received."""
    out: dict[tuple[str, str, int], int] = {}
    for path in folder.glob("_*.manifest.json"):
        manifest = json.loads(path.read_text())
        w = manifest["window"]
        key = (w["key"], w["start"][:10], int(w["seq"]))
        assert key not in out, f"two releases of window {key}"
        out[key] = int(manifest["counts"]["received"])
    return out


def test_the_demo_releases_the_same_windows_with_a_core_busy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    from stream.cli.main import main
    from stream.testing.reports import spec_ref

    monkeypatch.chdir(tmp_path)
    for key in [k for k in os.environ if k.startswith("ANONSTREAM_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("ANONSTREAM_SPEC", spec_ref())
    expected = expected_releases()
    burner = subprocess.Popen([sys.executable, "-c", "while True: pass"])  # the other core busy throughout
    try:
        code = main(["demo", "--stations", str(STATIONS), "--reports", str(REPORTS), "--seed", str(SEED),
                     "--day", DAY, "--idle-timeout", "0.1", "--timeout", "240", "--format", "csv",
                     "--out", str(tmp_path / "out")])
    finally:
        burner.kill()
        burner.wait()
    out = capsys.readouterr().out
    assert code == 0, out
    assert released(tmp_path / "out") == expected, out
    assert "dlq 3" in out and f"{len(expected)} release(s)" in out
