"""KGEN genetic operators (paper §3.5): selection with age penalty, min/max crossover, mutations.

A chromosome is a level vector (paper §3.3, Fig. 4): gene ``a`` is the generalization level of QI
``a``, kept inside the preprocessed box ``bounds.low <= levels <= bounds.high``.

Interpretations where the paper is vague (also listed in docs/engines/kgen.md):

* Selection: eq. 3 gives each member a probability ``fitness_j * w_j / sum_i fitness_i * w_i``.
  The paper minimises precision, so we take ``fitness = 1 - loss`` (a loss of 0 is best), and the
  age penalty ``p`` (0 for a new member, +1 per generation survived, capped at ``max_penalty``)
  gives ``w = (max_penalty - p) / max_penalty``: at ``p = 10`` (default) the probability is 0.
  "Tournament selection" is then a tournament of ``tournament_size`` entrants drawn with those
  probabilities; the best entrant (feasible first, then lower loss) wins. If every member is
  aged out, entrants are drawn by fitness alone.
* Crossover (Fig. 6): ``lo = min(p1, p2)``, ``hi = max(p1, p2)`` gene-wise. Case 1 (both
  feasible): if ``lo`` is feasible it is the offspring, else one random node strictly between
  ``lo`` and each parent. Case 2 (neither): ``hi``. Case 3 (one): a random node strictly between
  ``lo`` and the feasible parent. "Between" is uniform in the box, avoiding its two corners when
  the box has other nodes (the corners are known already).
* Standard mutation: one free gene gets a different uniformly random level in its range, so the
  chromosome moves up or down its strategy path.
* Horizontal mutation: ``max(2, round(fraction * free genes))`` distinct random genes are
  changed, alternately upwards (to a level in ``(current, high]``) and downwards (to
  ``[low, current)``), starting in a random direction. Each turn takes a random gene that can
  move in the turn's direction (if none can, one that moves the other way), so whenever the node
  allows it at least one gene goes up and another down: the result is not comparable with the
  original, i.e. on another strategy path.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from core.engines.kgen.bounds import Bounds, rank_key
from core.lattice import NodeResult

Node = tuple[int, ...]


@dataclass(slots=True)
class Member:
    """One individual: its node, its evaluation and its age penalty."""

    levels: Node
    result: NodeResult
    age: int = 0


def fitness(res: NodeResult, n_rows: int) -> float:
    """The quality eq. 3 weighs: 1 - loss if feasible, else the share of rows kept (closeness)."""
    if res.feasible:
        return max(1.0 - res.loss, 0.0)
    return max(1.0 - res.suppressed / max(n_rows, 1), 0.0)


def selection_weights(pop: list[Member], max_penalty: int, n_rows: int) -> np.ndarray:
    """Eq. 3 probabilities of the population (fitness times age weight)."""
    fit = np.array([fitness(m.result, n_rows) for m in pop]) + 1e-9
    w = np.array([max(0.0, (max_penalty - m.age) / max_penalty) for m in pop])
    r = fit * w
    if r.sum() <= 0:
        r = fit
    return r / r.sum()


def tournament(pop: list[Member], probs: np.ndarray, size: int, rng: np.random.Generator) -> Member:
    """The best of ``size`` entrants drawn with the eq. 3 probabilities."""
    idx = rng.choice(len(pop), size=size, p=probs)
    return min((pop[int(i)] for i in idx), key=lambda m: rank_key(m.result))


def between(lo: np.ndarray, hi: np.ndarray, rng: np.random.Generator, tries: int = 8) -> Node:
    """A random node in the box ``lo <= x <= hi``, avoiding both corners when possible."""
    span = hi - lo
    if int(np.prod(span + 1, dtype=object)) <= 2:
        return tuple(int(x) for x in hi)
    lo_t, hi_t = tuple(int(x) for x in lo), tuple(int(x) for x in hi)
    node = hi_t
    for _ in range(tries):
        node = tuple(int(x) for x in lo + (rng.random(len(lo)) * (span + 1)).astype(np.int64))
        if node != lo_t and node != hi_t:
            break
    return node


def crossover(p1: Member, p2: Member, evaluate: Callable[[Node], NodeResult], rng: np.random.Generator,
              cases: Counter[str]) -> list[Node]:
    """KGEN's min/max-node crossover with the three cases of Fig. 6."""
    a, b = np.asarray(p1.levels), np.asarray(p2.levels)
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    f1, f2 = p1.result.feasible, p2.result.feasible
    if f1 and f2:
        cases["case1"] += 1
        lo_node = tuple(int(x) for x in lo)
        if evaluate(lo_node).feasible:
            cases["case1_min_feasible"] += 1
            return [lo_node]
        return [between(lo, a, rng), between(lo, b, rng)]
    if not f1 and not f2:
        cases["case2"] += 1
        return [tuple(int(x) for x in hi)]
    cases["case3"] += 1
    return [between(lo, a if f1 else b, rng)]


def mutate(node: Node, bounds: Bounds, rng: np.random.Generator) -> Node:
    """Standard mutation: one free gene takes another level of its range."""
    free = bounds.free
    if not len(free):
        return node
    a = int(free[rng.integers(len(free))])
    lo, hi = int(bounds.low[a]), int(bounds.high[a])
    choices = [v for v in range(lo, hi + 1) if v != node[a]]
    out = list(node)
    out[a] = choices[int(rng.integers(len(choices)))]
    return tuple(out)


def horizontal_mutate(node: Node, bounds: Bounds, fraction: float, rng: np.random.Generator) -> Node:
    """Horizontal mutation: alternately raise and lower several genes (another strategy path)."""
    free = bounds.free
    if len(free) < 2:
        return node
    m = min(len(free), max(2, round(fraction * len(free))))
    low, high = bounds.low, bounds.high
    out = list(node)
    pool = [int(g) for g in rng.permutation(free)]
    up = bool(rng.integers(2))
    # The first two turns take one gene that can rise and another that can fall, when they exist.
    ups = [g for g in pool if out[g] < high[g]]
    downs = [g for g in pool if out[g] > low[g]]
    pair = next(((i, j) for i in ups for j in downs if i != j), None)
    plan = [pair[0], pair[1]] if pair else []
    if pair and not up:
        plan.reverse()
    for turn in range(m):
        if turn < len(plan):
            g = plan[turn]
        else:
            # a gene that can move in this turn's direction, else one that can move the other way
            movable = [g for g in pool if (out[g] < high[g] if up else out[g] > low[g])]
            if not movable:
                up = not up
                movable = pool
            g = movable[0]
        pool.remove(g)
        v = out[g]
        out[g] = int(rng.integers(v + 1, high[g] + 1)) if up else int(rng.integers(low[g], v))
        up = not up
    return tuple(out)


def survivors(members: list[Member], size: int) -> list[Member]:
    """Environmental selection: distinct nodes (first occurrence kept), best ``size`` by rank."""
    seen: dict[Node, Member] = {}
    for m in members:
        seen.setdefault(m.levels, m)
    return sorted(seen.values(), key=lambda m: rank_key(m.result))[:size]
