"""``lgreedy``: sorting-based greedy clustering without hierarchies.

PAPER: Liang and Samavi, "Optimization-based k-anonymity algorithms", Computers & Security 93
(2020), the l-greedy heuristic (the second baseline of the ILS paper, §2 and §6).

GUARANTEE: as ``kmember``: clusters of at least k rows with identical labels (hierarchy nodes by
default, range / set labels with ``bands = "free"``; homogeneous k-anonymity), no suppression, k only.

Algorithm. The ILS paper describes l-greedy as "sorting the dataset to incrementally create
clusters with the best k elements", with a sort that favours GCP. Our reading:

* sort the rows lexicographically by their QIs, taking the QIs in increasing number of distinct
  values (a nominal QI with few values costs the most NCP per extra value, so it varies least
  inside a run of the sorted order); numeric QIs sort by value, nominal ones by value string;
* seed each cluster with the first unassigned row in that order and add k - 1 times the
  unassigned row with the least NCP(cluster + row), scanning the next ``window`` unassigned rows
  in order (``window = 0``: all of them, the O(n^2) variant the ILS paper analyses); ties go to
  the earliest row in the order;
* fewer than k rows left: each joins the cluster whose total loss |c| * NCP(c) grows least.

Verification: "k-regular" mode with a §5.5 k-regular subgraph, exactly as ``kmember``.
"""

from __future__ import annotations

import time

import numpy as np
from pydantic import Field

from core.encoding import EncodedBatch
from core.engines.base import BandsParams, Engine, Progress, Release, no_progress
from core.engines.hetero.common import check_k_only
from core.engines.hetero.data import HeteroData, hetero_data, nested_data
from core.engines.hetero.fallback import nested_with_fallback
from core.engines.hetero.graph import regular_from_clusters
from core.engines.hetero.greedy import lgreedy_clusters
from core.engines.hetero.release import homogeneous_release


class LGreedyParams(BandsParams):
    window: int = Field(default=0, ge=0, description="unassigned rows scanned per choice (0 = all)")


def sort_order(data: HeteroData) -> np.ndarray:
    """Lexicographic order over the QIs taken in increasing number of distinct values."""
    keys = [data.xn[:, j] for j in range(data.dn)] + [data.xc[:, j] for j in range(data.dc)]
    distinct = [len(np.unique(k)) for k in keys]
    ranked = [keys[i] for i in np.argsort(distinct, kind="stable")]
    return np.lexsort(ranked[::-1]) if ranked else np.arange(data.n)


def lgreedy_cls(data: HeteroData, k: int, window: int = 0, progress: Progress = no_progress) -> np.ndarray:
    """Cluster id per row (clusters of >= k rows); the kernel runs in chunks, ``progress`` called between them."""
    return lgreedy_clusters(data.xn, data.xc, data.inv_range, data.cat_den, data.cat_offsets, k,
                            sort_order(data).astype(np.int64), window, progress)


class LGreedyEngine(Engine[LGreedyParams]):
    name = "lgreedy"
    summary = "sorting-based greedy clustering (homogeneous clusters, range / set labels, no hierarchies)"
    paper = "Liang & Samavi 2020, Optimization-based k-anonymity algorithms (l-greedy)"
    Params = LGreedyParams
    models = ("k",)
    linking_exposed = True  # measured by bench/linking_attack.py (docs/privacy.md)

    def anonymize(self, batch: EncodedBatch, params: LGreedyParams, rng: np.random.Generator,
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

    def _run(self, batch: EncodedBatch, params: LGreedyParams, free_qis: frozenset[str], rng: np.random.Generator,
             started: float, progress: Progress = no_progress) -> Release:
        """One clustering and its release; with nested bands the QIs of ``free_qis`` are released free."""
        data = hetero_data(batch, sets=params.bands == "free")
        cls = lgreedy_cls(nested_data(batch, free_qis) if params.bands == "nested" else data, params.k,
                          params.window, lambda done, msg: progress(min(done, 0.99), f"clustering: {msg}"))
        elapsed = time.perf_counter() - started
        matches = regular_from_clusters(cls, params.k, rng)
        return homogeneous_release(self.name, batch, data, cls, matches, params, started,
                                   {"cluster_time_s": round(elapsed, 4)}, free_qis)
