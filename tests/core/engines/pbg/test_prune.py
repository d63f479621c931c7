"""PBG-EA pruning: the optimistic bounds are valid, Archive.rejects is exactly update's rejection and
monotone, and a pruned node would have been rejected by the archive."""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from core.encoding import encode
from core.engines.pbg import DIRECTIONS, PropertyEvaluator, SearchConfig, run_search
from core.engines.pbg.archive import Archive
from core.engines.pbg.prune import OptimisticBound
from core.lattice import Lattice
from tests.core.engines.pbg.test_archive import offers
from tests.strategies import small_schema, small_tables

ALL = ("k", "l", "S_k", "S_l", "GLM", "CM")


@settings(max_examples=40, deadline=None)
@given(small_tables(min_rows=10, max_rows=70), st.data())
def test_bounds_hold_for_every_unevaluated_node(frame: pd.DataFrame, data: st.DataObject) -> None:
    """For random sets of evaluated nodes, every other node's true vector is no better (in every
    index) than one of its candidate vectors, namely the one of the step holding its true k."""
    batch = encode(frame, small_schema())
    eta = data.draw(st.integers(0, len(frame) // 3))
    props = PropertyEvaluator(batch, eta, np.asarray(frame["shape"].isin(["circle", "oval"])))
    nodes = [tuple(int(x) for x in n) for n in Lattice(props.heights).all_nodes()]
    picked = data.draw(st.lists(st.sampled_from(nodes), min_size=0, max_size=25, unique=True))
    bound = OptimisticBound(props, ALL)
    for node in picked:
        bound.evaluate(node)
    dirs = np.array([DIRECTIONS[o] for o in ALL], dtype=float)
    for node in data.draw(st.lists(st.sampled_from(nodes), min_size=1, max_size=20, unique=True)):
        true = props.indices(node)
        cand = bound.candidates(node)
        assert (np.diff(cand[:, 0]) > 0).all()  # steps in increasing K
        row = cand[np.searchsorted(cand[:, 0], true.k)]  # the step whose K range holds k(c)
        assert true.k <= row[0] and true.l <= row[1] and true.S_k <= row[2] and true.S_l <= row[3]
        assert row[4] <= true.GLM and row[5] <= true.CM
        assert (true.vector(ALL) * dirs <= bound.vector(cand) * dirs).all()
        above = [props.indices(a) for a in picked if all(x >= y for x, y in zip(a, node, strict=True))]
        below = [props.indices(b) for b in picked if all(x <= y for x, y in zip(b, node, strict=True))]
        assert all(b.k <= true.k <= a.k for a in above for b in below)  # k is monotone (bound 1)
        assert props.glm_lower(node) <= true.GLM


@settings(max_examples=30, deadline=None)
@given(small_tables(min_rows=10, max_rows=70), st.data())
def test_a_pruned_node_would_be_rejected_by_the_archive(frame: pd.DataFrame, data: st.DataObject) -> None:
    batch = encode(frame, small_schema())
    eta = data.draw(st.integers(0, len(frame) // 3))
    props = PropertyEvaluator(batch, eta, np.asarray(frame["color"].isin(["red", "blue"])))
    objectives = data.draw(st.sampled_from([("k", "GLM"), ("k", "l", "GLM"), ("S_k", "S_l", "GLM"),
                                            ("k", "GLM", "CM")]))
    eps = np.array(data.draw(st.lists(st.sampled_from([1.0, 2.0, 5.0]), min_size=len(objectives),
                                      max_size=len(objectives))))
    nodes = [tuple(int(x) for x in n) for n in Lattice(props.heights).all_nodes()]
    picked = data.draw(st.lists(st.sampled_from(nodes), min_size=1, max_size=30, unique=True))
    bound = OptimisticBound(props, objectives)
    archive = Archive(eps, [DIRECTIONS[o] for o in objectives])
    for node in picked:
        archive.update(node, bound.evaluate(node).vector(objectives))
    for node in nodes:
        if bound.prunable(node, archive) is not None:
            trial = copy.deepcopy(archive)
            assert not trial.update(node, props.indices(node).vector(objectives))
            assert trial.keys == archive.keys  # and the archive would not have changed


@settings(max_examples=100, deadline=None)
@given(offers(), st.data())
def test_rejects_is_updates_rejection_and_is_monotone(case: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
                                                      data: st.DataObject) -> None:
    _, eps, dirs, vecs = case
    arch = Archive(eps, dirs)
    for i, v in enumerate(vecs):
        predicted = bool(arch.rejects(v))
        assert predicted == bool(arch.rejects(v[None, :])[0])
        worse = v - dirs * np.array(data.draw(st.lists(st.floats(0, 5), min_size=len(v), max_size=len(v))))
        if predicted:
            assert arch.rejects(worse)  # no better in any index: rejected as well
        before = list(arch.keys)
        assert arch.update(i, v) == (not predicted)
        if predicted:
            assert arch.keys == before


def _small_props(seed: int = 7) -> PropertyEvaluator:
    from tests.core.engines.pbg.test_engine import table

    frame = table(90, seed=seed)
    batch = encode(frame, small_schema())
    return PropertyEvaluator(batch, 4, frame["shape"].isin(["circle", "oval"]).to_numpy())


def test_pruning_evaluates_fewer_nodes_and_each_pruned_node_is_dominated() -> None:
    props = _small_props()
    objectives = ("k", "GLM")
    dirs = np.array([DIRECTIONS[o] for o in objectives])
    total_on = total_off = 0
    for seed in range(4):
        cfg = SearchConfig(objectives, (1.0, 1.0), iterations=30)
        off = run_search(props.indices, props.heights, cfg, np.random.default_rng(seed))
        bound = OptimisticBound(props, objectives)
        on = run_search(props.indices, props.heights, cfg, np.random.default_rng(seed), bound=bound)
        total_on, total_off = total_on + on.evaluations, total_off + off.evaluations
        assert on.evaluations == bound._size == len(on.evaluated_nodes)  # each evaluation went through the bound
        assert on.pruned == len(on.pruned_nodes) > 0 and not on.pruned_nodes & on.evaluated_nodes
        # Theorem 1 covers the pruned nodes as well: no front member is dominated by any of them
        front = np.array([m.vector(objectives) for m in on.front]) * dirs
        for node in on.pruned_nodes | on.evaluated_nodes:
            v = props.indices(node).vector(objectives) * dirs
            assert not ((v >= front).all(axis=1) & (v > front).any(axis=1)).any()
    assert total_on < total_off


def test_engine_prune_flag_and_diagnostics() -> None:
    from core.engines.pbg.engine import PBGEAEngine, PBGParams
    from core.engines.registry import get_engine, make_params

    props = _small_props()
    eng = get_engine("pbg-ea")
    assert isinstance(eng, PBGEAEngine)
    on_params = make_params(eng, {"iterations": 20, "max_suppression": 0.05})
    off_params = make_params(eng, {"iterations": 20, "max_suppression": 0.05, "prune": False})
    assert isinstance(on_params, PBGParams) and isinstance(off_params, PBGParams)
    on = eng.search(props.batch, on_params, np.random.default_rng(3))[1]
    off = eng.search(props.batch, off_params, np.random.default_rng(3))[1]
    assert on["prune"] and on["nodes_pruned"] > 0 and on["nodes_evaluated"] < off["nodes_evaluated"]
    assert not off["prune"] and off["nodes_pruned"] == 0
