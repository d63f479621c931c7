"""``anonstream warmup`` leaves the lattice kernels loaded, though a lattice search warms up on numpy."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

_RUN = """
import sys
from core.engines.warmup import warm_up_all
before = "core.lattice.kernels" in sys.modules
times = warm_up_all({names!r})
print(before, "core.lattice.kernels" in sys.modules, sorted(times))
"""


def _warm(names: list[str]) -> list[str]:
    out = subprocess.run([sys.executable, "-c", _RUN.format(names=names)], cwd=ROOT, capture_output=True, text=True,
                         check=True)
    return out.stdout.split()


def test_a_lattice_engine_warms_the_lattice_kernels_too() -> None:
    before, after, *names = _warm(["optimal"])
    assert (before, after) == ("False", "True")
    assert " ".join(names) == "['lattice kernels', 'optimal']"


def test_an_engine_off_the_lattice_does_not_load_them() -> None:
    before, after, *names = _warm(["mondrian"])
    assert (before, after, names) == ("False", "False", ["['mondrian']"])


_ONE = """
import sys
from core.engines.registry import get_engine, make_params
from core.engines.warmup import tiny_batch, warm_up
eng = get_engine("optimal")
warm_up(eng, tiny_batch(), make_params(eng, {{"k": 2}}), long_lived={long_lived})
print("core.lattice.kernels" in sys.modules)
"""


def test_a_worker_loads_the_lattice_kernels_while_warming_up_and_a_one_shot_command_does_not() -> None:
    loaded = [subprocess.run([sys.executable, "-c", _ONE.format(long_lived=flag)], cwd=ROOT, capture_output=True,
                             text=True, check=True).stdout.strip() for flag in (True, False)]
    assert loaded == ["True", "False"]
