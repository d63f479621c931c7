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
from the id, so an id can never name a path), and malformed records.

With a consumer group, :func:`follow_releases` resumes at the group's committed offsets and commits
only below the first message of any release not yet written (:class:`GroupOffsets`), so a crash
never skips a release; the files are written by :mod:`stream.analyst.export`.
"""

from __future__ import annotations

import json
import logging
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from stream.analyst.export import write_release
from stream.analyst.offsets import GroupOffsets, commit
from stream.ops.kafka_clients import open_client
from stream.wire.records import checksum, dumps
from stream.wire.release_ids import valid_release_id
from stream.wire.rowhash import SHORT, digest_of_hashes, record_row, row_hash, short_hashes
from stream.wire.signing import verify_manifest

log = logging.getLogger(__name__)
MAX_PENDING_RELEASES = 10_000  # releases with records but no manifest yet, kept at most (memory bound)
MAX_CANDIDATES = 16  # distinct records kept per (release, seq) before its manifest names the genuine one


class ReleaseAssembler:
    """Collects manifests and records; yields each release once it is complete and verified.

    Records are kept per ``seq`` as candidates (distinct messages, at most :data:`MAX_CANDIDATES`), never
    first-come-first-kept: once a manifest with row hashes (``rows``) has verified, each ``seq`` keeps the
    candidate whose values hash to the signed row hash and every other one, whenever it arrives, is
    refused as a conflict (logged, counted in ``conflicts``). Manifests without row hashes (older
    releases) complete only when each ``seq`` has a single candidate and their ``checksum`` matches."""

    def __init__(self, public_key: Ed25519PublicKey) -> None:
        self.public_key = public_key
        self.records: dict[str, dict[int, list[dict[str, Any]]]] = defaultdict(dict)
        self.manifests: dict[str, dict[str, Any]] = {}
        self.expected: dict[str, list[bytes]] = {}  # release id -> signed short row hashes, in seq order
        self.done: set[str] = set()
        self.duplicate_records = 0
        self.duplicate_manifests = 0
        self.conflicts = 0  # records refused because another record of their seq matches the signed hash
        self.overflowed: set[str] = set()  # releases a record was refused from for lack of room (MAX_CANDIDATES)
        self.refused: Counter[str] = Counter()  # reason -> messages refused

    def _refuse(self, reason: str, what: str) -> None:
        if not self.refused[reason]:
            log.warning("refused %s: %s", what, reason)
        else:
            log.debug("refused %s: %s", what, reason)
        self.refused[reason] += 1

    def add_raw(self, raw: bytes | None, is_manifest: bool) -> str | None:
        """One message from either topic, as bytes: non-JSON and non-object messages are refused.

        Returns the id of the release this message now waits in (kept until that release completes), or
        None when nothing of it is kept (refused, or a duplicate)."""
        kind = "manifest" if is_manifest else "record"
        try:
            obj = json.loads(raw) if raw is not None else None
        except (ValueError, RecursionError):
            self._refuse("not JSON", f"a {kind} message")
            return None
        if not isinstance(obj, dict):
            self._refuse("not a JSON object", f"a {kind} message")
            return None
        return self.add_manifest(obj) if is_manifest else self.add_record(obj)

    def _matches(self, rid: str, msg: dict[str, Any]) -> bool:
        """Whether ``msg``'s values hash to the signed row hash of its ``seq`` (release ``rid``)."""
        expected = self.expected[rid]
        seq = msg["seq"]
        row = record_row(msg, self.manifests[rid]["rows"]["columns"])
        return seq < len(expected) and row_hash(row)[:SHORT] == expected[seq]

    def _conflict(self, rid: str, msg: dict[str, Any]) -> None:
        self.conflicts += 1
        log.warning("release %s: refused a record for seq %s that does not match the signed row hash "
                    "(a conflicting or planted record)", rid, msg.get("seq"))

    def add_record(self, msg: dict[str, Any]) -> str | None:
        rid = valid_release_id(msg.get("release_id"))
        seq = msg.get("seq")
        if rid is None or not isinstance(seq, int) or isinstance(seq, bool) or seq < 0 \
                or not isinstance(msg.get("values"), dict):
            self._refuse("malformed record", "a record")
            return None
        if rid in self.done:
            self.duplicate_records += 1
            return None
        if rid in self.expected and not self._matches(rid, msg):
            self._conflict(rid, msg)
            return None
        candidates = self.records.get(rid, {}).get(seq, [])
        if any(dumps(c) == dumps(msg) for c in candidates):
            self.duplicate_records += 1
            return None
        if rid not in self.manifests and rid not in self.records and len(self.records) > MAX_PENDING_RELEASES:
            self._refuse("too many releases without a manifest", "a record")
            return None
        if len(candidates) >= MAX_CANDIDATES:  # follow_releases reads the release again once its manifest is in
            self._refuse(f"more than {MAX_CANDIDATES} conflicting records for one seq", f"a record of {rid}")
            self.overflowed.add(rid)
            return rid  # its offset holds the group's commit back, and is where the release is read again
        self.records[rid].setdefault(seq, []).append(msg)
        return rid

    def add_manifest(self, manifest: dict[str, Any]) -> str | None:
        rid = valid_release_id(manifest.get("release_id"))
        if rid is None:
            self._refuse("release id outside [A-Za-z0-9_-]{1,64}", "a manifest")
            return None
        why = verify_manifest(manifest, self.public_key)
        if why is not None:
            self._refuse(why, f"manifest {rid}")
            return None
        if not isinstance(manifest.get("records"), int) or not isinstance(manifest.get("columns"), list):
            self._refuse("malformed manifest", f"manifest {rid}")
            return None
        if rid in self.done or rid in self.manifests:
            self.duplicate_manifests += 1
            return None
        self.manifests[rid] = manifest
        rows = manifest.get("rows")
        expected = short_hashes(rows) if isinstance(rows, dict) and isinstance(rows.get("columns"), list) else None
        if expected is not None:  # from now on each seq keeps only the record its signed hash names
            self.expected[rid] = expected
            for seq, candidates in list(self.records.get(rid, {}).items()):
                keep = [c for c in candidates if self._matches(rid, c)]
                for c in candidates:
                    if c not in keep:
                        self._conflict(rid, c)
                self.records[rid][seq] = keep[:1]
        return rid

    def _assemble(self, rid: str, manifest: dict[str, Any]) -> list[dict[str, Any]] | None:
        recs = self.records.get(rid, {})
        n = manifest["records"]
        if sorted(s for s, c in recs.items() if c) != list(range(n)):
            return None
        ordered = [recs[s][0] for s in range(n)]
        if rid in self.expected:
            root = digest_of_hashes([row_hash(record_row(r, manifest["rows"]["columns"])) for r in ordered])["root"]
            return ordered if root == manifest["rows"].get("root") else None
        if any(len(recs[s]) > 1 for s in range(n)):  # no signed row hashes to choose by
            return None
        return ordered if checksum(ordered) == manifest["checksum"] else None

    def complete(self) -> Iterator[tuple[dict[str, Any], list[dict[str, Any]]]]:
        """Releases that became complete since the last call, with their records in ``seq`` order."""
        for rid, manifest in list(self.manifests.items()):
            ordered = self._assemble(rid, manifest)
            if ordered is None:
                continue
            self.done.add(rid)
            del self.manifests[rid]
            self.expected.pop(rid, None)
            self.records.pop(rid, None)
            yield manifest, ordered

    def incomplete(self) -> list[str]:
        """Releases whose manifest verified but that are not complete (records missing or not matching)."""
        return sorted(self.manifests)


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
                    written: set[str] | frozenset[str] = frozenset(),
                    assembler: ReleaseAssembler | None = None) -> ReleaseAssembler:
    """Poll both topics, calling ``on_release`` per complete verified release, until ``stop()`` or ``idle_s``
    of silence. A message that cannot be used is refused (logged, counted) and never stops the loop.

    With ``group``, offsets are committed for the group after each poll whose releases ``on_release``
    has returned from (see :class:`GroupOffsets`); ``written`` are ids already on disk, whose messages
    are skipped as duplicates and never hold an offset back. ``assembler``: the one to fill (default: a new one)."""
    consumer = make_consumer(bootstrap, [releases_topic, records_topic], group, from_start)
    asm = assembler or ReleaseAssembler(public_key)
    asm.done |= set(written)
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
