"""Reproducible releases: the anytime engines spend a deterministic work budget, so the same window,
parameters and seed give the same release whether or not the machine is busy; a wall-clock safety
cap that binds is flagged (``budget_cap_hit``)."""

from __future__ import annotations

import hashlib
import json
import subprocess
from collections.abc import Iterator

import numpy as np
import pandas as pd
import pytest

from core.encoding import EncodedBatch, encode
from core.engines.base import Release, reproducible_diagnostics
from core.engines.hetero.ils import ILSParams
from core.engines.registry import get_engine, make_params
from core.generators import generate_crime_reports
from core.verify import verify_release
from stream.io.specs import load_schema
from stream.testing.load import busy_core as spinning_core

pytestmark = pytest.mark.ils_kernels  # ILS among the engines (tests/conftest.py's order)

# Work budgets only: time_limit = 0 turns the wall-clock safety cap off (pbg-ea has none), so the default
# budgets (sweeps, passes and iterations, generations) are all that stops a run.
ENGINES = {"cg-kanon": {"k": 5, "time_limit": 0}, "cg-diverse": {"k": 5, "l": 3, "time_limit": 0},
           "ils": {"k": 5, "time_limit": 0}, "pbg-ea": {"k": 5}}


@pytest.fixture(scope="module")
def window() -> tuple[pd.DataFrame, EncodedBatch]:
    frame = generate_crime_reports(np.random.default_rng(5), per_day=2000)
    return frame, encode(frame, load_schema("crime"))


def checksum(rel: Release) -> str:
    """Everything a release carries except wall-clock measurements."""
    body = json.dumps({"params": rel.params, "metrics": rel.metrics, "privacy": rel.privacy,
                       "diagnostics": reproducible_diagnostics(rel.diagnostics)}, sort_keys=True, default=str)
    return hashlib.sha256((rel.digest() + body).encode()).hexdigest()


@pytest.fixture
def busy_core() -> Iterator[subprocess.Popen[bytes]]:
    """A process spinning on a core for the duration of the test (:func:`stream.testing.load.busy_core`)."""
    with spinning_core() as spinner:
        yield spinner


def anonymize(name: str, batch: EncodedBatch) -> Release:
    eng = get_engine(name)
    return eng.anonymize(batch, make_params(eng, ENGINES[name]), np.random.default_rng(7))


@pytest.fixture(scope="module")
def quiet_runs(window: tuple[pd.DataFrame, EncodedBatch]) -> dict[str, Release]:
    return {name: anonymize(name, window[1]) for name in ENGINES}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(ENGINES))
def test_same_window_same_release_with_the_other_core_busy(name: str, window: tuple[pd.DataFrame, EncodedBatch],
                                                           quiet_runs: dict[str, Release],
                                                           busy_core: subprocess.Popen[bytes]) -> None:
    frame, batch = window
    quiet = quiet_runs[name]
    assert busy_core.poll() is None  # the spinner is running while we anonymize again
    loaded = anonymize(name, batch)
    assert busy_core.poll() is None
    assert quiet.diagnostics["budget_cap_hit"] is False and loaded.diagnostics["budget_cap_hit"] is False
    assert loaded.rows.to_csv() == quiet.rows.to_csv()  # byte-identical records
    assert np.array_equal(loaded.class_ids, quiet.class_ids)
    assert checksum(loaded) == checksum(quiet)
    assert verify_release(frame, loaded, load_schema("crime")).ok


@pytest.mark.parametrize("name", list(ENGINES))
def test_the_work_budget_is_recorded(name: str, quiet_runs: dict[str, Release]) -> None:
    rel = quiet_runs[name]
    assert rel.diagnostics["budget_cap_hit"] is False
    budget = rel.diagnostics["work_budget"]
    assert budget and all(v is None or v > 0 for v in budget.values())
    if name.startswith("cg-"):
        assert budget == {"max_sweeps": rel.params["max_iterations"]}
        assert rel.diagnostics["sweeps"] <= rel.params["max_iterations"]
        assert rel.diagnostics["stop"] in {"converged", "max_iterations"}
    if name == "ils":
        assert rel.diagnostics["iterations"] <= rel.params["max_iterations"]
        assert rel.diagnostics["assign_passes"] <= rel.params["passes"]


def test_a_binding_cap_is_flagged_and_still_valid(window: tuple[pd.DataFrame, EncodedBatch]) -> None:
    frame, batch = window
    schema = load_schema("crime")
    for name, extra in (("cg-diverse", {"max_iterations": 1000}), ("ils", {"max_iterations": 10_000})):
        eng = get_engine(name)
        rel = eng.anonymize(batch, make_params(eng, {**ENGINES[name], "time_limit": 1e-6, **extra}),
                            np.random.default_rng(7))
        assert rel.diagnostics["budget_cap_hit"] is True, name
        assert verify_release(frame, rel, schema).ok


def test_ils_without_an_iteration_budget_runs_to_the_cap_and_says_so(window: tuple[pd.DataFrame, EncodedBatch]) -> None:
    frame, _ = window
    eng = get_engine("ils")
    small = encode(frame.head(300), load_schema("crime"))
    params = ILSParams(k=5, max_iterations=None, time_limit=0.2, passes=2)  # anytime mode, explicitly
    rel = eng.anonymize(small, params, np.random.default_rng(1))
    assert rel.diagnostics["budget_cap_hit"] is True
