"""The order due windows are claimed in (stream/worker/scheduling.py ``fair_order``): windows that can
release before those that will only be carried; one window per key in turn; within a turn the keys with
the most waiting reports first, so workers claiming from the top share the big releases out first."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from db.small_windows import WindowSize
from stream.worker.scheduling import fair_order

DAY = datetime(2024, 3, 1, tzinfo=UTC)


def _window(key: str, day: int, own: int) -> WindowSize:
    start = DAY + timedelta(days=day)
    return WindowSize(id=f"{key}|{start:%Y-%m-%d}|0", key=key, start=start, seq=0, flush=False, own=own, carried=0)


@given(st.dictionaries(st.sampled_from([f"station:S{i}" for i in range(8)]),
                       st.lists(st.integers(1, 400), min_size=1, max_size=4), min_size=1))
def test_ready_first_one_per_key_per_turn_largest_first(keys: dict[str, list[int]]) -> None:
    floor, k = 50, 5
    sizes = {w.id: w for key, owns in keys.items() for day, own in enumerate(owns) for w in [_window(key, day, own)]}
    order = fair_order(sizes, k, floor)
    assert sorted(order) == sorted(sizes)  # every window, once
    waiting = {key: sum(owns) for key, owns in keys.items()}
    ready = [sizes[w].key for w in order if waiting[sizes[w].key] >= floor]
    assert [sizes[w].key for w in order[:len(ready)]] == ready  # ready keys' windows come first
    turn: dict[str, int] = {}
    turns = []
    for wid in order[:len(ready)]:  # the ready class, turn by turn
        key = sizes[wid].key
        turn[key] = turn.get(key, -1) + 1
        turns.append((turn[key], -waiting[key]))
        assert sizes[wid].start == DAY + timedelta(days=turn[key])  # a key's windows in day order
    assert turns == sorted(turns)  # turn after turn; within a turn, the most waiting first
