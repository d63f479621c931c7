"""The standard metric set attached to every release."""

from __future__ import annotations

import numpy as np

from core.metrics.loss import (
    average_class_size,
    discernibility,
    gcp,
    loss_metric,
    per_attribute_loss,
    suppression_rate,
)
from core.metrics.risk import severity_penalty
from core.privacy.check import rank_ids


def summarize(cost: np.ndarray, weights: np.ndarray, class_ids: np.ndarray, suppressed: int, k: int,
              qi_names: list[str], severity: np.ndarray | None = None) -> dict[str, object]:
    """Metrics of a release from its per-row, per-QI cost matrix and its class ids."""
    n = cost.shape[0] + suppressed
    cls = rank_ids(class_ids) if len(class_ids) else np.zeros(0, int)
    sizes = np.bincount(cls) if len(cls) else np.zeros(0, int)
    out: dict[str, object] = {
        "loss_metric": loss_metric(cost, weights, suppressed),
        "gcp": gcp(cost, suppressed),
        "discernibility": discernibility(sizes, suppressed, n),
        "average_class_size": average_class_size(sizes, k),
        "suppression_rate": suppression_rate(suppressed, n),
        "classes": len(sizes),
        "per_attribute_loss": dict(zip(qi_names, per_attribute_loss(cost, suppressed).round(6).tolist(),
                                       strict=True)),
    }
    if severity is not None:
        out["severity_penalty"] = severity_penalty(class_ids, severity)
    return out
