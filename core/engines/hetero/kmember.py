"""``kmember``: greedy k-member clustering without hierarchies.

PAPER: Byun, Kamra, Bertino, Li, "Efficient k-anonymization using clustering techniques",
DASFAA 2007 (the k-member baseline of the ILS paper, §2 and §6).

GUARANTEE: every released row belongs to a cluster of at least k rows (exactly k, except that the
fewer than k rows left at the end join existing clusters); all rows of a cluster carry the same QI
labels, so the release is k-anonymous (homogeneous): by default (``bands = "nested"``) per QI the
smallest node of its hierarchy covering the cluster's values, the clustering run on
:func:`~core.engines.hetero.data.nested_data` (node levels); with ``bands = "free"`` the range
``[min, max]`` of its numeric values and the set ``{a,b}`` of its other values, no hierarchy used.
No row is suppressed. l-diversity / t-closeness are not supported.

Algorithm (Byun et al., Fig. 4): start from a random record; repeatedly seed a new cluster with the
remaining record furthest from the last record used, then add k - 1 times the remaining record
that minimizes the cluster's information loss; place leftovers where the total loss |c| * NCP(c)
grows least. Interpretations: information loss is the ILS paper's set-based NCP (eq. 1-3) instead
of Byun's hierarchy heights, and the record distance is the NCP of the pair (|x - y| / range per
numeric QI, 1 / (|domain| - 1) per differing nominal QI). O(n^2 d) time, in a numba kernel.

Verification: the release is checked in "k-regular" mode (``core.verify.kregular``) because the
class verifier's ``Hierarchy.covers`` does not read set labels for table / tree hierarchies. The
diagnostics' ``matching`` is a k-regular subgraph of the clustering (§5.5 conversion, random per
seed); each cluster's labels cover all of its rows, so every declared match is covered.
"""

from __future__ import annotations

import time

import numpy as np

from core.encoding import EncodedBatch
from core.engines.base import BandsParams, Engine, Progress, Release, no_progress
from core.engines.hetero.common import check_k_only
from core.engines.hetero.data import HeteroData, hetero_data, nested_data
from core.engines.hetero.fallback import nested_with_fallback
from core.engines.hetero.graph import regular_from_clusters
from core.engines.hetero.greedy import kmember_clusters
from core.engines.hetero.release import homogeneous_release


def kmember_cls(data: HeteroData, k: int, rng: np.random.Generator, progress: Progress = no_progress) -> np.ndarray:
    """Cluster id per row (clusters of >= k rows); the kernel runs in chunks, ``progress`` called between them."""
    first = int(rng.integers(data.n))
    return kmember_clusters(data.xn, data.xc, data.inv_range, data.cat_den, data.cat_offsets, k, first, progress)


class KMemberEngine(Engine[BandsParams]):
    name = "kmember"
    summary = "greedy k-member clustering (homogeneous clusters, range / set labels, no hierarchies)"
    paper = "Byun et al. 2007, Efficient k-anonymization using clustering techniques"
    Params = BandsParams
    models = ("k",)
    linking_exposed = True  # measured by bench/linking_attack.py (docs/privacy.md)

    def anonymize(self, batch: EncodedBatch, params: BandsParams, rng: np.random.Generator,
                  progress: Progress = no_progress) -> Release:
        started = time.perf_counter()
        check_k_only(self, batch, params)
        if params.bands == "free" or not params.nesting_fallback:
            release = self._run(batch, params, frozenset(), rng, started, progress)
        else:
            release = nested_with_fallback(self.name, batch, params, rng,
                                           lambda p, free, r, prog: self._run(batch, p, free, r, started, prog),
                                           started, progress)
        progress(1.0, "clustered")
        return release

    def _run(self, batch: EncodedBatch, params: BandsParams, free_qis: frozenset[str], rng: np.random.Generator,
             started: float, progress: Progress = no_progress) -> Release:
        """One clustering and its release; with nested bands the QIs of ``free_qis`` are released free."""
        data = hetero_data(batch, sets=params.bands == "free")
        cls = kmember_cls(nested_data(batch, free_qis) if params.bands == "nested" else data, params.k, rng,
                          lambda done, msg: progress(min(done, 0.99), f"clustering: {msg}"))
        elapsed = time.perf_counter() - started
        matches = regular_from_clusters(cls, params.k, rng)
        return homogeneous_release(self.name, batch, data, cls, matches, params, started,
                                   {"cluster_time_s": round(elapsed, 4)}, free_qis)
