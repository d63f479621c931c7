"""Comparing a PBG-EA front with the exhaustive one (PBG paper §7: CE and RR).

* M: every minimal PBG of the lattice (plain Pareto set); M': the archive of one run.
* Convergence error: values of M and M' are divided by the per-index maximum over M (absolute
  value; 1 if that maximum is 0); CE = sum over M' of the Euclidean distance to the nearest
  member of M (a sum, as the paper writes it; 0 when every archive member is a minimal PBG).
* Representation ratio: with a discretization vector, put M in boxes and mark the non-dominated
  boxes; RR = fraction of the marked boxes that hold a member of M'.
"""

from __future__ import annotations

import numpy as np

from core.engines.pbg.archive import boxes


def pareto_mask(raw: np.ndarray, directions: np.ndarray) -> np.ndarray:
    """Rows of raw value vectors that no other row dominates (plain dominance)."""
    vals = np.asarray(raw, dtype=np.float64) * directions
    order = np.lexsort(vals.T[::-1])[::-1]  # descending lexicographic: dominators come first
    keep = np.zeros(len(vals), dtype=bool)
    front: list[np.ndarray] = []
    for i in order:
        v = vals[i]
        if front:
            f = np.asarray(front)
            if ((f >= v).all(axis=1) & (f > v).any(axis=1)).any():
                continue
        keep[i] = True
        front.append(v)
    return keep


def nondominated_boxes(raw: np.ndarray, directions: np.ndarray, eps: np.ndarray) -> set[tuple[int, ...]]:
    """The boxes of ``raw`` (usually M) that no other occupied box dominates."""
    b = np.unique(boxes(raw, eps), axis=0)
    keep = pareto_mask(b.astype(np.float64), directions)
    return {tuple(int(x) for x in row) for row in b[keep]}


def convergence_error(front: np.ndarray, reference: np.ndarray) -> float:
    ref = np.asarray(reference, dtype=np.float64)
    scale = np.abs(ref).max(axis=0)
    scale[scale == 0] = 1.0
    a, m = np.asarray(front, dtype=np.float64) / scale, ref / scale
    dist = np.sqrt(((a[:, None, :] - m[None, :, :]) ** 2).sum(axis=2))
    return float(dist.min(axis=1).sum())


def representation_ratio(front: np.ndarray, reference: np.ndarray, directions: np.ndarray,
                         eps: np.ndarray) -> float:
    marked = nondominated_boxes(reference, directions, eps)
    held = {tuple(int(x) for x in row) for row in boxes(front, eps)}
    return len(marked & held) / len(marked) if marked else 1.0
