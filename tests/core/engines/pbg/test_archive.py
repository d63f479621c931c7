"""Dominance, box-dominance, Algorithm 1's archive (Theorems 1-2), the CE / RR measures and the operators."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.engines.pbg.archive import (
    Archive,
    box_counts,
    box_dominates,
    boxes,
    dominates,
    theorem2_bound,
)
from core.engines.pbg.assess import convergence_error, nondominated_boxes, pareto_mask, representation_ratio
from core.engines.pbg.operators import crossover, initial_population, mutate, spea2_fitness, tournament


@st.composite
def offers(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A stream of candidate value vectors with bounds, a discretization and directions."""
    r = draw(st.integers(1, 3))
    upper = draw(st.lists(st.integers(1, 40), min_size=r, max_size=r))
    eps = draw(st.lists(st.sampled_from([0.5, 1.0, 2.0, 3.0, 7.5]), min_size=r, max_size=r))
    dirs = draw(st.lists(st.sampled_from([1, -1]), min_size=r, max_size=r))
    integral = draw(st.booleans())
    elem = [st.integers(0, u) if integral else st.floats(0, u, allow_nan=False) for u in upper]
    vecs = draw(st.lists(st.tuples(*elem), min_size=1, max_size=60))
    return np.array(upper, float), np.array(eps), np.array(dirs), np.array(vecs, float)


@settings(max_examples=150, deadline=None)
@given(offers())
def test_archive_invariants_hold_after_every_update(
        case: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]) -> None:
    upper, eps, dirs, vecs = case
    arch = Archive(eps, dirs)
    bound = theorem2_bound(upper.tolist(), eps.tolist(), tight=True)
    assert bound <= theorem2_bound(upper.tolist(), eps.tolist())
    for i, v in enumerate(vecs):
        arch.update(i, v)
        vals, bx = arch.vals, arch.box
        # never two members in one box
        assert len({tuple(b) for b in bx}) == len(arch)
        # mutually non-dominated under box-dominance
        for a, b in itertools.permutations(range(len(arch)), 2):
            assert not box_dominates(vals[a], bx[a], vals[b], bx[b])
        # Theorem 2
        assert len(arch) <= bound
        # Theorem 1: no member is dominated by any candidate offered so far
        offered = vecs[: i + 1] * dirs
        for m in vals:
            assert not ((offered >= m).all(axis=1) & (offered > m).any(axis=1)).any()


@settings(max_examples=80, deadline=None)
@given(offers())
def test_archive_with_integer_values_and_unit_eps_is_the_pareto_set(
        case: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]) -> None:
    upper, _, dirs, vecs = case
    vecs = np.floor(vecs)
    arch = Archive(np.ones(len(upper)), dirs)
    for i, v in enumerate(vecs):
        arch.update(i, v)
    expected = {tuple(v) for v in vecs[pareto_mask(vecs, dirs)]}
    assert {tuple(v) for v in arch.raw_values()} == expected


def test_box_dominance_compares_boxes_first_then_values() -> None:
    eps = np.array([10.0, 10.0])
    a, b = np.array([19.0, 11.0]), np.array([12.0, 15.0])  # same box (1, 1), incomparable
    assert (boxes(a, eps) == boxes(b, eps)).all()
    assert not box_dominates(a, boxes(a, eps), b, boxes(b, eps))
    c = np.array([20.0, 10.0])  # box (2, 1) dominates box (1, 1) although c does not dominate b
    assert not dominates(c, b)
    assert box_dominates(c, boxes(c, eps), b, boxes(b, eps))


def test_algorithm1_keeps_one_member_per_box_and_removes_box_dominated() -> None:
    arch = Archive([10.0, 10.0], [1, -1])  # maximize the first, minimize the second
    assert arch.update("a", np.array([15.0, 55.0]))
    assert not arch.update("b", np.array([12.0, 52.0]))  # same box (1, 5), incomparable: rejected
    assert arch.update("c", np.array([25.0, 41.0]))  # box (2, 4) box-dominates (1, 5): replaces a
    assert arch.keys == ["c"]
    assert arch.update("d", np.array([5.0, 1.0]))  # trade-off in another box
    assert not arch.update("c", np.array([25.0, 41.0]))  # the same candidate again: no duplicate
    assert sorted(arch.keys, key=repr) == ["c", "d"]


def test_theorem2_bound_counts_boxes() -> None:
    assert box_counts([10, 100], [1, 10]) == [11, 11]
    assert theorem2_bound([10, 100, 4], [1, 10, 1]) == 11 * 11  # b = (11, 11, 5): product of the 2 largest
    assert theorem2_bound([10, 100, 4], [1, 10, 1], tight=True) == 11 * 5
    assert theorem2_bound([10], [1]) == 1


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 9), st.integers(0, 9), st.integers(0, 9)), min_size=1, max_size=40),
       st.lists(st.sampled_from([1, -1]), min_size=3, max_size=3))
def test_pareto_mask_matches_brute_force(rows: list[tuple[int, int, int]], dirs: list[int]) -> None:
    vals = np.array(rows, float)
    d = np.array(dirs)
    o = vals * d
    brute = [not any(dominates(o[j], o[i]) for j in range(len(o))) for i in range(len(o))]
    assert pareto_mask(vals, d).tolist() == brute


def test_ce_and_rr_on_a_known_front() -> None:
    ref = np.array([[1.0, 10.0], [5.0, 20.0], [10.0, 40.0]])  # maximize k, minimize GLM
    dirs, eps = np.array([1, -1]), np.array([1.0, 1.0])
    assert convergence_error(ref[:2], ref) == 0.0
    assert representation_ratio(ref[:2], ref, dirs, eps) == pytest.approx(2 / 3)
    off = np.array([[1.0, 14.0]])
    assert convergence_error(off, ref) == pytest.approx(4 / 40)
    assert representation_ratio(ref, ref, dirs, np.array([100.0, 100.0])) == 1.0
    assert nondominated_boxes(ref, dirs, np.array([100.0, 100.0])) == {(0, 0)}


# -- evolutionary operators (PBG paper §6) ---------------------------------------------------------


def test_initial_population_holds_bottom_top_and_random_nodes() -> None:
    h = np.array([4, 2, 3, 1])
    pop = initial_population(h, 25, np.random.default_rng(0))
    assert pop.shape == (25, 4)
    assert (pop[0] == 0).all() and (pop[1] == h).all()
    assert ((pop >= 0) & (pop <= h)).all()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5)), min_size=1, max_size=20))
def test_spea2_fitness_is_the_sum_of_dominators_strengths(rows: list[tuple[int, int]]) -> None:
    vals = np.array(rows, float)
    n = len(vals)
    strength = [sum(dominates(vals[i], vals[j]) for j in range(n)) for i in range(n)]
    want = [sum(strength[i] for i in range(n) if dominates(vals[i], vals[j])) for j in range(n)]
    assert spea2_fitness(vals).tolist() == want


def test_tournament_prefers_lower_fitness() -> None:
    fit = np.array([0.0, 5.0, 9.0])
    wins = tournament(fit, 2000, np.random.default_rng(1))
    counts = np.bincount(wins, minlength=3)
    assert counts[2] == 0 and counts[0] > counts[1] > 0  # the worst never wins a distinct-pair tournament


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 9), st.integers(1, 6), st.integers(0, 2**32 - 1))
def test_crossover_swaps_tails_and_mutation_moves_one_step(n: int, d: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    h = rng.integers(0, 5, d)
    parents = rng.integers(0, h + 1, size=(n, d))
    kids = crossover(parents, 1.0, rng)
    assert kids.shape == parents.shape
    if n % 2 == 0:  # every gene value per attribute is kept, only redistributed
        assert (np.sort(kids, axis=0) == np.sort(parents, axis=0)).all()
    assert all((parents[:, a] == k[a]).any() for k in kids for a in range(d))
    mutated = mutate(kids, h, 1.0, rng)
    assert ((mutated >= 0) & (mutated <= h)).all()
    assert (np.abs(mutated - kids) <= 1).all()
    assert (mutate(kids, h, 0.0, rng) == kids).all()


@settings(max_examples=100, deadline=None)
@given(offers(), st.data())
def test_offering_a_candidate_again_never_changes_the_archive(
        case: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray], data: st.DataObject) -> None:
    """The search offers each node only once; this is exact because re-offers are no-ops."""
    _, eps, dirs, vecs = case
    order = data.draw(st.lists(st.integers(0, len(vecs) - 1), min_size=1, max_size=3 * len(vecs)))
    every, first = Archive(eps, dirs), Archive(eps, dirs)
    seen: set[int] = set()
    for i in order:
        every.update(i, vecs[i])
        if i not in seen:
            seen.add(i)
            first.update(i, vecs[i])
        assert sorted(every.keys, key=repr) == sorted(first.keys, key=repr)
