"""Turn a CG search state into a :class:`~core.engines.base.Release` with labels, metrics and diagnostics."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pandas as pd

from core.encoding import EncodedBatch
from core.engines.base import Release
from core.engines.cg.problem import RANGE, Problem
from core.engines.cg.state import State
from core.hierarchies import TOP
from core.hierarchies.intervals import range_label
from core.metrics import sensitive_frequency, summarize
from core.privacy import PrivacyRequirement, achieved


def range_text(lo: float, hi: float) -> str:
    """Closed range label ``[lo, hi]`` (a single value when lo == hi) that parses back exactly."""
    return range_label(lo, hi)


def class_labels(batch: EncodedBatch, p: Problem, st: State) -> tuple[list[np.ndarray], np.ndarray]:
    """Per QI, the label of every class (index C = top class ``*``), and the (C + 1, d) cost matrix."""
    C = st.C
    labels: list[np.ndarray] = []
    cost = np.ones((C + 1, p.d))
    for a, q in enumerate(batch.qis):
        lab = np.full(C + 1, TOP, dtype=object)
        if C:
            if p.kind[a] == RANGE:
                lo, hi = st.cmn[:, a], st.cmx[:, a]
                lab[:C] = [range_text(x, y) for x, y in zip(lo, hi, strict=True)]
                cost[:C, a] = np.minimum((hi - lo) / p.span[a], 1.0)
            else:
                lv = st.clv[:, a]
                code = p.g[a, lv, st.cref]
                lab[:C] = [q.labels[int(lev)][int(cd)] for lev, cd in zip(lv, code, strict=True)]
                cost[:C, a] = p.cost_flat[p.cost_off[a, lv] + code]
        labels.append(lab)
    return labels, cost


def label_classes(labels: list[np.ndarray]) -> np.ndarray:
    """Released class id of every engine class: engine classes with identical labels are one class."""
    codes = np.stack([pd.factorize(pd.Series(lab))[0] for lab in labels], axis=1)
    _, inverse = np.unique(codes, axis=0, return_inverse=True)
    return inverse.reshape(-1).astype(np.int64)


def frequency_stats(class_ids: np.ndarray, offences: np.ndarray) -> dict[str, dict[str, float]]:
    table = sensitive_frequency(class_ids, offences)
    return {str(r.value): {"mean": round(float(r.mean), 6), "std": round(float(r.std), 6),
                           "min": round(float(r.min), 6), "max": round(float(r.max), 6),
                           "classes": int(r.classes)}
            for r in table.itertuples(index=False)}


def build_release(engine: str, batch: EncodedBatch, p: Problem, st: State, params: Any, requirement:
                  PrivacyRequirement, weights: np.ndarray, started: float,
                  diagnostics: dict[str, Any]) -> Release:
    labels, cost = class_labels(batch, p, st)
    rel_cls = label_classes(labels)
    cls = st.cls
    keep = cls >= 0
    rows = batch.frame.copy()
    for a, name in enumerate(batch.schema.qi_names):
        rows[name] = labels[a][np.where(keep, cls, st.C)]
    rows = rows[keep]
    class_ids = rel_cls[cls[keep]]
    n_supp = int((~keep).sum())
    sev_rows = p.sev[keep]
    sens = p.sens[keep]
    row_cost = cost[cls[keep]]
    metrics = summarize(row_cost, weights, class_ids, n_supp, st.s.kmin, batch.schema.qi_names, sev_rows)
    offence_names = np.asarray(batch.sensitive_labels, dtype=object)[sens]
    freq = frequency_stats(class_ids, offence_names)
    sizes = np.bincount(class_ids)[class_ids] if len(class_ids) else np.zeros(0, int)
    by_offence = (pd.DataFrame({"o": offence_names, "size": sizes}).groupby("o")["size"].mean()
                  if len(sizes) else pd.Series(dtype=float))
    means = [v["mean"] for v in freq.values()]
    lm, pr = float(st.tot[0]), st.s.privacy(float(st.tot[1]))
    objective = st.objective()
    metrics.update({
        "objective": objective,
        "fitness": 1.0 / objective if objective > 0 else float("inf"),
        "privacy_term": pr,
        "sensitive_frequency": freq,
        "sensitive_frequency_mean_min": min(means) if means else 0.0,
        "sensitive_frequency_mean_max": max(means) if means else 0.0,
        "class_size_by_offence": {str(k): round(float(v), 4) for k, v in by_offence.items()},
        "severity_class_size_corr": (float(np.corrcoef(sev_rows, sizes)[0, 1])
                                     if len(sizes) > 1 and sev_rows.std() > 0 and sizes.std() > 0 else 0.0),
        "max_class_size": int(sizes.max()) if len(sizes) else 0,
    })
    level = achieved(class_ids, sens)
    return Release(
        engine=engine, params=params.model_dump(), requirement=requirement, rows=rows, class_ids=class_ids,
        suppressed=batch.frame.index.to_numpy()[~keep], metrics=metrics, privacy=level.as_dict(),
        diagnostics={**diagnostics, "loss_normalized": lm}, runtime_s=time.perf_counter() - started,
    )
