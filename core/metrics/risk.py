"""Severity and sensitive-value metrics of the CG paper."""

from __future__ import annotations

import numpy as np
import pandas as pd


def severity_penalty(class_ids: np.ndarray, severity: np.ndarray) -> float:
    """Total severity penalty SP_tot = sum_d S_d / |e_d| (CG paper eq. 5-6).

    Every released tuple ``d`` with severity ``S_d`` in class ``e_d`` adds S_d / |e_d|.
    """
    if len(class_ids) == 0:
        return 0.0
    from core.privacy.check import rank_ids

    cls = rank_ids(class_ids)
    sizes = np.bincount(cls)
    return float((np.asarray(severity, float) / sizes[cls]).sum())


def sensitive_frequency(class_ids: np.ndarray, sensitive: np.ndarray) -> pd.DataFrame:
    """Each sensitive value's frequency inside the classes that contain it (CG paper Figs. 4-5).

    For value ``v`` and every class ``e`` holding ``v``: count(v in e) / |e|. Returns one row per
    value with the mean, standard deviation, min, max and the number of classes holding it.
    """
    df = pd.DataFrame({"cls": class_ids, "v": sensitive})
    if df.empty:
        return pd.DataFrame(columns=["value", "mean", "std", "min", "max", "classes"])
    sizes = df.groupby("cls").size()
    counts = df.groupby(["v", "cls"]).size().rename("count").reset_index()
    counts["freq"] = counts["count"] / counts["cls"].map(sizes)
    out = counts.groupby("v")["freq"].agg(["mean", "std", "min", "max", "count"]).reset_index()
    out = out.rename(columns={"v": "value", "count": "classes"})
    out["std"] = out["std"].fillna(0.0)
    return out
