"""A release id names one content: when an engine's wall-clock safety cap bound, the content's digest
enters the id."""

from __future__ import annotations

from stream.worker.sampling import release_id


def test_capped_release_ids_differ_from_the_deterministic_id_and_from_each_other():
    plain = release_id("w-1", 42)
    assert plain == release_id("w-1", 42, "")  # ids of uncapped releases are unchanged
    a, b = release_id("w-1", 42, "digest-a"), release_id("w-1", 42, "digest-b")
    assert len({plain, a, b}) == 3
    assert a == release_id("w-1", 42, "digest-a")
