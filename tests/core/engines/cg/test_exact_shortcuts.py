"""The CG search's shortcuts give the plain computation's results to the last bit: the segmentation
table reused across lambdas (:class:`core.engines.cg.state.Segmenter`) against the segmentation run
afresh (:func:`core.engines.cg.state.dp_assignment`)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from core.encoding import EncodedBatch, encode
from core.engines.cg.params import CGParams, cap_of, effective_weights, k_min_of, severities
from core.engines.cg.problem import Problem, build_problem, kd_order
from core.engines.cg.runner import make_setup
from core.engines.cg.state import DIVERSE, KANON, Segmenter, Setup, dp_assignment
from core.engines.registry import get_engine, make_params
from core.generators import generate_crime_reports
from stream.io.specs import load_schema


def problem_of(seed: int, rows: int, mode: int, nested: bool, **values: Any) -> tuple[EncodedBatch, Problem, Setup]:
    df = generate_crime_reports(np.random.default_rng(seed), per_day=rows)
    batch = encode(df, load_schema("crime"))
    name = "cg-diverse" if mode == DIVERSE else "cg-kanon"
    params = make_params(get_engine(name), {"bands": "nested" if nested else "free", **values})
    assert isinstance(params, CGParams)
    row_sev = severities(batch, name)
    kmin, _ = k_min_of(params.k, row_sev)
    p = build_problem(batch, effective_weights(batch, None), row_sev, nested=nested)
    s, _ = make_setup(mode, batch.n, row_sev, np.asarray(batch.sensitive_codes, np.int64), p.m, kmin,
                      cap_of(kmin, params.cap_factor), params)
    return batch, p, s


@pytest.mark.parametrize(("mode", "nested", "values"), [
    (DIVERSE, True, {"l": 2}), (DIVERSE, False, {"l": 3, "k": 4}), (KANON, True, {}),
    (KANON, False, {"k": 7, "cap_factor": 1.5, "max_suppression": 0.3}), (DIVERSE, True, {"l": 3, "ase_rule": True}),
])
def test_segmentation_table_gives_the_fresh_segmentation(mode: int, nested: bool, values: dict[str, Any]) -> None:
    _, p, s = problem_of(5, 400, mode, nested, **values)
    assert s.pr_scale > 0
    segmentation = Segmenter(p, s)
    rng = np.random.default_rng(3)
    for order in (kd_order(p, rng), kd_order(p, rng, noise=1.0), rng.permutation(p.n)):
        for lam in (0.0, 0.5, 0.25, 0.375, 1.0, float(rng.random())):
            cls, n = segmentation(order, lam)
            ref, n_ref = dp_assignment(p, s, order, lam)
            assert n == n_ref
            assert np.array_equal(cls, ref)
