"""Downstream: follow ``crime.releases`` and ``crime.anonymized`` and assemble complete, signed releases.

A release is complete once its manifest has arrived, its Ed25519 signature verifies with the service's
public key (:mod:`stream.wire.signing`), and it has, for every ``seq``, the record whose values hash to
the manifest's signed row hash (``rows``, :mod:`stream.wire.rowhash`); a record planted under the same
id and ``seq`` is refused as a conflict whenever it arrives, so it can never silence the genuine one.
Records can arrive more than once (at-least-once publishing) and manifests too; both are
deduplicated, and a release already written is skipped. A manifest that verified but whose release
never completed is logged when consuming stops and counted (:meth:`ReleaseAssembler.incomplete`).
Anything else on the topics is refused with a logged reason and the consumer keeps going:
messages that are not JSON objects, manifests that are unsigned, forged or altered, release ids
outside the allow-listed alphabet (``[A-Za-z0-9_-]``, at most 64 characters: file names are derived
from the id, so an id can never name a path), and malformed records or manifests (each checked against
its contract, :mod:`stream.wire.contracts`).

What it holds is bounded (issue 40): a record whose ``seq`` is beyond its verified manifest's record
count is refused, and a release whose manifest has not arrived keeps at most ``max_unconfirmed`` records
(``ANONSTREAM_CONSUME_MAX_UNCONFIRMED``); the rest are refused and counted, and read again once the
manifest is in. A release id names one content: a verified manifest whose signed content differs from
the one already held or written under its id (another deployment sharing the key, or a replay) is
refused with one error line and counted (``id_conflicts``), never silently dropped as a duplicate.

With a consumer group, :func:`follow_releases` resumes at the group's committed offsets and commits
only below the first message of any release not yet written (:class:`GroupOffsets`), so a crash
never skips a release; the files are written by :mod:`stream.analyst.export`.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from stream.analyst.assembler import MAX_CANDIDATES, MAX_UNCONFIRMED, ReleaseAssembler, manifest_digest
from stream.analyst.export import manifest_path, write_release
from stream.analyst.offsets import GroupOffsets, commit
from stream.ops.kafka_clients import open_client
from stream.wire.release_ids import valid_release_id

__all__ = ["MAX_UNCONFIRMED", "ReleaseAssembler", "follow_releases", "make_consumer", "manifest_digest",
           "write_release_csv", "written_digests"]
log = logging.getLogger(__name__)


def written_digests(out_dir: Path, fmt: str) -> dict[str, str]:
    """The releases already written in ``fmt`` under ``out_dir``, each with the :func:`manifest_digest` of
    the manifest beside it (an unreadable one counts as written, with no digest to compare)."""
    out: dict[str, str] = {}
    for path in sorted(out_dir.rglob(f"*.{fmt}")) if out_dir.is_dir() else []:
        rid = valid_release_id(path.name[: -len(fmt) - 1])
        mpath = manifest_path(path, rid) if rid is not None and path.is_file() else None
        if rid is None or mpath is None:
            continue
        try:
            out[rid] = manifest_digest(json.loads(mpath.read_text(encoding="utf-8")))
        except (OSError, ValueError, AttributeError):
            out[rid] = ""
    return out


def write_release_csv(out_dir: Path, manifest: dict[str, Any], records: list[dict[str, Any]],
                      raw_columns: tuple[str, ...] = ()) -> Path | None:
    """``OUT/<release id>.csv`` + its manifest (:func:`stream.analyst.export.write_release`); None if written before."""
    return write_release(out_dir, manifest, records, "csv", None, raw_columns)


def make_consumer(bootstrap: list[str] | str, topics: list[str], group: str | None = None,
                  from_start: bool = False) -> Any:
    """A kafka-python consumer assigned to every partition of ``topics`` (no group join: the test
    broker answers joins slowly, and nothing here needs partitions balanced).

    Without ``group`` it reads from the start. With ``group`` it resumes at the group's committed
    offsets (from the start where the group has none, or everywhere with ``from_start``), and
    :func:`follow_releases` commits the group's offsets as releases are written.
    """
    from kafka import KafkaConsumer, TopicPartition

    consumer = open_client(KafkaConsumer, bootstrap_servers=bootstrap, enable_auto_commit=False, group_id=group,
                             auto_offset_reset="earliest", client_id="anonstream-consume",
                             consumer_timeout_ms=1000)
    parts = []
    deadline = time.monotonic() + 20
    for t in topics:
        ps = consumer.partitions_for_topic(t)
        while not ps and time.monotonic() < deadline:
            time.sleep(0.2)
            ps = consumer.partitions_for_topic(t)
        parts += [TopicPartition(t, p) for p in sorted(ps or [0])]
    consumer.assign(parts)
    consumer.seek_to_beginning(*parts)
    if group is not None and not from_start:
        for tp in parts:
            committed = consumer.committed(tp)
            if committed is not None:
                consumer.seek(tp, committed)
    return consumer


def _caught_up(consumer: Any) -> bool:
    """True once the consumer has its partitions and has read each to its end offset: before that (a group
    join, a slow broker, a re-read), a quiet poll is not silence."""
    parts = list(consumer.assignment())
    if not parts:
        return False
    try:
        return all(consumer.position(tp) >= end for tp, end in consumer.end_offsets(parts).items())
    except Exception:  # the broker did not answer: not caught up, the next poll asks again
        return False


def follow_releases(bootstrap: list[str] | str, releases_topic: str, records_topic: str,
                    on_release: Callable[[dict[str, Any], list[dict[str, Any]]], None],
                    stop: Callable[[], bool], idle_s: float | None = None, *,
                    public_key: Ed25519PublicKey, group: str | None = None, from_start: bool = False,
                    written: set[str] | frozenset[str] | Mapping[str, str] = frozenset(),
                    assembler: ReleaseAssembler | None = None,
                    max_unconfirmed: int = MAX_UNCONFIRMED) -> ReleaseAssembler:
    """Poll both topics, calling ``on_release`` per complete verified release, until ``stop()`` or ``idle_s``
    of silence. A message that cannot be used is refused (logged, counted) and never stops the loop.

    With ``group``, offsets are committed for the group after each poll whose releases ``on_release``
    has returned from (see :class:`GroupOffsets`); ``written`` are ids already on disk, whose messages
    are skipped as duplicates and never hold an offset back (a mapping to their :func:`manifest_digest`
    also refuses a different manifest under one of them). ``assembler``: the one to fill (default: a new
    one, holding at most ``max_unconfirmed`` records of a release whose manifest has not arrived)."""
    consumer = make_consumer(bootstrap, [releases_topic, records_topic], group, from_start)
    asm = assembler or ReleaseAssembler(public_key, max_unconfirmed)
    asm.done |= set(written)
    if isinstance(written, Mapping):
        asm.digests.update({rid: digest for rid, digest in written.items() if digest})
    offsets = GroupOffsets()
    committed: dict[Any, int] = {}
    reread: set[str] = set()
    last = time.monotonic()
    try:
        while not stop():
            batch = consumer.poll(timeout_ms=500, max_records=5000)
            got = False
            for tp, msgs in batch.items():
                for m in msgs:
                    got = True
                    offsets.seen(tp, m.offset, asm.add_raw(m.value, tp.topic == releases_topic))
            for manifest, records in asm.complete():
                on_release(manifest, records)
                offsets.written(manifest["release_id"])
            for rid in sorted(asm.overflowed & set(asm.manifests) - reread):  # flooded before its manifest came:
                reread.add(rid)  # read its records again, now filtered by the signed row hashes
                log.warning("release %s: more than %d conflicting records for one seq; reading its records "
                            "again", rid, MAX_CANDIDATES)
                for tp, first in offsets.waiting.get(rid, {}).items():
                    if tp.topic == records_topic:
                        consumer.seek(tp, first)
            if group is not None:
                commit(consumer, offsets.committable(), committed)
            if got or (idle_s is not None and not _caught_up(consumer)):
                last = time.monotonic()  # silence counts once every partition is read to its end
            elif idle_s is not None and time.monotonic() - last > idle_s:
                break
    finally:
        consumer.close(autocommit=False)
    for rid in asm.incomplete():
        log.warning("release %s: its manifest verified but its release never completed (%d of %d records)",
                    rid, sum(1 for c in asm.records.get(rid, {}).values() if c), asm.manifests[rid]["records"])
    return asm
