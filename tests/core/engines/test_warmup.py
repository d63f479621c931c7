"""warm_up(one_shot=True) loads numba's library without scipy.linalg and cffi, and both stay importable."""

from __future__ import annotations

import subprocess
import sys

_PROBE = """
import sys
from core.engines.registry import get_engine, make_params
from core.engines.warmup import tiny_batch, warm_up
engine = get_engine("optimal")
warm_up(engine, tiny_batch(), make_params(engine, {"k": 2}), one_shot=True)
import numba.np.arraymath
assert "numba" in sys.modules and "scipy.linalg" not in sys.modules and "cffi" not in sys.modules
import scipy.linalg  # visible again
print("ok")
"""


def test_one_shot_warm_up_skips_numba_extras() -> None:
    out = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "ok"
