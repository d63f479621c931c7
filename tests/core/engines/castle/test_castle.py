"""The castle engine: its guarantee on random streams, persons counted once, determinism, the verifier."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.encoding import EncodedBatch, encode
from core.engines.castle.kernels import join_il
from core.engines.castle.records import Departure, Settings
from core.engines.castle.space import Space, join_il_numpy
from core.engines.castle.state import restore, snapshot
from core.engines.castle.stream import CastleStream
from core.engines.registry import get_engine, make_params
from core.verify import verify_release
from tests.strategies import make_table, small_schema

SCHEMA = small_schema()


def _stream(n: int, seed: int, s: Settings, persons: int | None = None,
            stream_seed: int = 0) -> tuple[EncodedBatch, Space, np.ndarray, list[Departure], CastleStream]:
    """Replay a random table of ``n`` rows; person ids drawn from ``persons`` people (default: one per row)."""
    batch = encode(make_table(seed, n), SCHEMA)
    space = Space.from_batch(batch)
    rng = np.random.default_rng(seed)
    pids = rng.integers(0, persons, n) if persons else np.arange(n)
    st_ = CastleStream(space, s, np.random.default_rng(stream_seed))
    leaves = batch.leaf_matrix.astype(np.int32)
    assert batch.sensitive_codes is not None
    out: list[Departure] = []
    for i in range(n):
        out.extend(st_.push(i, leaves[i], int(pids[i]), int(batch.sensitive_codes[i])))
    out.extend(st_.flush())
    return batch, space, pids, out, st_


def _id(o: Departure) -> int:
    """The tuple id of a departure: these tests push rows under their integer position."""
    assert isinstance(o.tuple_id, int)
    return o.tuple_id


def _check_guarantee(batch: EncodedBatch, space: Space, pids: np.ndarray, out: list[Departure], s: Settings) -> None:
    ids = [_id(o) for o in out]
    assert sorted(ids) == list(range(batch.n))  # every tuple out once (released or suppressed)
    by_gen: dict[tuple, list[int]] = defaultdict(list)
    for o in out:
        assert o.latency <= s.delta_tuples  # never late
        if o.nodes is None:
            continue
        assert space.covers(o.nodes, batch.leaf_matrix[_id(o)])  # labels generalize the tuple
        by_gen[tuple(map(tuple, o.nodes))].append(_id(o))
    assert batch.sensitive_codes is not None
    for rows in by_gen.values():  # classes as a reader sees them: equal generalisations
        assert len(set(pids[rows].tolist())) >= s.k
        assert len(set(batch.sensitive_codes[rows].tolist())) >= s.l


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(1, 120), seed=st.integers(0, 2**16), k=st.integers(1, 6), ell=st.integers(1, 3),
       delta=st.integers(1, 40), persons=st.sampled_from([None, 15, 40]), beta=st.sampled_from([None, 3]))
def test_every_released_class_has_k_persons_and_l_values_and_nothing_is_late(n: int, seed: int, k: int, ell: int,
                                                                             delta: int, persons: int | None,
                                                                             beta: int | None) -> None:
    s = Settings(k=k, l=ell, delta_tuples=delta, mu=5, beta=beta)
    batch, space, pids, out, _ = _stream(n, seed, s, persons)
    _check_guarantee(batch, space, pids, out, s)


def test_k_counts_persons_not_reports() -> None:
    """Many reports of one person in overlapping clusters never make a class on their own."""
    s = Settings(k=3, delta_tuples=6, mu=5)
    batch = encode(make_table(5, 40), SCHEMA)
    space = Space.from_batch(batch)
    leaves = batch.leaf_matrix.astype(np.int32)
    st_ = CastleStream(space, s, np.random.default_rng(0))
    pids = np.array([0] * 30 + list(range(1, 11)))  # 30 reports of person 0 (the same tuple), then 10 people
    assert batch.sensitive_codes is not None
    out: list[Departure] = []
    for i in range(40):
        x = leaves[0] if i < 30 else leaves[i]
        out.extend(st_.push(i, x, int(pids[i]), int(batch.sensitive_codes[i])))
    out.extend(st_.flush())
    released = [o for o in out if o.nodes is not None]
    early = [o for o in out if _id(o) < 24]  # expired before anyone else arrived: one person only
    assert all(o.nodes is None and o.reason == "too-few-waiting" for o in early)
    by_cluster: dict[int, set] = defaultdict(set)
    for o in released:
        by_cluster[o.cluster].add(int(pids[_id(o)]))
    assert by_cluster and all(len(p) >= 3 for p in by_cluster.values())


def test_same_seed_same_departures_and_restore_continues_identically() -> None:
    s = Settings(k=3, l=2, delta_tuples=15, mu=10)
    a = _stream(90, 3, s, persons=50)[3]
    b = _stream(90, 3, s, persons=50)[3]
    assert [(o.tuple_id, o.cluster, o.how) for o in a] == [(o.tuple_id, o.cluster, o.how) for o in b]
    batch = encode(make_table(3, 90), SCHEMA)
    space = Space.from_batch(batch)
    leaves = batch.leaf_matrix.astype(np.int32)
    pids = np.random.default_rng(3).integers(0, 50, 90)
    assert batch.sensitive_codes is not None
    codes = batch.sensitive_codes

    def feed(stream: CastleStream, rows: Iterable[int]) -> list[Departure]:
        return [d for i in rows for d in stream.push(i, leaves[i], int(pids[i]), int(codes[i]))]

    whole = CastleStream(space, s, np.random.default_rng(0))
    first = feed(whole, range(45))
    rest = feed(whole, range(45, 90)) + whole.flush()
    half = CastleStream(space, s, np.random.default_rng(0))
    assert [o.tuple_id for o in feed(half, range(45))] == [o.tuple_id for o in first]
    again = restore(snapshot(half), space, np.random.default_rng(99))
    resumed = feed(again, range(45, 90)) + again.flush()
    assert [(o.tuple_id, o.cluster, o.how) for o in resumed] == [(o.tuple_id, o.cluster, o.how) for o in rest]


def test_kernel_matches_numpy_reference() -> None:
    batch = encode(make_table(8, 60), SCHEMA)
    space = Space.from_batch(batch)
    leaves = batch.leaf_matrix.astype(np.int32)
    rng = np.random.default_rng(1)
    lo, hi = leaves[:30].copy(), leaves[:30].copy()
    lvl = rng.integers(0, 2, lo.shape).astype(np.int32)
    x = leaves[40]
    fast = join_il(lo, hi, lvl, np.ones(30, np.bool_), x, x, np.zeros_like(x), space.maps, space.cost,
                   space.ordered, space.vals, space.weights, 1e-3)
    assert np.allclose(fast, join_il_numpy(space, lo, hi, lvl, x, x, np.zeros_like(x)))


@pytest.mark.parametrize("values", [{"k": 4}, {"k": 3, "l": 2, "delta_tuples": 12},
                                    {"k": 2, "delta_tuples": 5, "person_column": "name"}])
def test_batch_release_verifies_and_labels_are_hierarchy_nodes(values: dict[str, int] | dict[str, int | str]) -> None:
    df = make_table(21, 150)
    schema = small_schema()
    if "person_column" in values:  # reports of 60 people; the column passes through
        df = df.assign(name=[f"p{i % 60}" for i in range(150)])
        schema = type(SCHEMA)(spec=SCHEMA.spec.model_copy(update={"identifiers": (), "passthrough": ("name",)}),
                              hierarchies=SCHEMA.hierarchies)
    eng = get_engine("castle")
    rel = eng.anonymize(encode(df, schema), make_params(eng, values), np.random.default_rng(0))
    report = verify_release(df, rel, schema)
    assert report.ok, report.failures
    assert rel.diagnostics["late"] == 0
    batch = encode(df, schema)
    for q in batch.qis:
        nodes = {str(lab) for lv in q.labels for lab in lv}
        assert set(rel.rows[q.name].astype(str)) <= nodes
    if "person_column" in values:
        persons = df.loc[rel.rows.index].groupby(rel.class_ids)["name"].nunique()
        assert persons.min() >= values["k"]


def test_too_short_a_delay_is_refused_when_it_would_suppress() -> None:
    eng = get_engine("castle")
    df = make_table(2, 60)
    with pytest.raises(Exception, match="suppressed"):
        eng.anonymize(encode(df, SCHEMA), make_params(eng, {"k": 5, "delta_tuples": 2}), np.random.default_rng(0))
