import numpy as np
import pytest

from core.encoding import encode
from core.engines.registry import get_engine, make_params
from core.errors import InfeasibleError
from tests.strategies import make_table, small_schema


def test_node_cap_is_an_explicit_error_not_a_false_optimum() -> None:
    batch = encode(make_table(3, 60), small_schema())
    eng = get_engine("optimal")
    with pytest.raises(InfeasibleError, match="max_nodes=2"):
        eng.anonymize(batch, make_params(eng, {"k": 6, "max_nodes": 2}), np.random.default_rng(0))
    full = eng.anonymize(batch, make_params(eng, {"k": 6}), np.random.default_rng(0))
    assert full.privacy["k"] >= 6


def test_search_counters_are_reported() -> None:
    batch = encode(make_table(4, 60), small_schema())
    rel = get_engine("optimal").anonymize(batch, make_params("optimal", {"k": 4}), np.random.default_rng(0))
    search = rel.diagnostics["search"]
    assert search["popped"] >= 1 and rel.diagnostics["nodes_evaluated"] <= rel.diagnostics["lattice_size"]


@pytest.mark.parametrize("upward", [False, True])
def test_node_set_over_the_lattice_answers_as_the_member_scan(upward: bool) -> None:
    from core.engines.fulldomain.optimal import NodeSet
    from core.lattice import Lattice

    heights = np.array([2, 3, 1, 2])
    rng = np.random.default_rng(1)
    fast, scan = NodeSet(4, upward, heights=heights), NodeSet(4, upward)
    nodes = [tuple(int(x) for x in n) for n in Lattice(heights).all_nodes()]
    for _ in range(6):
        member = nodes[int(rng.integers(len(nodes)))]
        fast.add(member)
        scan.add(member)
        for node in nodes:
            assert fast.covers(node) == scan.covers(node)
            hit = fast.cover(node)
            if hit is not None:  # any member that dominates the node will do
                assert all((h <= v) if upward else (h >= v) for h, v in zip(hit, node, strict=True))
    extreme = nodes[-1] if upward else nodes[0]  # covered by nothing else it did not cover before
    copy = fast.copy()
    copy.add(extreme)
    assert copy.covers(extreme) and fast.covers(extreme) == scan.covers(extreme)  # the copy is its own
