"""A search starts on numpy and moves to the numba kernels once they pay; the release never changes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from core.encoding import encode
from core.lattice import Lattice, NodeEvaluator
from core.lattice.backend import starting_backend
from core.privacy import PrivacyRequirement
from tests.strategies import make_table, small_schema

ROOT = Path(__file__).resolve().parents[3]

# One optimal release on a table with suppression (so the suppression cost is summed), its loss to the
# last bit, and whether this fresh process loaded the kernels; SWITCH_WORK is set by the caller.
_RUN = """
import json, sys
import numpy as np
import core.lattice.evaluator as ev
ev.SWITCH_WORK = {switch}
from core.encoding import encode
from core.engines.registry import get_engine, make_params
from tests.strategies import make_table, small_schema
batch = encode(make_table(5, 400), small_schema())
eng = get_engine("optimal")
rel = eng.anonymize(batch, make_params(eng, {{"k": 6, "max_suppression": 0.1}}), np.random.default_rng(0))
diag = rel.diagnostics
print(json.dumps({{"levels": [int(v) for v in diag["levels"].values()], "loss": diag["objective_value"].hex(),
                  "suppressed": sorted(int(i) for i in rel.suppressed), "rows": rel.rows.to_csv(index=False),
                  "kernels": "core.lattice.kernels" in sys.modules}}))
"""


def _release(switch: int) -> dict:
    out = subprocess.run([sys.executable, "-c", _RUN.format(switch=switch)], cwd=ROOT, capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout)


def test_a_small_search_never_loads_the_kernels_and_a_switch_mid_search_changes_nothing() -> None:
    numpy_only, switched = _release(10**12), _release(1)  # never switch / switch after the first node
    assert numpy_only["kernels"] is False and switched["kernels"] is True
    assert numpy_only["suppressed"], "the case must suppress rows, so the suppression cost is summed"
    assert {k: v for k, v in numpy_only.items() if k != "kernels"} == {k: v for k, v in switched.items()
                                                                        if k != "kernels"}


def test_every_node_has_the_same_result_to_the_last_bit_on_both_backends() -> None:
    batch = encode(make_table(9, 300), small_schema())
    for req in (PrivacyRequirement(k=4, max_suppression=0.2), PrivacyRequirement(k=2, l=2, max_suppression=0.2)):
        fast, ref = NodeEvaluator(batch, req, backend="numba"), NodeEvaluator(batch, req, backend="numpy")
        nodes = [tuple(int(v) for v in n) for n in Lattice(batch.heights).all_nodes()]
        for node in sorted(nodes, key=lambda n: -sum(n)):  # most general first, as a search seeds them
            fast.prepare_projection(node)
            assert fast.evaluate(node) == ref.evaluate(node), node


def test_auto_starts_on_the_kernels_only_once_they_are_loaded() -> None:
    assert starting_backend("numpy") == "numpy" and starting_backend("numba") == "numba"
    import core.lattice.kernels  # noqa: F401  (loaded: using them costs nothing extra)

    assert starting_backend("auto") == "numba"
