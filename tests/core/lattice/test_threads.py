"""A roll-up split over two threads gives the same table whatever the threads, and a search the same release."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pandas as pd
import pytest

from core import parallel
from core.encoding import Schema, encode
from core.engines.registry import get_engine, make_params
from core.lattice import Lattice, NodeEvaluator, threads
from core.lattice.kernels import rollup  # loaded: every search below runs on the kernels from its start
from core.privacy import PrivacyRequirement
from tests.strategies import make_table, small_schema


@pytest.fixture
def always_split(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Every roll-up is split whenever two threads are allowed, loaded machine or not; yields the split sizes."""
    split: list[int] = []
    inner = threads.split_roll_up

    def counted(tab: np.ndarray, *args: object, **kwargs: object) -> tuple[np.ndarray, np.ndarray]:
        split.append(len(tab))
        return inner(tab, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(threads, "PARALLEL_ROWS", 0)
    monkeypatch.setattr(parallel, "spare_core", lambda: True)
    monkeypatch.setattr(threads, "split_roll_up", counted)
    previous = parallel.threads()
    yield split
    parallel.set_threads(previous)


def _rows(tab: np.ndarray, cnt: np.ndarray) -> list[tuple[tuple[int, ...], int]]:
    return sorted(zip(map(tuple, tab.tolist()), cnt.tolist(), strict=True))


@pytest.mark.parametrize("req", [PrivacyRequirement(k=3), PrivacyRequirement(k=2, l=2)])
def test_a_split_roll_up_is_one_table_whatever_the_threads(req: PrivacyRequirement) -> None:
    evaluator = NodeEvaluator(encode(make_table(7, 3000), small_schema()), req, backend="numba")
    up = evaluator.rollups.up_cube()
    assert up is not None
    pool = ThreadPoolExecutor(1)
    tab, cnt = evaluator.bottom_tab, evaluator.counts
    src = np.zeros(len(evaluator.heights), np.int64)
    for node in Lattice(evaluator.heights).all_nodes():
        dst = np.asarray(node, np.int64)
        radix = evaluator._radix(tuple(int(v) for v in node), with_sens=True)
        assert radix is not None
        inline = threads.split_roll_up(tab, cnt, up, src, dst, radix)
        two = threads.split_roll_up(tab, cnt, up, src, dst, radix, pool)
        one_pass = rollup(tab, cnt, up, src, dst, radix)
        assert np.array_equal(inline[0], two[0]) and np.array_equal(inline[1], two[1])  # bit for bit
        assert inline[0].dtype == one_pass[0].dtype and inline[1].dtype == one_pass[1].dtype
        assert _rows(*inline) == _rows(*one_pass)  # the same rows and counts, in another order
    pool.shutdown()


def _release(batch_frame: pd.DataFrame, schema: Schema, values: dict[str, Any], count: int) -> dict[str, Any]:
    parallel.set_threads(count)
    batch = encode(batch_frame, schema)
    eng = get_engine("optimal")
    rel = eng.anonymize(batch, make_params(eng, values), np.random.default_rng(0))
    return {"rows": rel.rows.to_dict("list"), "class_ids": rel.class_ids.tolist(),
            "suppressed": rel.suppressed.tolist(), "metrics": rel.metrics, "privacy": rel.privacy,
            "diagnostics": dict(rel.diagnostics)}


@pytest.mark.parametrize("values", [{"k": 5, "max_suppression": 0.04}, {"k": 4, "l": 2, "max_suppression": 0.05},
                                    {"k": 8, "max_suppression": 0.0}])
def test_a_search_is_the_same_on_one_thread_and_on_two(always_split: list[int], values: dict[str, Any]) -> None:
    frame, schema = make_table(11, 4000), small_schema()
    one = _release(frame, schema, values, 1)
    assert not always_split
    two = _release(frame, schema, values, 2)
    assert always_split  # the two-thread path ran
    assert one == two  # optimum, node counts, loss to the last bit, released rows and classes


def test_adult_at_four_percent_is_the_same_on_two_threads(always_split: list[int], adult_df: pd.DataFrame,
                                                         adult_schema: Schema) -> None:
    values = {"k": 5, "max_suppression": 0.04}
    one = _release(adult_df, adult_schema, values, 1)
    two = _release(adult_df, adult_schema, values, 2)
    assert len(always_split) > 1000
    assert one == two
    assert list(two["diagnostics"]["levels"].values()) == [0, 3, 0, 1, 1, 1, 1, 2, 0]
    assert two["diagnostics"]["nodes_evaluated"] == 1624


def test_the_thread_count_is_one_or_two() -> None:
    with pytest.raises(ValueError, match="1 or 2"):
        parallel.set_threads(3)


@pytest.mark.parametrize(("rows", "spare"), [(10**9, True), (0, False)])
def test_small_tables_and_a_busy_machine_roll_up_in_one_pass(monkeypatch: pytest.MonkeyPatch, rows: int,
                                                             spare: bool) -> None:
    monkeypatch.setattr(threads, "PARALLEL_ROWS", rows)
    monkeypatch.setattr(parallel, "spare_core", lambda: spare)
    monkeypatch.setattr(threads, "split_roll_up", lambda *args, **kwargs: pytest.fail("split"))
    previous = parallel.set_threads(2)
    try:
        frame, schema = make_table(11, 2000), small_schema()
        eng = get_engine("optimal")
        rel = eng.anonymize(encode(frame, schema), make_params(eng, {"k": 5, "max_suppression": 0.04}),
                            np.random.default_rng(0))
        assert rel.diagnostics["nodes_evaluated"] > 1
    finally:
        parallel.set_threads(previous)
