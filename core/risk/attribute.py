"""Attribute disclosure: what placing a person in a class reveals about their sensitive value."""

from __future__ import annotations

import numpy as np
import pandas as pd


def attribute_disclosure(cls: np.ndarray, sizes: np.ndarray, sensitive: pd.Series | np.ndarray,
                         severity: np.ndarray | None = None, severe_at: float | None = None) -> dict[str, object]:
    """Homogeneous classes, the largest share of one sensitive value in a class, delta-disclosure
    and, for severity-weighted data, severe records in homogeneous or small classes.

    ``cls`` / ``sizes`` come from :func:`core.risk.classes.class_index`. A class is *homogeneous*
    when all its records share one sensitive value (an attacker who places a person in it learns the
    value). ``max_sensitive_share`` = max over classes and values of count(v, c) / |c|.
    ``delta_disclosure`` (Brickell and Shmatikov 2008) = max |ln(p(v | c) / p(v))| over the values
    present in each class (a value absent from a class makes the full definition infinite).
    ``severity`` holds each record's severity: a record is *severe* when severity >= ``severe_at``
    (default: the median of the distinct severities present), and *in a small class* when its class
    has fewer rows than its severity (CG: an offence's severity is the class size it calls for).
    """
    n = len(cls)
    if n == 0:
        return {"homogeneous_classes": 0, "homogeneous_records": 0, "max_sensitive_share": 0.0,
                "delta_disclosure": 0.0}
    codes, _ = pd.factorize(pd.Series(np.asarray(sensitive, dtype=object)), use_na_sentinel=False)
    nv = int(codes.max()) + 1
    pairs, pair_counts = np.unique(cls * nv + codes, return_counts=True)
    pair_cls, pair_val = pairs // nv, pairs % nv
    distinct = np.bincount(pair_cls, minlength=len(sizes))
    top = np.zeros(len(sizes), dtype=np.int64)
    np.maximum.at(top, pair_cls, pair_counts)
    homogeneous = distinct == 1
    overall = np.bincount(codes, minlength=nv) / n
    ratio = (pair_counts / sizes[pair_cls]) / overall[pair_val]
    out: dict[str, object] = {
        "homogeneous_classes": int(homogeneous.sum()),
        "homogeneous_records": int(sizes[homogeneous].sum()),
        "max_sensitive_share": float((top / sizes).max()),
        "delta_disclosure": float(np.abs(np.log(ratio)).max()),
    }
    if severity is not None:
        sev = np.asarray(severity, dtype=np.float64)
        if severe_at is None:
            severe_at = float(np.median(np.unique(sev)))
        severe = sev >= severe_at
        out.update({
            "severe_at": float(severe_at),
            "severe_records": int(severe.sum()),
            "severe_in_homogeneous": int((severe & homogeneous[cls]).sum()),
            "severe_in_small": int((severe & (sizes[cls] < sev)).sum()),
        })
    return out
