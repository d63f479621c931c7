"""From-scratch GCP and SIL of a heterogeneous matching or a homogeneous clustering.

These are the slow, obviously-correct references: the incremental structures of
:mod:`core.engines.hetero.state` are tested against them. Both objectives use the formulas of
:mod:`core.metrics.loss` (``gcp`` for eq. 3-4 and ``sil`` for eq. 5-7).

Anonymized row ``i`` is the generalization of its matches ``M[i]`` (k original rows, itself
included). For SIL its value rho'_i is the mean of its matches (numeric) and tau'_i their mode
(nominal); when several values tie for the mode, the row's own value is taken if it is one of
them (the paper does not say how ties break; this choice is the one the fast path uses).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from core.engines.hetero.data import HeteroData
from core.metrics import gcp, sil


def ncp_matrix(data: HeteroData, matches: np.ndarray) -> np.ndarray:
    """Per-row, per-QI NCP (columns: ordered QIs then nominal QIs) of a matching ``(n, k)``."""
    cols = []
    if data.dn:
        vals = data.xn[matches]  # (n, k, dn)
        cols.append((vals.max(axis=1) - vals.min(axis=1)) * data.inv_range)
    if data.dc:
        codes = np.sort(data.xc[matches], axis=1)  # (n, k, dc)
        distinct = 1 + (np.diff(codes, axis=1) != 0).sum(axis=1)
        cols.append((distinct - 1) * data.cat_den)
    return np.concatenate(cols, axis=1) if cols else np.zeros((len(matches), 0))


def _modes(own: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Mode of each row of ``codes`` (n, k), preferring ``own`` on ties."""
    counts = (codes[:, :, None] == codes[:, None, :]).sum(axis=2)  # (n, k)
    best = counts.max(axis=1)
    own_count = (codes == own[:, None]).sum(axis=1)
    other = codes[np.arange(len(codes)), counts.argmax(axis=1)]
    return np.where(own_count == best, own, other)


def matching_gcp(data: HeteroData, matches: np.ndarray) -> float:
    return gcp(ncp_matrix(data, matches))


def matching_sil(data: HeteroData, matches: np.ndarray) -> float:
    means = data.xn[matches].mean(axis=1) if data.dn else np.zeros((len(matches), 0))
    modes = np.stack([_modes(data.xc[:, j], data.xc[matches, j]) for j in range(data.dc)], axis=1) \
        if data.dc else np.zeros((len(matches), 0), dtype=np.int64)
    return sil(data.xn, means, data.xc, modes, data.num_std, data.cat_std)


def matching_objective(data: HeteroData, matches: np.ndarray, objective: str) -> float:
    return matching_sil(data, matches) if objective == "sil" else matching_gcp(data, matches)


def cluster_ncp_matrix(data: HeteroData, cls: np.ndarray) -> np.ndarray:
    """Per-row, per-QI NCP of a homogeneous clustering (``cls``: cluster id per row)."""
    cols = []
    if data.dn:
        frame = pd.DataFrame(data.xn).groupby(cls)
        cols.append(((frame.transform("max") - frame.transform("min")).to_numpy()) * data.inv_range)
    if data.dc:
        distinct = pd.DataFrame(data.xc).groupby(cls).transform("nunique").to_numpy()
        cols.append((distinct - 1) * data.cat_den)
    return np.concatenate(cols, axis=1) if cols else np.zeros((len(cls), 0))


def clustering_gcp(data: HeteroData, cls: np.ndarray) -> float:
    return gcp(cluster_ncp_matrix(data, cls))


def clustering_sil(data: HeteroData, cls: np.ndarray) -> float:
    means = pd.DataFrame(data.xn).groupby(cls).transform("mean").to_numpy() if data.dn \
        else np.zeros((len(cls), 0))
    modes = np.zeros_like(data.xc)
    for j in range(data.dc):
        frame = pd.DataFrame({"c": cls, "v": data.xc[:, j]})
        own_count = frame.groupby(["c", "v"])["v"].transform("size").to_numpy()
        frame["n"] = own_count
        best = frame.groupby("c")["n"].transform("max").to_numpy()
        top = frame.sort_values(["c", "n"], ascending=[True, False], kind="stable").drop_duplicates("c")
        other = pd.Series(top["v"].to_numpy(), index=top["c"].to_numpy()).reindex(cls).to_numpy()
        modes[:, j] = np.where(own_count == best, data.xc[:, j], other)
    return sil(data.xn, means, data.xc, modes, data.num_std, data.cat_std)


def clustering_objective(data: HeteroData, cls: np.ndarray, objective: str) -> float:
    return clustering_sil(data, cls) if objective == "sil" else clustering_gcp(data, cls)
