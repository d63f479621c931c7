"""CASTLE's merge by nearest tuples: the greedy choice against a numpy oracle, and the released classes
(grouped by their labels from outside, with pandas) holding k distinct persons and l values."""

from __future__ import annotations

from collections.abc import Hashable

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.encoding import encode
from core.engines.castle.kernels import COST_TIE, join_one
from core.engines.castle.merge import plan_nearest
from core.engines.castle.records import Settings
from core.engines.castle.space import Space, join_il_numpy
from core.engines.castle.stream import CastleStream
from core.engines.registry import get_engine, make_params
from tests.strategies import make_table, small_schema

SCHEMA = small_schema()


def _fed(seed: int, n: int, s: Settings, persons: int) -> tuple[CastleStream, np.ndarray]:
    """A stream that has taken ``n`` rows of a random table (ids 0..n-1) and released nothing yet."""
    batch = encode(make_table(seed, n), SCHEMA)
    stream = CastleStream(Space.from_batch(batch), s, np.random.default_rng(seed))
    pids = np.random.default_rng(seed).integers(0, persons, n)
    leaves = batch.leaf_matrix.astype(np.int32)
    assert batch.sensitive_codes is not None
    for i in range(n):
        assert not stream.push(i, leaves[i], int(pids[i]), int(batch.sensitive_codes[i]))
    return stream, pids


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**16), k=st.integers(2, 6), ell=st.integers(1, 3), persons=st.sampled_from([12, 60]),
       lazy=st.booleans())
def test_the_merge_takes_the_nearest_eligible_tuple_at_each_step(seed: int, k: int, ell: int, persons: int,
                                                                  lazy: bool) -> None:
    """``lazy``: losses recomputed only where their lower bound could win (costs that grow up the
    hierarchy, as here); else all afresh after every growth of the cluster. Both give the oracle's rows."""
    s = Settings(k=k, l=ell, delta_tuples=10_000, mu=5)
    stream, _ = _fed(seed, 60, s, persons)
    sp = stream.space
    assert sp.monotone
    if not lazy:
        sp.__dict__["monotone"] = False
    slot = stream.tuples[0].slot
    plan = plan_nearest(stream, slot)
    c = stream.pool.get(slot)
    lo, hi, lvl = stream.pool.lo[slot].copy(), stream.pool.hi[slot].copy(), stream.pool.lvl[slot].copy()
    have_p, have_v = set(c.pids), set(c.sens)
    rest = [t for t in stream.queue if t not in c.members]
    taken: list[Hashable] = []
    while len(have_p) < k or len(have_v) < ell:  # the oracle: numpy costs, eligibility by brute force
        ok = [t for t in rest if t not in taken and (len(have_p) >= k or stream.tuples[t].pid not in have_p)
              and (len(have_v) >= ell or stream.tuples[t].sens not in have_v)]
        if not ok:
            assert plan is None
            return
        x = np.stack([stream.tuples[t].leaves for t in ok])
        cost = join_il_numpy(sp, x, x, np.zeros_like(x), lo, hi, lvl)
        near = cost <= cost.min() + COST_TIE  # losses within the tie tolerance are one loss: the oldest wins
        best = min((stream.tuples[t].arrival, t) for t, n in zip(ok, near, strict=True) if n)[1]
        taken.append(best)
        have_p.add(stream.tuples[best].pid)
        have_v.add(stream.tuples[best].sens)
        xb = stream.tuples[best].leaves
        join_one(lo, hi, lvl, xb, xb, np.zeros_like(xb), sp.maps, sp.ordered)
    assert plan is not None
    assert plan[0] == taken
    assert plan[1] == pytest.approx(join_il_numpy(sp, lo[None], hi[None], lvl[None], lo, hi, lvl)[0])


@pytest.mark.parametrize(("k", "ell", "delta", "people"), [(3, 1, 15, 400), (4, 2, 40, 150), (5, 3, 120, 90),
                                                           (2, 2, 7, 600)])
def test_released_labels_grouped_from_outside_hold_k_persons_and_l_values(k: int, ell: int, delta: int,
                                                                          people: int) -> None:
    """600 reports of ``people`` persons through the batch path; a reader groups the release by its QI
    labels (one class per distinct label row) and counts persons and offences per class."""
    df = make_table(k * 100 + delta, 600)
    df["name"] = [f"p{i}" for i in np.random.default_rng(delta).integers(0, people, 600)]
    schema = type(SCHEMA)(spec=SCHEMA.spec.model_copy(update={"identifiers": (), "passthrough": ("name",)}),
                          hierarchies=SCHEMA.hierarchies)
    values = {"k": k, "delta_tuples": delta, "person_column": "name", "max_suppression": 1.0}
    if ell > 1:
        values["l"] = ell
    rel = get_engine("castle").anonymize(encode(df, schema), make_params("castle", values), np.random.default_rng(3))
    assert rel.diagnostics["late"] == 0
    qis = list(schema.qi_names)
    released = rel.rows[qis].astype(str).assign(name=df.loc[rel.rows.index, "name"],
                                                offence=df.loc[rel.rows.index, "offence"])
    per_class = released.groupby(qis)[["name", "offence"]].nunique()
    assert len(released) + len(rel.suppressed) == len(df)
    assert per_class["name"].min() >= k
    assert per_class["offence"].min() >= ell
    merged = rel.diagnostics["departures"].get("merged-tuples", 0)
    assert merged > 0 or rel.diagnostics["departures"].get("merged-clusters", 0) > 0  # the merge step ran


def test_the_same_seed_gives_the_same_release_and_the_table_grows() -> None:
    df = make_table(11, 900)
    values = {"k": 4, "l": 2, "delta_tuples": 400}
    eng = get_engine("castle")
    a, b = (eng.anonymize(encode(df, SCHEMA), make_params(eng, values), np.random.default_rng(5)) for _ in range(2))
    pd.testing.assert_frame_equal(a.rows, b.rows)
    assert np.array_equal(a.class_ids, b.class_ids)


def test_the_merge_plan_stops_once_its_loss_reaches_the_give_up_bound() -> None:
    stream, _ = _fed(7, 60, Settings(k=6, l=2, delta_tuples=10_000, mu=5), 60)
    slot = stream.tuples[0].slot
    full = plan_nearest(stream, slot)
    assert full is not None and full[0]
    stopped = plan_nearest(stream, slot, give_up=full[1] / 2)
    assert stopped is not None and stopped[0] == []
    assert full[1] / 2 <= stopped[1] <= full[1]  # the first loss on the way that reached the bound
    assert plan_nearest(stream, slot) == full  # planning changes nothing
