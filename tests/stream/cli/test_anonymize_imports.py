"""``anonstream anonymize`` imports only what its run uses (issue 45): no timing, only ``sys.modules``.

Each check runs a fresh interpreter, since the test process has imported everything already.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT, shared

# What no run of ``anonymize`` on a plain CSV needs before its first row: the numba kernels and their
# compiler, scipy, the database layer, and the steps after the engine (verifier, risk, typed columns).
NOT_BEFORE_READ = ("numba", "scipy", "core.lattice.kernels", "sqlalchemy", "db", "core.verify",
                   "stream.worker.risk", "core.columns", "matplotlib")

BEFORE_READ = """
import json, sys
import stream.io.tables as tables

def first_read(*args, **kwargs):
    print(json.dumps(sorted(sys.modules)))
    raise SystemExit(0)

tables.read_for_spec = first_read
from stream.cli.main import main
main(sys.argv[1:])
"""

WHOLE_RUN = """
import json, sys
from stream.cli.main import main
code = main(sys.argv[1:])
print(json.dumps({"code": code, "numba": "numba" in sys.modules,
                  "kernels": "core.lattice.kernels" in sys.modules}))
"""


def _run(script: str, *args: str) -> str:
    done = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


def test_nothing_heavy_is_imported_before_the_first_row_is_read(tmp_path: Path) -> None:
    data = shared("adult", "adult.csv")
    loaded = set(json.loads(_run(BEFORE_READ, "anonymize", str(data), "--spec", "adult", "-k", "5",
                                 "--max-suppression", "0.04", "--out", str(tmp_path / "out.csv"))))
    assert "pandas" in loaded  # the reader's own (a sanity check that the hook ran where it should)
    assert sorted(loaded & set(NOT_BEFORE_READ)) == []


def test_adult_with_suppression_never_loads_the_kernels(tmp_path: Path) -> None:
    """Adult k=5, <= 4 % stays on the numpy path (core/lattice/backend.py, SWITCH_WORK)."""
    data = shared("adult", "adult.csv")
    out = json.loads(_run(WHOLE_RUN, "anonymize", str(data), "--spec", "adult", "-k", "5", "--max-suppression",
                          "0.04", "--out", str(tmp_path / "out.csv")))
    assert out == {"code": 0, "numba": False, "kernels": False}
