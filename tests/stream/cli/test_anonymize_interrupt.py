"""Ctrl-C on a long ``anonymize`` stops it promptly: one line, exit 130, no output file.

The engines' numba kernels cannot see a signal; the clustering (k-member, l-greedy, ILS's start) and
ILS's nearest-neighbour kernel run in chunks of bounded work, and a Python loop between the chunks is
where the interruption is raised (and the progress line printed). Before, kmember and ils on Adult
exited only when the whole clustering ended, 25-32 s after the Ctrl-C.

The bound is counted in the engine's own progress lines (one every 0.5 s at most): the process must
end before ``MAX_LINES_AFTER`` more of them; the wall bound of ``proc.wait`` is only a safety net
against a hang, generous for a loaded machine.
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Iterable
from pathlib import Path

import pytest

from stream.ops.runtime import ROOT

ADULT = ROOT.parent / "shared" / "data" / "adult" / "adult.csv"
MAX_LINES_AFTER = 4  # about 2 s of progress lines; the clustering alone prints 40-60 of them
SAFETY_S = 120.0

pytestmark = [pytest.mark.slow, pytest.mark.ils_kernels,
              pytest.mark.skipif(not ADULT.exists(), reason="needs the Adult data beside the clone")]


def _lines(stream: Iterable[str], out: queue.Queue[str | None]) -> None:
    for line in stream:
        out.put(line.rstrip("\n"))
    out.put(None)


@pytest.mark.parametrize(("engine", "phase"), [("kmember", "clustering"), ("ils", "start kmember")])
def test_ctrl_c_ends_a_long_anonymize_with_one_line_and_exit_130(engine: str, phase: str, tmp_path: Path) -> None:
    """SIGINT once the engine reports its clustering phase (ILS: its k-member start, the old 15 s kernel)."""
    started = f"{engine}: "
    out = tmp_path / "released.csv"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANONSTREAM_")} | {"PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "stream.cli.main", "anonymize", str(ADULT), "--spec", "adult",
                             "--engine", engine, "-k", "5", "--out", str(out)], cwd=tmp_path, env=env, text=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    lines: queue.Queue[str | None] = queue.Queue()
    reader = threading.Thread(target=_lines, args=(proc.stderr, lines), daemon=True)
    reader.start()
    seen: list[str] = []
    try:
        while True:  # the engine has started once it prints its first progress line
            line = lines.get(timeout=SAFETY_S)
            assert line is not None, "\n".join(seen)  # it ended before any progress line
            seen.append(line)
            if line.startswith(started) and phase in line:
                break
        proc.send_signal(signal.SIGINT)
        after: list[str] = []
        while (line := lines.get(timeout=SAFETY_S)) is not None:
            after.append(line)
        code = proc.wait(timeout=SAFETY_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        reader.join(timeout=SAFETY_S)
        assert proc.stderr is not None
        proc.stderr.close()
    progress = [line for line in after if line.startswith(started)]
    assert len(progress) < MAX_LINES_AFTER, after
    assert code == 130, after
    assert after[-1:] == ["interrupted"] and not [line for line in after if "Traceback" in line], after
    assert not out.exists() and not list(tmp_path.glob("*.tmp*")), list(tmp_path.iterdir())
