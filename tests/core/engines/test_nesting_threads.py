"""A CG release's free-bands run on core's second thread gives the release of one thread, bit for bit."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import numpy as np
import pytest

from core import parallel
from core.encoding import EncodedBatch, encode
from core.engines.base import Release, reproducible_diagnostics
from core.engines.cg import diverse, kanon
from core.engines.registry import get_engine, make_params
from core.generators import generate_crime_reports
from stream.io.specs import load_schema

ENGINES = {"cg-kanon": (kanon, {"k": 5, "time_limit": 0}), "cg-diverse": (diverse, {"k": 5, "l": 2, "time_limit": 0})}


@pytest.fixture(scope="module")
def batch() -> EncodedBatch:
    return encode(generate_crime_reports(np.random.default_rng(3), per_day=1500), load_schema("crime"))


@pytest.fixture
def threads_seen(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, str]]]:
    """Records (bands, thread name) of every CG run; restores core's thread setting afterwards."""
    seen: list[tuple[str, str]] = []
    for module, _ in ENGINES.values():
        inner = module.anonymize_cg

        def recorded(engine, mode, batch, params, rng, progress, inner=inner):  # type: ignore[no-untyped-def]
            seen.append((params.bands, threading.current_thread().name))
            return inner(engine, mode, batch, params, rng, progress)

        monkeypatch.setattr(module, "anonymize_cg", recorded)
    previous = parallel.threads()
    yield seen
    parallel.set_threads(previous)


def _release(name: str, batch: EncodedBatch, seed: int) -> Release:
    eng = get_engine(name)
    return eng.anonymize(batch, make_params(eng, ENGINES[name][1]), np.random.default_rng(seed))


def _content(rel: Release) -> tuple:
    return (rel.digest(), rel.suppressed.tolist(), rel.metrics, rel.privacy, reproducible_diagnostics(rel.diagnostics))


@pytest.mark.parametrize("name", list(ENGINES))
def test_the_free_run_on_a_second_thread_changes_nothing(name: str, batch: EncodedBatch,
                                                         threads_seen: list[tuple[str, str]],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "spare_core", lambda: True)
    parallel.set_threads(1)
    one = [_release(name, batch, seed) for seed in (1, 2)]
    assert {bands for bands, _ in threads_seen} == {"nested", "free"}
    assert all(thread == threading.current_thread().name for _, thread in threads_seen)
    threads_seen.clear()
    parallel.set_threads(2)
    two = [_release(name, batch, seed) for seed in (1, 2)]
    main = threading.current_thread().name
    free = [thread for bands, thread in threads_seen if bands == "free"]
    nested = [thread for bands, thread in threads_seen if bands == "nested"]
    assert len(free) == len(nested) == 2
    assert all(t == main for t in nested) and all(t != main for t in free)  # the free runs on the second thread
    assert [_content(r) for r in one] == [_content(r) for r in two]
    assert "nesting_fallback" in two[0].diagnostics


def test_a_busy_machine_or_a_held_thread_runs_both_on_the_callers_thread(batch: EncodedBatch,
                                                                        threads_seen: list[tuple[str, str]],
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    parallel.set_threads(2)
    monkeypatch.setattr(parallel, "spare_core", lambda: False)
    _release("cg-kanon", batch, 1)
    monkeypatch.setattr(parallel, "spare_core", lambda: True)
    with parallel.second_thread() as held:  # another user (a large roll-up) holds the second thread
        assert held is not None
        _release("cg-kanon", batch, 1)
    assert len(threads_seen) == 4 and {t for _, t in threads_seen} == {threading.current_thread().name}
