import numpy as np
import pytest

from core.metrics import (
    average_class_size,
    classification_metric,
    discernibility,
    gcp,
    loss_metric,
    precision_loss,
    sensitive_frequency,
    severity_penalty,
    sil,
)


def test_precision_matches_kgen_paper_example() -> None:
    # KGEN paper: node [1,0,0] with heights 3,4,1 -> (1/3 + 0 + 0) / 3 = 0.11; [0,0,1] -> 0.33
    assert precision_loss([1, 0, 0], [3, 4, 1]) == pytest.approx(0.111, abs=1e-3)
    assert precision_loss([0, 0, 1], [3, 4, 1]) == pytest.approx(0.333, abs=1e-3)


def test_loss_metric_weights_and_suppression() -> None:
    cost = np.array([[0.0, 1.0], [0.5, 0.5]])
    assert loss_metric(cost) == pytest.approx(0.5)
    assert loss_metric(cost, np.array([3.0, 1.0])) == pytest.approx((0.25 + 0.5) / 2)
    assert loss_metric(cost, suppressed=2) == pytest.approx((1.0 + 2) / 4)


def test_gcp_and_discernibility_and_cavg() -> None:
    ncp = np.array([[0.2, 0.4], [0.0, 0.0]])
    assert gcp(ncp) == pytest.approx(0.6 / 4)
    assert discernibility(np.array([3, 2]), suppressed=1, n=6) == 9 + 4 + 6
    assert average_class_size(np.array([5, 5]), k=5) == 1.0


def test_sil_reads_categorical_distance_as_mismatch() -> None:
    num_o, num_a = np.array([[30.0], [50.0]]), np.array([[40.0], [40.0]])
    cat_o, cat_a = np.array([["a"], ["b"]]), np.array([["a"], ["a"]])
    value = sil(num_o, num_a, cat_o, cat_a, np.array([10.0]), np.array([1.0]))
    assert value == pytest.approx((1 + 1 + 0 + 1) / (2 * 2))


def test_classification_metric_and_severity_penalty() -> None:
    cls = np.array([0, 0, 0, 1, 1])
    assert classification_metric(cls, np.array(["y", "y", "n", "n", "n"]), suppressed=1) == pytest.approx(2 / 6)
    assert severity_penalty(cls, np.array([3, 3, 3, 25, 5])) == pytest.approx(3 + 15)


def test_sensitive_frequency_per_class() -> None:
    out = sensitive_frequency(np.array([0, 0, 1, 1]), np.array(["Theft", "Murder", "Theft", "Theft"]))
    theft = out.set_index("value").loc["Theft"]
    assert theft["mean"] == pytest.approx(0.75) and theft["classes"] == 2
