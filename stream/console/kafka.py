"""Broker look-ups of the console: consumer lag, the worker group, and reading a release back.

kafka-python (3.x API names: ``list_group_offsets``, ``describe_groups``), no consumer group of our
own: the read-back consumer uses ``assign()``, so there is nothing to join (tansu answers a join only
after half the session timeout, see DESIGN.md); the session/heartbeat values from DESIGN.md are set
anyway, and every request has a short timeout so a missing broker makes a page say so instead of
hanging. tansu's "latest offset" can be off when the last batch held several records, so the lag
is an estimate there.
"""

from __future__ import annotations

import json
import time
from typing import Any

from stream.ops.kafka_clients import open_client

# Short timeouts; the bootstrap timeout is called api_version_auto_timeout_ms before kafka-python 3.
CLIENT = {"request_timeout_ms": 5000, "bootstrap_timeout_ms": 4000, "api_version_auto_timeout_ms": 4000,
          "reconnect_backoff_max_ms": 1000, "metadata_max_age_ms": 5000,
          "session_timeout_ms": 6000, "heartbeat_interval_ms": 2000}


def _config(cls: Any, timeout_s: float | None = None, **extra: Any) -> dict[str, Any]:
    """CLIENT options this kafka-python class knows, plus ``extra``. With ``timeout_s`` the bootstrap and
    request timeouts end within it, so a look-up abandoned at its deadline does not outlive the page."""
    known = getattr(cls, "DEFAULT_CONFIG", {})
    options = dict(CLIENT)
    if timeout_s is not None:
        ms = max(200, int(timeout_s * 900))
        for name in ("bootstrap_timeout_ms", "api_version_auto_timeout_ms", "request_timeout_ms"):
            options[name] = min(options[name], ms)
    return {**{k: v for k, v in options.items() if k in known}, **extra}


def _admin(bootstrap: list[str], timeout_s: float | None = None) -> Any:
    from kafka.admin import KafkaAdminClient

    return open_client(KafkaAdminClient, **_config(KafkaAdminClient, timeout_s, bootstrap_servers=bootstrap,
                                                   client_id="anonstream-console-admin"))


def _consumer(bootstrap: list[str], client_id: str, timeout_s: float | None = None) -> Any:
    from kafka import KafkaConsumer

    return open_client(KafkaConsumer, **_config(KafkaConsumer, timeout_s, bootstrap_servers=bootstrap, group_id=None,
                                                enable_auto_commit=False, auto_offset_reset="earliest",
                                                client_id=client_id, consumer_timeout_ms=1000))


def _partitions(consumer: Any, topic: str, wait_s: float = 3.0) -> list[Any]:
    from kafka import TopicPartition

    deadline = time.monotonic() + wait_s
    parts = consumer.partitions_for_topic(topic)
    while not parts and time.monotonic() < deadline:
        time.sleep(0.1)
        parts = consumer.partitions_for_topic(topic)
    return [TopicPartition(topic, p) for p in sorted(parts or [])]


def consumer_lag(bootstrap: list[str], group: str, topic: str, timeout_s: float | None = None) -> dict[str, Any]:
    """Per partition of ``topic``: end offset, the group's committed offset and the lag."""
    consumer = _consumer(bootstrap, "anonstream-console-lag", timeout_s)
    admin = None
    try:
        parts = _partitions(consumer, topic)
        if not parts:
            return {"topic": topic, "group": group, "partitions": [], "total": None,
                    "error": f"topic {topic} not found"}
        ends = consumer.end_offsets(parts)
        starts = consumer.beginning_offsets(parts)
        admin = _admin(bootstrap, timeout_s)
        committed_all = admin.list_group_offsets({group: parts}).get(group, {})
        rows, total, notes = [], 0, []
        for tp in parts:
            meta = committed_all.get(tp)
            committed = getattr(meta, "offset", None)
            committed = committed if committed is not None and committed >= 0 else None
            base = committed if committed is not None else starts.get(tp, 0)
            raw = int(ends.get(tp, 0)) - int(base)
            lag = max(0, raw)
            if raw < 0:
                notes.append(f"partition {tp.partition}: committed offset beyond the broker's end offset")
            total += lag
            rows.append({"partition": tp.partition, "end": int(ends.get(tp, 0)), "committed": committed,
                         "lag": lag})
        return {"topic": topic, "group": group, "partitions": rows, "total": total, "error": None,
                "notes": notes}
    finally:
        consumer.close()
        if admin is not None:
            admin.close()


def group_status(bootstrap: list[str], group: str, timeout_s: float | None = None) -> dict[str, Any]:
    """State and member count of the workers' consumer group (members' client ids, no hosts)."""
    admin = _admin(bootstrap, timeout_s)
    try:
        try:
            desc = admin.describe_groups([group])
        except ValueError:
            # tansu sets authorized-operation bits kafka-python 3.0 cannot decode ("15 is not a valid
            # ACLOperation") even when none were requested; we do not need them, so skip that decoding.
            admin._process_acl_operations = lambda obj: obj
            desc = admin.describe_groups([group])
    finally:
        admin.close()
    info = desc.get(group, {}) if isinstance(desc, dict) else {}
    if not isinstance(info, dict) and isinstance(desc, list) and desc:  # older kafka-python: a list of tuples
        info = getattr(desc[0], "_asdict", lambda: {})()
    members = info.get("members") or []
    state = info.get("group_state") or info.get("state")
    return {"group": group, "state": str(state) if state is not None else None, "members": len(members),
            "member_ids": sorted(str(m.get("client_id") if isinstance(m, dict) else getattr(m, "client_id", "?"))
                                 for m in members)}


def read_release(bootstrap: list[str], topic: str, release_id: str, timeout_s: float = 30.0) -> dict[str, Any]:
    """Every message of ``release_id`` in ``topic`` up to the end offsets at call time (all partitions)."""
    consumer = _consumer(bootstrap, "anonstream-console-reverify")
    key = release_id.encode()
    found: list[dict[str, Any]] = []
    try:
        parts = _partitions(consumer, topic)
        if not parts:
            raise LookupError(f"topic {topic} not found on the broker")
        consumer.assign(parts)
        consumer.seek_to_beginning(*parts)
        ends = consumer.end_offsets(parts)
        remaining = {tp for tp in parts if ends.get(tp, 0) > 0}
        deadline = time.monotonic() + timeout_s
        scanned = 0
        while remaining and time.monotonic() < deadline:
            batch = consumer.poll(timeout_ms=500, max_records=5000)
            for msgs in batch.values():
                for m in msgs:
                    scanned += 1
                    if m.key == key:
                        obj = json.loads(m.value)
                        if obj.get("release_id") == release_id:
                            found.append(obj)
            for tp in list(remaining):
                if consumer.position(tp) >= ends[tp]:
                    remaining.discard(tp)
        return {"messages": found, "scanned": scanned, "complete": not remaining,
                "end_offsets": {str(tp.partition): int(ends.get(tp, 0)) for tp in parts}}
    finally:
        consumer.close()
