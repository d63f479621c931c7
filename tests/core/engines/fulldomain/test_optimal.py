import numpy as np
import pytest

from core.encoding import encode
from core.engines.registry import get_engine, make_params
from core.errors import InfeasibleError
from tests.strategies import make_table, small_schema


def test_node_cap_is_an_explicit_error_not_a_false_optimum():
    batch = encode(make_table(3, 60), small_schema())
    eng = get_engine("optimal")
    with pytest.raises(InfeasibleError, match="max_nodes=2"):
        eng.anonymize(batch, make_params(eng, {"k": 6, "max_nodes": 2}), np.random.default_rng(0))
    full = eng.anonymize(batch, make_params(eng, {"k": 6}), np.random.default_rng(0))
    assert full.privacy["k"] >= 6


def test_search_counters_are_reported():
    batch = encode(make_table(4, 60), small_schema())
    rel = get_engine("optimal").anonymize(batch, make_params("optimal", {"k": 4}), np.random.default_rng(0))
    search = rel.diagnostics["search"]
    assert search["popped"] >= 1 and rel.diagnostics["nodes_evaluated"] <= rel.diagnostics["lattice_size"]
