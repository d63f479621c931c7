"""The README's first hour, as a new user types it: from a fresh clone, the demo, then every command of
the quick tour and of "More commands" in the order written, each with exit code 0 (or one its comment
documents), then every Python snippet in a fresh interpreter without ``ANONSTREAM_HOME``.

Two lines of "More commands" are not run here (:data:`NOT_RUN`): the console serves until Ctrl-C, and
``docker compose`` needs Docker and builds images (tests/test_compose.py covers the stack).

The clone is made with ``git clone`` of this checkout (its committed state, as CI sees it). Installing
is the one step not repeated: the clone's ``.venv`` is a link to the environment running the tests, and
``PYTHONPATH`` puts the clone's code first. The benchmark data is linked beside the clone, as
``../shared`` is beside a checkout.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from stream.ops.locate import pid_alive
from tests.conftest import shared

ROOT = Path(__file__).resolve().parents[1]
pytestmark = [pytest.mark.slow, pytest.mark.broker]


def _blocks(readme: str) -> list[str]:
    return re.findall(r"```bash\n(.*?)```", readme, flags=re.S)


NOT_RUN = {"anonstream console": "serves until Ctrl-C", "docker compose": "needs Docker and builds images"}


def _tour_lines(readme: str, heading: str = "## Quick tour") -> list[tuple[str, str]]:
    """(command, comment) of each line of the first bash block after ``heading``, continuations joined."""
    section = readme[readme.index(heading):]
    block = _blocks(section)[0].replace("\\\n", " ")
    lines = [(line.split("  #")[0].strip(), line.split("  #", 1)[1] if "  #" in line else "")
             for line in block.splitlines()]
    return [(cmd, comment) for cmd, comment in lines if cmd]


def tour_commands(readme: str) -> list[str]:
    """The commands of the first bash block after "## Quick tour", continuation lines joined, comments cut."""
    return [cmd for cmd, _ in _tour_lines(readme)]


def more_commands(readme: str) -> list[str]:
    """The commands of the "More commands" block, as :func:`tour_commands`."""
    return [cmd for cmd, _ in _tour_lines(readme, "More commands")]


def python_snippets(readme: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", readme, flags=re.S)


def allowed_exits(readme: str) -> dict[str, set[str]]:
    """Each command's accepted exit codes: 0, and any code its README comment documents ("exit 6")."""
    lines = _tour_lines(readme) + _tour_lines(readme, "More commands")
    return {cmd: {"0", *re.findall(r"\bexit (\d+)", comment)} for cmd, comment in lines}


def demo_command(readme: str) -> str:
    """The demo part of the README's first command (what follows the install)."""
    first = _blocks(readme)[0].strip()
    return first.split("&&")[-1].strip()


def test_the_tour_is_found_and_starts_with_the_venv() -> None:
    readme = (ROOT / "README.md").read_text()
    cmds = tour_commands(readme)
    assert cmds[0] == ". .venv/bin/activate" and cmds[-1] == "anonstream stop"
    assert demo_command(readme) == ".venv/bin/anonstream demo"
    assert all(c.startswith(("anonstream ", "export ", ". ")) for c in cmds), cmds


def test_readme_tour_runs_in_order_from_a_fresh_clone(tmp_path: Path) -> None:
    if not (ROOT / ".git").exists() or shutil.which("git") is None:  # a fresh clone needs a repository to clone
        pytest.skip("not a git checkout (the tour is run from a clone of it)")
    shared_dir = shared().parent  # ../shared beside the checkout (skips, as every data test does, without it)
    clone = tmp_path / "anonstream"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
    (clone / ".venv").symlink_to(Path(sys.prefix))
    (tmp_path / "shared").symlink_to(shared_dir)
    readme = (clone / "README.md").read_text()
    script = ["set -u", demo_command(readme) + ' > demo.out 2>&1; echo "@@rc $? demo"']
    commands = tour_commands(readme) + [c for c in more_commands(readme) if not c.startswith(tuple(NOT_RUN))]
    for cmd in commands:  # braces: a command's own redirection (`> release.pub`) is kept
        script.append(f'{{ {cmd} ; }} > step.out 2>&1; rc=$?; cat step.out >> tour.out; echo "@@rc $rc {cmd}"')
    for i, code in enumerate(python_snippets(readme)):  # a fresh interpreter, no ANONSTREAM_HOME
        (clone / f"snippet{i}.py").write_text(code)
        script.append(f'env -u ANONSTREAM_HOME python snippet{i}.py >> tour.out 2>&1; echo "@@rc $? snippet{i}"')
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANONSTREAM_")}
    # a free web port for the detached worker (6066 may be taken by a parallel test)
    env.update({"PYTHONPATH": str(clone), "ANONSTREAM_WEB_PORT": "0"})
    try:
        res = subprocess.run(["bash", "-c", "\n".join(script)], cwd=clone, env=env, capture_output=True, text=True,
                             timeout=1500)
    finally:
        _stop_leftover(clone / "var" / "demo" / "run.pid")
    results = [line.split(" ", 2)[1:] for line in res.stdout.splitlines() if line.startswith("@@rc ")]
    allowed = allowed_exits(readme)
    failed = [(rc, cmd) for rc, cmd in results if rc not in allowed.get(cmd, {"0"})]
    log = "\n".join(p.read_text(errors="replace")[-4000:] for p in (clone / "demo.out", clone / "tour.out")
                    if p.exists())
    assert len(results) == 1 + len(commands) + len(python_snippets(readme)), res.stderr + log
    assert not failed, f"{failed}\n{log}"
    out = (clone / "tour.out").read_text()
    assert "release " in out and ": OK" in out  # releases verify latest read a release back
    assert (clone / "releases").is_dir() and list((clone / "releases").glob("*.csv"))  # consume wrote them
    assert "anonstream run: stopped." in out
    assert len((clone / "release.pub").read_text().strip()) == 64  # the key read_releases(verify=True) is given
    assert list((clone / "dataset").rglob("*.parquet")) and (clone / "counts.csv").exists()


def test_more_commands_are_found_and_every_line_is_a_command() -> None:
    readme = (ROOT / "README.md").read_text()
    cmds = more_commands(readme)
    assert cmds[0] == "anonstream warmup" and "anonstream stop" in cmds
    assert all(c.startswith(("anonstream ", "docker ")) and "|" not in c for c in cmds), cmds
    assert "reports.csv" not in readme  # the tour writes reports.jsonl
    assert sum(c.startswith(tuple(NOT_RUN)) for c in cmds) == len(NOT_RUN)


def _stop_leftover(pid_file: Path) -> None:
    try:
        pid = int(pid_file.read_text().strip())
    except (OSError, ValueError):
        return
    if pid_alive(pid):
        os.kill(pid, signal.SIGKILL)
