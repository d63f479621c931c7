"""Downstream: follow ``crime.releases`` and ``crime.anonymized`` and assemble complete, signed releases.

A release is complete once its manifest has arrived, its Ed25519 signature verifies with the service's
public key (:mod:`stream.signing`), and the records received for it (deduplicated by ``seq``) number
``manifest.records`` and hash to ``manifest.checksum``. Records can arrive more than once
(at-least-once publishing) and manifests too; both are deduplicated, and a release already written is
skipped. Anything else on the topics is refused with a logged reason and the consumer keeps going:
messages that are not JSON objects, manifests that are unsigned, forged or altered, release ids
outside the allow-listed alphabet (``[A-Za-z0-9_-]``, at most 64 characters: file names are derived
from the id, so an id can never name a path), and malformed records.
"""

from __future__ import annotations

import csv
import json
import logging
import re
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from stream.csvsafe import neutralize_row
from stream.records import checksum
from stream.signing import verify_manifest

log = logging.getLogger(__name__)
RELEASE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
MAX_PENDING_RELEASES = 10_000  # releases with records but no manifest yet, kept at most (memory bound)


def valid_release_id(value: Any) -> str | None:
    """The release id if it is in the allow-listed alphabet, else None."""
    return value if isinstance(value, str) and RELEASE_ID.fullmatch(value) else None


class ReleaseAssembler:
    """Collects manifests and records; yields each release once it is complete and verified."""

    def __init__(self, public_key: Ed25519PublicKey) -> None:
        self.public_key = public_key
        self.records: dict[str, dict[int, dict[str, Any]]] = defaultdict(dict)
        self.manifests: dict[str, dict[str, Any]] = {}
        self.done: set[str] = set()
        self.duplicate_records = 0
        self.duplicate_manifests = 0
        self.refused: Counter[str] = Counter()  # reason -> messages refused

    def _refuse(self, reason: str, what: str) -> None:
        if not self.refused[reason]:
            log.warning("refused %s: %s", what, reason)
        else:
            log.debug("refused %s: %s", what, reason)
        self.refused[reason] += 1

    def add_raw(self, raw: bytes | None, is_manifest: bool) -> None:
        """One message from either topic, as bytes: non-JSON and non-object messages are refused."""
        kind = "manifest" if is_manifest else "record"
        try:
            obj = json.loads(raw) if raw is not None else None
        except (ValueError, RecursionError):
            self._refuse("not JSON", f"a {kind} message")
            return
        if not isinstance(obj, dict):
            self._refuse("not a JSON object", f"a {kind} message")
            return
        self.add_manifest(obj) if is_manifest else self.add_record(obj)

    def add_record(self, msg: dict[str, Any]) -> None:
        rid = valid_release_id(msg.get("release_id"))
        seq = msg.get("seq")
        if rid is None or not isinstance(seq, int) or isinstance(seq, bool) or seq < 0 \
                or not isinstance(msg.get("values"), dict):
            self._refuse("malformed record", "a record")
            return
        if rid in self.done or seq in self.records.get(rid, {}):
            self.duplicate_records += 1
            return
        if rid not in self.manifests and len(self.records) > MAX_PENDING_RELEASES:
            self.records.pop(rid, None)
            self._refuse("too many releases without a manifest", "a record")
            return
        self.records[rid][seq] = msg

    def add_manifest(self, manifest: dict[str, Any]) -> None:
        rid = valid_release_id(manifest.get("release_id"))
        if rid is None:
            self._refuse("release id outside [A-Za-z0-9_-]{1,64}", "a manifest")
            return
        why = verify_manifest(manifest, self.public_key)
        if why is not None:
            self._refuse(why, f"manifest {rid}")
            return
        if not isinstance(manifest.get("records"), int) or not isinstance(manifest.get("columns"), list):
            self._refuse("malformed manifest", f"manifest {rid}")
            return
        if rid in self.done or rid in self.manifests:
            self.duplicate_manifests += 1
            return
        self.manifests[rid] = manifest

    def complete(self) -> Iterator[tuple[dict[str, Any], list[dict[str, Any]]]]:
        """Releases that became complete since the last call, with their records in ``seq`` order."""
        for rid, manifest in list(self.manifests.items()):
            recs = self.records.get(rid, {})
            if len(recs) != manifest["records"]:
                continue
            ordered = [recs[s] for s in sorted(recs)]
            if checksum(ordered) != manifest["checksum"]:
                continue
            self.done.add(rid)
            del self.manifests[rid]
            self.records.pop(rid, None)
            yield manifest, ordered


def write_release_csv(out_dir: Path, manifest: dict[str, Any], records: list[dict[str, Any]],
                      raw_columns: tuple[str, ...] = ()) -> Path | None:
    """Write ``<release id>.csv`` (+ its manifest as JSON) inside ``out_dir``; None if it was written before.

    The file name comes from the validated release id, never from a path; text cells that would run as
    spreadsheet formulas are neutralized (:mod:`stream.csvsafe`) except in ``raw_columns``.
    """
    rid = valid_release_id(manifest.get("release_id"))
    if rid is None:
        raise ValueError("release id outside the allowed alphabet")
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{rid}.csv"
    if path.resolve().parent != out_dir.resolve():
        raise ValueError("release file would leave the output folder")
    if path.exists():
        return None
    cols = [str(c) for c in manifest["columns"] if c != "class_id"]
    raw = [False, *(c in raw_columns for c in cols)]
    tmp = path.with_suffix(".csv.tmp")
    with tmp.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(neutralize_row(["class_id", *cols], raw))
        for r in records:
            w.writerow(neutralize_row([r.get("class_id"), *(r["values"].get(c) for c in cols)], raw))
    (out_dir / f"{rid}.manifest.json").write_text(json.dumps(manifest, indent=2))
    tmp.replace(path)
    return path


def make_consumer(bootstrap: list[str] | str, topics: list[str]) -> Any:
    """A kafka-python consumer assigned (no group: nothing to join) to every partition, from the start."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, group_id=None,
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
    return consumer


def follow_releases(bootstrap: list[str] | str, releases_topic: str, records_topic: str,
                    on_release: Callable[[dict[str, Any], list[dict[str, Any]]], None],
                    stop: Callable[[], bool], idle_s: float | None = None, *,
                    public_key: Ed25519PublicKey) -> ReleaseAssembler:
    """Poll both topics, calling ``on_release`` per complete verified release, until ``stop()`` or ``idle_s``
    of silence. A message that cannot be used is refused (logged, counted) and never stops the loop."""
    consumer = make_consumer(bootstrap, [releases_topic, records_topic])
    asm = ReleaseAssembler(public_key)
    last = time.monotonic()
    try:
        while not stop():
            batch = consumer.poll(timeout_ms=500, max_records=5000)
            got = False
            for tp, msgs in batch.items():
                for m in msgs:
                    got = True
                    asm.add_raw(m.value, tp.topic == releases_topic)
            for manifest, records in asm.complete():
                on_release(manifest, records)
            if got:
                last = time.monotonic()
            elif idle_s is not None and time.monotonic() - last > idle_s:
                break
    finally:
        consumer.close()
    return asm
