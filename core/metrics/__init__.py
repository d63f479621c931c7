"""Utility and risk metrics; each is one documented function with its formula and source."""

from core.metrics.loss import (
    average_class_size,
    classification_metric,
    discernibility,
    gcp,
    loss_metric,
    ncp_categorical,
    ncp_numeric,
    per_attribute_loss,
    precision_loss,
    sil,
    suppression_rate,
)
from core.metrics.risk import sensitive_frequency, severity_penalty
from core.metrics.summary import summarize

__all__ = ["average_class_size", "classification_metric", "discernibility", "gcp", "loss_metric",
           "ncp_categorical", "ncp_numeric", "per_attribute_loss", "precision_loss", "sensitive_frequency",
           "severity_penalty", "sil", "summarize", "suppression_rate"]
