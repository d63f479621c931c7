"""The privacy-budget accountant: charges within caps, refusals that write nothing, no overspend under
random overlapping charges (hypothesis) nor when two processes race for one block (real PostgreSQL)."""

from __future__ import annotations

import multiprocessing
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from db import Database, budget
from db.budget import BudgetExceeded
from stream.testing.services import PostgresServer


def test_charge_refuse_and_account(ledger_db: Database) -> None:
    with ledger_db.unit() as s:
        budget.charge(s, ["b1", "b2"], 0.4, 1.0, purpose="release", release_id="r1")
    with ledger_db.unit() as s:
        budget.charge(s, ["b2", "b3"], 0.5, 1.0, purpose="release", release_id="r2")
    with pytest.raises(BudgetExceeded) as info, ledger_db.unit() as s:
        budget.charge(s, ["b1", "b2", "b3"], 0.2, 1.0, purpose="aggregate")
    assert info.value.block == "b2" and info.value.remaining == pytest.approx(0.1)
    assert "b2" in str(info.value) and "remaining 0.1" in str(info.value)
    with ledger_db.read() as s:
        expected: dict[str, Any] = {  # approx inside tuples: mypy cannot compare it with floats
            "b1": (1.0, pytest.approx(0.4)), "b2": (1.0, pytest.approx(0.9)), "b3": (1.0, pytest.approx(0.5))}
        assert budget.remaining(s, ["b1", "b2", "b3", "b9"]) == expected
        assert [sp.release_id for sp in budget.spends(s)] == ["r1", "r1", "r2", "r2"]  # the refusal wrote nothing
        sums = budget.spent_by_block(s)
        assert sums == {"b1": pytest.approx(0.4), "b2": pytest.approx(0.9), "b3": pytest.approx(0.5)}
        with pytest.raises(BudgetExceeded):
            budget.check(s, ["b2"], 0.2, 1.0)
    with ledger_db.unit() as s:  # ten spends of a tenth fit a cap of one, despite floating point
        for _ in range(10):
            budget.charge(s, ["t"], 0.1, 1.0, purpose="x")
        budget.set_cap(s, "b2", 2.0)
        budget.charge(s, ["b2"], 1.0, 2.0, purpose="x")
        assert [b.block for b in budget.all_blocks(s)] == ["b1", "b2", "b3", "t"]


@pytest.fixture(scope="module")
def sqlite_db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Database]:
    import migrations
    from db import Database

    url = f"sqlite:///{tmp_path_factory.mktemp('budget') / 'ledger.db'}"
    migrations.upgrade(url)
    db = Database(url)
    yield db
    db.dispose()


charges = st.lists(st.tuples(st.sets(st.integers(0, 4), min_size=1, max_size=3),
                             st.floats(0.01, 0.6, allow_nan=False), st.sampled_from([1.0, 1.5])),
                   min_size=1, max_size=25)


@settings(max_examples=40, deadline=None)
@given(charges)
def test_random_overlapping_charges_never_exceed_a_cap(sqlite_db: Database,
                                                       seq: list[tuple[set[int], float, float]]) -> None:
    prefix = uuid.uuid4().hex[:8]
    model: dict[str, tuple[float, float]] = {}  # block -> (cap, spent), as the accountant should keep it
    for blocks, rho, cap in seq:
        keys = [f"{prefix}/{b}" for b in blocks]
        fits = rho <= cap * (1 + budget.TOLERANCE) and all(
            model.get(k, (cap, 0.0))[1] + rho <= min(model.get(k, (cap, 0.0))[0], cap) * (1 + budget.TOLERANCE)
            for k in keys)
        try:
            with sqlite_db.unit() as s:
                budget.charge(s, keys, rho, cap, purpose="h")
            assert fits
            for k in keys:
                old_cap, spent = model.get(k, (cap, 0.0))
                model[k] = (min(old_cap, cap), spent + rho)
        except BudgetExceeded:
            assert not fits
    with sqlite_db.read() as s:
        stored = budget.remaining(s, list(model))
        sums = budget.spent_by_block(s)
    for key, (cap, spent) in model.items():
        assert stored[key][1] == pytest.approx(spent) == pytest.approx(sums[key])
        assert sums[key] <= cap * (1 + budget.TOLERANCE)


def _racer(url: str, barrier: Any, me: str, out: Any) -> None:  # multiprocessing Barrier and Queue proxies
    from db import Database

    db = Database(url)
    done = 0
    barrier.wait()
    while True:
        try:
            with db.unit() as s:
                budget.charge(s, ["shared", f"own-{me}"], 0.05, 1.0, purpose=me)
            done += 1
        except BudgetExceeded as exc:
            assert exc.block == "shared"
            break
    db.dispose()
    out.put(done)


def test_two_processes_racing_for_one_block_never_overspend(pg: PostgresServer) -> None:
    import migrations
    from db import Database

    url = pg.create_database("race")
    migrations.upgrade(url)
    ctx = multiprocessing.get_context("spawn")
    barrier, out = ctx.Barrier(2), ctx.Queue()
    procs = [ctx.Process(target=_racer, args=(url, barrier, me, out)) for me in ("a", "b")]
    for p in procs:
        p.start()
    done = [out.get(timeout=300) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    db = Database(url)
    try:
        with db.read() as s:
            sums = budget.spent_by_block(s)
            assert budget.remaining(s, ["shared"])["shared"][1] == pytest.approx(sums["shared"])
    finally:
        db.dispose()
    assert sum(done) == 20  # exactly the cap's worth of charges went through, split between the racers
    assert sums["shared"] <= 1.0 * (1 + budget.TOLERANCE)
    assert sums["own-a"] + sums["own-b"] == pytest.approx(sums["shared"])
