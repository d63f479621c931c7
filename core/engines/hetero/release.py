"""Labels and releases of the hierarchy-free engines.

Label conventions (parsed back by :mod:`core.verify.kregular`):

* numeric QI: ``[lo, hi]`` (closed range, :func:`core.hierarchies.intervals.range_label`) or the
  single value when lo == hi; integers without a decimal point, other floats in a form that reads back exactly;
* date QI: ``[YYYY-MM-DD, YYYY-MM-DD]`` (closed) or the single day;
* categorical / masked QI: ``{a,b,c}`` (the sorted set of values) or the single value.

These are the ``bands = "free"`` labels. With ``bands = "nested"`` (the default) every QI of a
cluster (or of a row's matches) is labelled with the lowest node of its hierarchy covering the
values (:mod:`core.hierarchies.nodes`), and its loss is the node's cost, except the QIs the per-QI
fallback releases free (:mod:`core.engines.hetero.fallback`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from core.encoding import EncodedBatch
from core.engines.base import EngineParams, Release
from core.engines.hetero.data import HeteroData
from core.engines.hetero.objective import (
    cluster_ncp_matrix,
    clustering_sil,
    matching_sil,
    ncp_matrix,
)
from core.hierarchies.intervals import interval_label, range_label
from core.hierarchies.nodes import nested_group_labels, node_costs, node_labels, row_nodes
from core.metrics import gcp, loss_metric, per_attribute_loss, summarize
from core.privacy import achieved


def ordered_labels(lo: np.ndarray, hi: np.ndarray, kind: str) -> np.ndarray:
    if kind == "date":
        a = pd.to_datetime(lo, unit="D", utc=True).strftime("%Y-%m-%d").to_numpy()
        b = pd.to_datetime(hi, unit="D", utc=True).strftime("%Y-%m-%d").to_numpy()
        return np.array([interval_label(x, y) for x, y in zip(a, b, strict=True)], dtype=object)
    return np.array([range_label(x, y) for x, y in zip(lo.tolist(), hi.tolist(), strict=True)], dtype=object)


def set_label(values: list[str]) -> str:
    return values[0] if len(values) == 1 else "{" + ",".join(values) + "}"


def matching_labels(data: HeteroData, matches: np.ndarray) -> dict[str, np.ndarray]:
    """QI labels of each anonymized row: the range / set of its matches."""
    out: dict[str, np.ndarray] = {}
    for j, (name, kind) in enumerate(zip(data.num_names, data.num_kinds, strict=True)):
        vals = data.xn[matches, j]
        out[name] = ordered_labels(vals.min(axis=1), vals.max(axis=1), kind)
    for j, name in enumerate(data.cat_names):
        codes = np.sort(data.xc[matches, j], axis=1)
        cache: dict[tuple[int, ...], str] = {}
        labels = []
        strings = data.cat_values[j]
        for row in codes.tolist():
            key = tuple(sorted(set(row)))
            if key not in cache:
                cache[key] = set_label([str(strings[c]) for c in key])
            labels.append(cache[key])
        out[name] = np.array(labels, dtype=object)
    return out


def cluster_labels(data: HeteroData, cls: np.ndarray) -> dict[str, np.ndarray]:
    """QI labels of a homogeneous clustering: every row gets its cluster's range / set."""
    out: dict[str, np.ndarray] = {}
    for j, (name, kind) in enumerate(zip(data.num_names, data.num_kinds, strict=True)):
        grp = pd.Series(data.xn[:, j]).groupby(cls)
        out[name] = ordered_labels(grp.transform("min").to_numpy(), grp.transform("max").to_numpy(), kind)
    for j, name in enumerate(data.cat_names):
        pairs = pd.DataFrame({"c": cls, "v": data.xc[:, j]}).drop_duplicates().sort_values(["c", "v"])
        strings = data.cat_values[j]
        per = pairs.groupby("c")["v"].agg(lambda s, vals=strings: set_label([str(vals[c]) for c in s]))
        out[name] = per.reindex(cls).to_numpy(dtype=object)
    return out


def nested_cluster(batch: EncodedBatch, cls: np.ndarray) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Nested labels of a clustering and its (n, d) cost matrix, QIs in schema order."""
    dense = np.unique(cls, return_inverse=True)[1].reshape(-1)
    labels, cost = {}, np.zeros((batch.n, batch.d))
    for a, q in enumerate(batch.qis):
        labels[q.name], cost[:, a] = nested_group_labels(q, dense)
    return labels, cost


def nested_matching(batch: EncodedBatch, matches: np.ndarray) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Nested labels of a matching (each row: the lowest node over its matches) and the cost matrix."""
    labels, cost = {}, np.zeros((batch.n, batch.d))
    for a, q in enumerate(batch.qis):
        level, code = row_nodes(q, matches)
        labels[q.name], cost[:, a] = node_labels(q, level, code), node_costs(q, level, code)
    return labels, cost


def _nested(params: EngineParams) -> bool:
    return getattr(params, "bands", "free") == "nested"


def _schema_order(batch: EncodedBatch, data: HeteroData, cost: np.ndarray) -> np.ndarray:
    idx = [data.qi_order.index(name) for name in batch.schema.qi_names]
    return cost[:, idx]


def _with_free(batch: EncodedBatch, nested: tuple[dict[str, np.ndarray], np.ndarray],
               free: Callable[[], tuple[dict[str, np.ndarray], np.ndarray]],
               free_qis: frozenset[str]) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Nested labels and costs, with the QIs of ``free_qis`` (the per-QI fallback) taken from ``free``."""
    labels, cost = nested
    if free_qis:
        free_labels, free_cost = free()
        for a, name in enumerate(batch.schema.qi_names):
            if name in free_qis:
                labels[name], cost[:, a] = free_labels[name], free_cost[:, a]
    return labels, cost


def _rows(batch: EncodedBatch, labels: dict[str, np.ndarray]) -> pd.DataFrame:
    rows = batch.frame.copy()
    for name, lab in labels.items():
        rows[name] = lab
    return rows


def homogeneous_release(engine: str, batch: EncodedBatch, data: HeteroData, cls: np.ndarray, matches: np.ndarray,
                        params: EngineParams, started: float, diagnostics: dict[str, Any],
                        free_qis: frozenset[str] = frozenset()) -> Release:
    """Release of a clustering; ``matches`` is a k-regular subgraph of it (for the verifier). With nested
    bands, the QIs of ``free_qis`` are labelled with free ranges / sets."""
    def free() -> tuple[dict[str, np.ndarray], np.ndarray]:
        return cluster_labels(data, cls), _schema_order(batch, data, cluster_ncp_matrix(data, cls))

    labels, cost = _with_free(batch, nested_cluster(batch, cls), free, free_qis) if _nested(params) else free()
    sens = batch.sensitive_codes
    metrics = summarize(cost, batch.weights, cls, 0, params.k, batch.schema.qi_names,
                        None if batch.severity is None or sens is None else batch.severity[sens])
    metrics["sil"] = clustering_sil(data, cls)
    privacy: dict[str, Any] = {"model": "k-anonymity (homogeneous clusters)",
                               **achieved(cls, sens, c=params.c, t_distance=params.t_distance).as_dict()}
    diag = {"matching": np.sort(matches, axis=1), "clusters": len(np.unique(cls)), **diagnostics}
    return Release(engine=engine, params=params.model_dump(), requirement=params.requirement(),
                   rows=_rows(batch, labels), class_ids=np.asarray(cls, dtype=np.int64),
                   suppressed=batch.frame.index[:0].to_numpy(), metrics=metrics, privacy=privacy, diagnostics=diag,
                   runtime_s=time.perf_counter() - started, verification_mode="k-regular")


def heterogeneous_release(engine: str, batch: EncodedBatch, data: HeteroData, matches: np.ndarray,
                          params: EngineParams, started: float, diagnostics: dict[str, Any],
                          free_qis: frozenset[str] = frozenset()) -> Release:
    """Release of a k-regular matching: row i generalizes exactly the original rows ``matches[i]``. With
    nested bands, the QIs of ``free_qis`` are labelled with free ranges / sets."""
    def free() -> tuple[dict[str, np.ndarray], np.ndarray]:
        return matching_labels(data, matches), _schema_order(batch, data, ncp_matrix(data, matches))

    labels, cost = _with_free(batch, nested_matching(batch, matches), free, free_qis) if _nested(params) else free()
    metrics = {
        "gcp": gcp(cost), "sil": matching_sil(data, matches),
        "loss_metric": loss_metric(cost, batch.weights),
        "per_attribute_loss": dict(zip(batch.schema.qi_names, per_attribute_loss(cost).round(6).tolist(),
                                       strict=True)),
        "suppression_rate": 0.0,
    }
    k = matches.shape[1]
    privacy = {"model": "k-regular heterogeneous generalization", "k": int(k), "rows": len(matches)}
    diag = {"matching": np.sort(matches, axis=1), **diagnostics}
    return Release(engine=engine, params=params.model_dump(), requirement=params.requirement(),
                   rows=_rows(batch, labels), class_ids=np.arange(len(matches)),
                   suppressed=batch.frame.index[:0].to_numpy(), metrics=metrics, privacy=privacy, diagnostics=diag,
                   runtime_s=time.perf_counter() - started, verification_mode="k-regular")
