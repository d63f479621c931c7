"""A release id names one content: when an engine's wall-clock safety cap bound, the content's digest
enters the id."""

from __future__ import annotations

from stream.worker.sampling import release_id


def test_capped_release_ids_differ_from_the_deterministic_id_and_from_each_other() -> None:
    plain = release_id("w-1", 42)
    assert plain == release_id("w-1", 42, "")  # ids of uncapped releases are unchanged
    a, b = release_id("w-1", 42, "digest-a"), release_id("w-1", 42, "digest-b")
    assert len({plain, a, b}) == 3
    assert a == release_id("w-1", 42, "digest-a")


def test_two_deployments_never_share_a_release_id() -> None:
    """The worker passes its signing key's id: the same window id and seed give another id elsewhere."""
    one = release_id("w-1", 42, deployment="a1b2c3d4e5f60718")
    other = release_id("w-1", 42, deployment="ffff0000ffff0000")
    assert len({one, other, release_id("w-1", 42)}) == 3
    assert one == release_id("w-1", 42, deployment="a1b2c3d4e5f60718") and one.startswith("r-") and len(one) == 24
