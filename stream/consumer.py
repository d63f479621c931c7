"""Downstream: follow ``crime.releases`` and ``crime.anonymized`` and assemble complete releases.

A release is complete once its manifest has arrived and the records received for it (deduplicated
by ``seq``) number ``manifest.records`` and hash to ``manifest.checksum``. Records can arrive more
than once (at-least-once publishing) and manifests too; both are deduplicated, and a release already
written is skipped.
"""

from __future__ import annotations

import csv
import json
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from stream.records import checksum


class ReleaseAssembler:
    def __init__(self) -> None:
        self.records: dict[str, dict[int, dict[str, Any]]] = defaultdict(dict)
        self.manifests: dict[str, dict[str, Any]] = {}
        self.done: set[str] = set()
        self.duplicate_records = 0
        self.duplicate_manifests = 0

    def add_record(self, msg: dict[str, Any]) -> None:
        rid = msg["release_id"]
        if rid in self.done or msg["seq"] in self.records[rid]:
            self.duplicate_records += 1
            return
        self.records[rid][msg["seq"]] = msg

    def add_manifest(self, manifest: dict[str, Any]) -> None:
        rid = manifest["release_id"]
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


def write_release_csv(out_dir: Path, manifest: dict[str, Any], records: list[dict[str, Any]]) -> Path | None:
    """Write ``<release id>.csv`` (+ its manifest as JSON); None if it was written before."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{manifest['release_id']}.csv"
    if path.exists():
        return None
    cols = [c for c in manifest["columns"] if c != "class_id"]
    tmp = path.with_suffix(".csv.tmp")
    with tmp.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["class_id", *cols])
        for r in records:
            w.writerow([r["class_id"], *(r["values"].get(c) for c in cols)])
    (out_dir / f"{manifest['release_id']}.manifest.json").write_text(json.dumps(manifest, indent=2))
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
                    stop: Callable[[], bool], idle_s: float | None = None) -> ReleaseAssembler:
    """Poll both topics, calling ``on_release`` per complete release, until ``stop()`` or ``idle_s`` of silence."""
    consumer = make_consumer(bootstrap, [releases_topic, records_topic])
    asm = ReleaseAssembler()
    last = time.monotonic()
    try:
        while not stop():
            batch = consumer.poll(timeout_ms=500, max_records=5000)
            got = False
            for tp, msgs in batch.items():
                for m in msgs:
                    got = True
                    obj = json.loads(m.value)
                    if tp.topic == releases_topic:
                        asm.add_manifest(obj)
                    else:
                        asm.add_record(obj)
            for manifest, records in asm.complete():
                on_release(manifest, records)
            if got:
                last = time.monotonic()
            elif idle_s is not None and time.monotonic() - last > idle_s:
                break
    finally:
        consumer.close()
    return asm
