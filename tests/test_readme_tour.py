"""The README's first hour, as a new user types it: from a fresh clone, the demo, then every command of
the quick tour in the order written, each with exit code 0.

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


def _tour_lines(readme: str) -> list[tuple[str, str]]:
    """(command, comment) of each line of the first bash block after "## Quick tour", continuations joined."""
    section = readme[readme.index("## Quick tour"):]
    block = _blocks(section)[0].replace("\\\n", " ")
    lines = [(line.split("  #")[0].strip(), line.split("  #", 1)[1] if "  #" in line else "")
             for line in block.splitlines()]
    return [(cmd, comment) for cmd, comment in lines if cmd]


def tour_commands(readme: str) -> list[str]:
    """The commands of the first bash block after "## Quick tour", continuation lines joined, comments cut."""
    return [cmd for cmd, _ in _tour_lines(readme)]


def allowed_exits(readme: str) -> dict[str, set[str]]:
    """Each tour command's accepted exit codes: 0, and any code its README comment documents ("exit 6")."""
    return {cmd: {"0", *re.findall(r"\bexit (\d+)", comment)} for cmd, comment in _tour_lines(readme)}


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
    for cmd in tour_commands(readme):
        script.append(f'{cmd} > step.out 2>&1; rc=$?; cat step.out >> tour.out; echo "@@rc $rc {cmd}"')
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
    assert len(results) == 1 + len(tour_commands(readme)), res.stderr + log
    assert not failed, f"{failed}\n{log}"
    out = (clone / "tour.out").read_text()
    assert "release " in out and ": OK" in out  # releases verify latest read a release back
    assert (clone / "releases").is_dir() and list((clone / "releases").glob("*.csv"))  # consume wrote them
    assert "anonstream run: stopped." in out


def _stop_leftover(pid_file: Path) -> None:
    try:
        pid = int(pid_file.read_text().strip())
    except (OSError, ValueError):
        return
    if pid_alive(pid):
        os.kill(pid, signal.SIGKILL)
