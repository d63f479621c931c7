"""The intersection-attack harness (stream/testing/linking.py, also run by bench/linking_attack.py) on a
generated pair of overlapping days (8 % of day 1 again under another station with new ids), for every
engine: through the stream with default settings and through batch runs with --ledger, nobody is
disclosed or narrowed below k."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import pandas as pd
import pytest

from core.attacks import intersection_attack
from core.attacks.linking import AttackResult
from core.engines.registry import engine_names
from stream.testing.linking import KEY, SCHEMA, overlapping_days, run_batch, run_stream

pytestmark = pytest.mark.ils_kernels  # every engine, ILS and k-member included (tests/conftest.py's order)
K = 5
PARAMS = {"ils": {"time_limit": 0, "max_iterations": 200}}  # a work budget instead of 10 s of wall time


@pytest.fixture(scope="module")
def days() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    return overlapping_days(per_day=150, overlap=0.08, seed=3)


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANONSTREAM_FINGERPRINT_KEY", KEY)


def _attack(rels: Sequence[pd.DataFrame], member: Sequence[Sequence[int]] | None,
            shared: pd.DataFrame) -> AttackResult:
    res = intersection_attack(rels, shared, SCHEMA, K, membership=member)
    assert res.inconsistent == 0 and res.persons == len(shared)
    return res


@pytest.mark.slow
@pytest.mark.parametrize("engine", engine_names())
def test_guarded_paths_leave_nothing_to_intersect(engine: str, days: tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame],
                                                  tmp_path: Path) -> None:
    day1, day2, shared = days
    (tmp_path / "s").mkdir()
    (tmp_path / "b").mkdir()
    params = PARAMS.get(engine)
    for rels, member in (run_stream(tmp_path / "s", engine, K, (day1, day2), shared, "content", params),
                         run_batch(tmp_path / "b", engine, K, (day1, day2), shared, ledger=True, params=params)):
        res = _attack(rels, member, shared)
        assert (res.disclosed, res.narrowed, res.linked) == (0, 0, 0), res.as_dict()
        assert all(len(m) == 1 for m in member if m)  # every shared report released once at most
        assert sum(1 for m in member if m) >= 0.9 * len(shared)  # and (nearly) all released once


def test_unguarded_batch_runs_are_attackable(days: tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame],
                                             tmp_path: Path) -> None:
    """The harness bites: two kmember runs without a ledger link every shared report."""
    day1, day2, shared = days
    assert "ANONSTREAM_FINGERPRINT_KEY" in os.environ
    res = _attack(*run_batch(tmp_path, "kmember", K, (day1, day2), shared, ledger=False), shared)
    assert res.linked == len(shared) and res.narrowed > 0
