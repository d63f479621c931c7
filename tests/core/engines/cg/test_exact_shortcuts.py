"""The CG search's shortcuts give the plain computation's results to the last bit: the segmentation
table reused across lambdas (:class:`core.engines.cg.state.Segmenter`) against the segmentation run
afresh (:func:`core.engines.cg.state.dp_assignment`), and the sweeps that read a class without one
member from its critical members (:func:`core.engines.cg.kernels._without`) against full passes."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

from core.encoding import EncodedBatch, encode
from core.engines.cg.params import CGParams, cap_of, effective_weights, k_min_of, severities
from core.engines.cg.problem import TREE, Problem, build_problem, kd_order, nests
from core.engines.cg.runner import make_setup
from core.engines.cg.search import make_state
from core.engines.cg.state import DIVERSE, KANON, Segmenter, Setup, dp_assignment
from core.engines.registry import get_engine, make_params
from core.generators import generate_crime_reports
from stream.io.specs import load_schema


def problem_of(seed: int, rows: int, mode: int, nested: bool, **values: Any) -> tuple[EncodedBatch, Problem, Setup]:
    df = generate_crime_reports(np.random.default_rng(seed), per_day=rows)
    batch = encode(df, load_schema("crime"))
    name = "cg-diverse" if mode == DIVERSE else "cg-kanon"
    params = make_params(get_engine(name), {"bands": "nested" if nested else "free", **values})
    assert isinstance(params, CGParams)
    row_sev = severities(batch, name)
    kmin, _ = k_min_of(params.k, row_sev)
    p = build_problem(batch, effective_weights(batch, None), row_sev, nested=nested)
    s, _ = make_setup(mode, batch.n, row_sev, np.asarray(batch.sensitive_codes, np.int64), p.m, kmin,
                      cap_of(kmin, params.cap_factor), params)
    return batch, p, s


@pytest.mark.parametrize(("mode", "nested", "values"), [
    (DIVERSE, True, {"l": 2}), (DIVERSE, False, {"l": 3, "k": 4}), (KANON, True, {}),
    (KANON, False, {"k": 7, "cap_factor": 1.5, "max_suppression": 0.3}), (DIVERSE, True, {"l": 3, "ase_rule": True}),
])
def test_segmentation_table_gives_the_fresh_segmentation(mode: int, nested: bool, values: dict[str, Any]) -> None:
    _, p, s = problem_of(5, 400, mode, nested, **values)
    assert s.pr_scale > 0
    segmentation = Segmenter(p, s)
    rng = np.random.default_rng(3)
    for order in (kd_order(p, rng), kd_order(p, rng, noise=1.0), rng.permutation(p.n)):
        for lam in (0.0, 0.5, 0.25, 0.375, 1.0, float(rng.random())):
            cls, n = segmentation(order, lam)
            ref, n_ref = dp_assignment(p, s, order, lam)
            assert n == n_ref
            assert np.array_equal(cls, ref)


@pytest.mark.parametrize(("mode", "nested", "values"), [
    (DIVERSE, True, {"l": 2}), (DIVERSE, False, {"l": 2}), (KANON, True, {}), (KANON, False, {"k": 3}),
    (DIVERSE, True, {"l": 3, "k": 2, "cap_factor": 1.5}),
])
def test_sweeps_reading_classes_from_their_critical_members_match_the_full_passes(
        mode: int, nested: bool, values: dict[str, Any]) -> None:
    """The local search with the shortcut (``Problem.nests``) and without it moves the same tuples, to the
    same classes, with the same totals, sweep after sweep."""
    _, p, s = problem_of(8, 500, mode, nested, **values)
    assert p.nests
    slow = dataclasses.replace(p, nests=False)
    rng = np.random.default_rng(1)
    o1, o2 = kd_order(p, rng), kd_order(p, rng, noise=1.0)
    p1, p2 = np.empty(p.n, np.int64), np.empty(p.n, np.int64)
    p1[o1], p2[o2] = np.arange(p.n), np.arange(p.n)
    cls, n_cls = Segmenter(p, s)(o1, 0.5)
    fast_state, slow_state = make_state(p, s, cls, n_cls), make_state(slow, s, cls, n_cls)
    total = 0
    for sweep in range(6):
        visit = rng.permutation(p.n)
        full = sweep % 2 == 1
        moved = fast_state.sweep(visit, o1, p1, o2, p2, 4, full)
        assert moved == slow_state.sweep(visit, o1, p1, o2, p2, 4, full)
        total += moved
        for name in ("cls", "size", "il", "cmn", "cmx", "clv", "tot", "tev", "cver"):
            assert np.array_equal(getattr(fast_state, name), getattr(slow_state, name)), (sweep, name)
    assert total > 0 and fast_state.objective() == slow_state.objective()


def test_codes_that_do_not_nest_turn_the_shortcut_off() -> None:
    kind, height = np.array([TREE]), np.array([2])
    tree = np.array([[[0, 1, 2, 3], [0, 0, 1, 1], [0, 0, 0, 0]]], np.int32)
    assert nests(kind, tree, height)
    two_parents = tree.copy()
    two_parents[0, 0] = [0, 0, 2, 3]  # rows 0 and 1 share their leaf code, not its parent
    two_parents[0, 1] = [0, 1, 1, 1]
    assert not nests(kind, two_parents, height)
    two_roots = tree.copy()
    two_roots[0, 2] = [0, 0, 1, 1]
    assert not nests(kind, two_roots, height)
