"""Consumer-group offsets of ``consume``: committed only below the first message of a release not yet written."""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger("stream.analyst.consumer")


class GroupOffsets:
    """The offsets a consumer group may commit: never past a message of a release not yet written.

    Per partition: the next offset after the last message read, lowered to the earliest offset of any
    message still waiting in an incomplete release. A release whose records and manifest straddle polls
    (or a crash) is therefore read again from its first message by the next run; writing is idempotent
    by release id, so re-reading costs time, never a duplicate or a gap. Messages of a release that
    never completes (records without a valid manifest) hold their partition's offset back for good.
    """

    def __init__(self) -> None:
        self.read: dict[Any, int] = {}  # partition -> next offset after the last message read
        self.waiting: dict[str, dict[Any, int]] = {}  # release id -> partition -> earliest offset kept

    def seen(self, tp: Any, offset: int, rid: str | None) -> None:
        self.read[tp] = max(self.read.get(tp, 0), offset + 1)
        if rid is not None:
            first = self.waiting.setdefault(rid, {})
            first[tp] = min(first.get(tp, offset), offset)

    def written(self, rid: str) -> None:
        self.waiting.pop(rid, None)

    def committable(self) -> dict[Any, int]:
        out = dict(self.read)
        for first in self.waiting.values():
            for tp, offset in first.items():
                out[tp] = min(out.get(tp, offset), offset)
        return out


def commit(consumer: Any, offsets: dict[Any, int], done: dict[Any, int]) -> None:
    """Commit the partitions whose committable offset moved since ``done`` (updated in place). A commit
    the broker refuses is logged and retried after the next poll: the next run would re-read, never skip."""
    from kafka.errors import KafkaError
    from kafka.structs import OffsetAndMetadata

    moved = {tp: OffsetAndMetadata(off, "", -1) for tp, off in offsets.items() if done.get(tp) != off}
    if moved:
        try:
            consumer.commit(moved)
        except KafkaError as exc:
            log.warning("offset commit failed (%s); will retry", type(exc).__name__)
            return
        done.update({tp: om.offset for tp, om in moved.items()})
