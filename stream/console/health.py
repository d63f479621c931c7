"""Worker, broker and lag side of the health view (a mixin of :class:`stream.console.service.ConsoleService`).

Worker status combines three signals, any of which means "running": a fresh heartbeat in the
ledger (``db.status``, written by each worker), members in the workers' consumer group (the faust
app id), or the in-process status provider when the console runs inside the worker. Broker calls
run in a small thread pool with a deadline, so a missing broker degrades to an ``error`` field.
"""

from __future__ import annotations

import concurrent.futures
import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from db.session import Database
from stream.config.settings import Settings

log = logging.getLogger(__name__)
_POOL = concurrent.futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="console-broker")


class BrokerHealth:
    settings: Settings
    db: Database
    status_provider: Callable[[], dict[str, Any]] | None
    broker_timeout_s: float
    lag_cache_s: float
    _lag: tuple[float, dict[str, Any]] | None

    def _broker_call(self, fn: Callable[..., dict[str, Any]], *args: Any) -> dict[str, Any]:
        if not self.settings.broker_url:
            return {"error": "no broker configured (ANONSTREAM_BROKER_URL / --broker)"}
        fut = _POOL.submit(fn, self.settings.bootstrap_servers(), *args, timeout_s=self.broker_timeout_s)
        try:
            return fut.result(timeout=self.broker_timeout_s)
        except concurrent.futures.TimeoutError:
            return {"error": f"broker did not answer within {self.broker_timeout_s:.0f}s"}
        except Exception as exc:
            return {"error": broker_error(exc)}

    def lag(self) -> dict[str, Any]:
        from stream.console.kafka import consumer_lag

        now = time.monotonic()
        if self._lag is not None and now - self._lag[0] < self.lag_cache_s:
            return self._lag[1]
        from stream.config.feeds import feeds

        inputs = {f.topic_reports: f.feed for f in feeds(self.settings)}
        parts = {topic: self._broker_call(consumer_lag, self.settings.app_id, topic) for topic in inputs}
        out = next(iter(parts.values())) if len(parts) == 1 else _combined(parts, inputs)
        self._lag = (now, out)
        return out

    def worker_status(self, activity: dict[str, Any]) -> dict[str, Any]:
        from stream.console.kafka import group_status

        out: dict[str, Any] = {"activity": activity}
        if self.status_provider is not None:
            try:
                out["in_process"] = self.status_provider()
            except Exception as exc:
                out["in_process"] = {"error": f"its status could not be read ({broker_error(exc)})"}
        out["heartbeats"] = beats = self._heartbeats()
        group = self._broker_call(group_status, self.settings.app_id)
        out["group"] = group
        members = group.get("members")
        in_process = out.get("in_process") or {}
        if (any(b["alive"] for b in beats) or (isinstance(members, int) and members > 0)
                or (in_process and not in_process.get("error"))):
            out["status"] = "running"
        elif beats:
            out["status"] = "stopped (no recent heartbeat)"
        elif group.get("error"):
            out["status"] = "unknown"
        else:
            out["status"] = "no worker in the consumer group"
        return out

    def _heartbeats(self) -> list[dict[str, Any]]:
        """Worker heartbeats from the ledger (``db.status``), when the schema has them."""
        try:
            from db.status import workers
        except ImportError:
            return []
        try:
            rows = workers(self.db)
        except Exception as exc:  # older schema without the table
            log.debug("console: no worker heartbeats (%s)", type(exc).__name__)
            return []
        now = datetime.now(UTC)
        limit = max(30.0, 5 * self.settings.tick_interval_s)
        out = []
        for w in rows:
            beat = w.get("heartbeat_at")
            age = (now - beat).total_seconds() if isinstance(beat, datetime) else None
            stats = w.get("stats") or {}
            out.append({"worker": w.get("id"), "heartbeat_age_s": round(age, 1) if age is not None else None,
                        "alive": age is not None and age <= limit, "partitions": w.get("partitions") or [],
                        "stats": {k: v for k, v in stats.items() if isinstance(v, int | float | str | bool)}})
        return out


def broker_error(exc: BaseException) -> str:
    """A broker failure in words (never an exception repr): what happened, the client's own message last."""
    from stream.ops.locate import unreachable_message

    known = unreachable_message(exc)
    if known:
        return known
    detail = str(exc).strip().strip("()").rstrip(",")[:160]
    name = type(exc).__name__
    if "Timeout" in name:
        return "the broker did not answer in time" + (f" ({detail})" if detail else "")
    return f"the broker refused the request ({name}{': ' + detail if detail else ''})"


def _combined(parts: dict[str, dict[str, Any]], inputs: dict[str, str]) -> dict[str, Any]:
    """The lags of several feeds' input topics as one (partitions named ``<feed>:<partition>``)."""
    rows, notes, errors, per_feed = [], [], [], {}
    for topic, lag in parts.items():
        feed = inputs[topic]
        if lag.get("error"):
            errors.append(f"{feed}: {lag['error']}")
            continue
        per_feed[feed] = lag.get("total")
        rows += [r | {"partition": f"{feed}:{r['partition']}"} for r in lag.get("partitions") or []]
        notes += [f"{feed}: {n}" for n in lag.get("notes") or []]
    group = next((lag.get("group") for lag in parts.values() if lag.get("group")), None)
    return {"topic": ", ".join(parts), "group": group, "partitions": rows, "feeds": per_feed,
            "total": sum(v for v in per_feed.values() if v is not None), "error": "; ".join(errors) or None,
            "notes": notes}
