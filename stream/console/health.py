"""Worker, broker and lag side of the health view (a mixin of :class:`stream.console.service.ConsoleService`).

A worker is alive by its own heartbeat row in the ledger (``db.status``, written every 5 s by each
worker, :mod:`stream.worker.heartbeat`): fresh (at most :meth:`BrokerHealth.beat_limit_s` old), not
marked ``stopped`` (a worker that exits cleanly marks its row), and, when it ran on this host, its pid
still running (a worker killed with SIGKILL is seen at once here, elsewhere when its heartbeat goes
stale). The in-process status provider (the console inside a worker) also counts. The broker's consumer
group is shown but never decides: a broker keeps a killed member listed for its session timeout or more.

Broker calls start with a bounded TCP connect (:data:`CONNECT_S`) and run in a small thread pool with a
deadline, so a broker that does not answer degrades to an ``error`` field within seconds; the broker the
instance file names (``anonstream run``'s embedded one) counts as configured, so it is never reported as
"no broker configured" when it is merely gone.
"""

from __future__ import annotations

import concurrent.futures
import logging
import socket
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from db.session import Database
from stream.config.settings import Settings

log = logging.getLogger(__name__)
_POOL = concurrent.futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="console-broker")
CONNECT_S = 2.0  # the TCP connect that tells a broker that does not answer from one that is slow
DOWN_CACHE_S = 3.0  # a broker found down is not asked again within this (one health view asks several times)


class BrokerHealth:
    settings: Settings
    db: Database
    status_provider: Callable[[], dict[str, Any]] | None
    broker_timeout_s: float
    lag_cache_s: float
    _lag: tuple[float, dict[str, Any]] | None
    _down: tuple[float, str] | None = None

    def broker_url(self) -> str | None:
        """The configured broker, or the one the instance file names (even when its `run` has exited)."""
        if self.settings.broker_url:
            return self.settings.broker_url
        from stream.ops.locate import read_state

        state = read_state(self.settings) or {}
        url = state.get("broker_url")
        return str(url) if url else None

    def broker_state(self) -> dict[str, Any]:
        """``{"url", "error"}``: ``error`` None when the broker accepts a connection (or none is configured)."""
        url = self.broker_url()
        if url is None:
            return {"url": None, "error": None}
        return {"url": url, "error": self._unreachable(url)}

    def _unreachable(self, url: str) -> str | None:
        """Why the broker at ``url`` does not accept a connection within :data:`CONNECT_S`, else None."""
        now = time.monotonic()
        if self._down is not None and now - self._down[0] < DOWN_CACHE_S:
            return self._down[1]
        errors = []
        for hostport in url.split("://", 1)[-1].split(","):
            host, _, port = hostport.strip().rpartition(":")
            try:
                with socket.create_connection((host or "127.0.0.1", int(port)), timeout=CONNECT_S):
                    self._down = None
                    return None
            except (OSError, ValueError) as exc:
                errors.append(f"{hostport}: {getattr(exc, 'strerror', None) or exc}")
        self._down = (now, "; ".join(errors))
        return self._down[1]

    def _broker_call(self, fn: Callable[..., dict[str, Any]], *args: Any) -> dict[str, Any]:
        url = self.broker_url()
        if not url:
            return {"error": "no broker configured (ANONSTREAM_BROKER_URL / --broker)"}
        down = self._unreachable(url)
        if down:
            return {"error": f"broker {url} does not answer ({down})"}
        bootstrap = [h.strip() for h in url.split("://", 1)[-1].split(",")]
        fut = _POOL.submit(fn, bootstrap, *args, timeout_s=self.broker_timeout_s)
        try:
            return fut.result(timeout=self.broker_timeout_s)
        except concurrent.futures.TimeoutError:
            self._down = (time.monotonic(), f"no answer within {self.broker_timeout_s:.0f}s")
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
        """``status``: ``running`` (a live heartbeat, or the in-process worker), ``stopped`` (every worker
        marked its row stopped), ``dead`` (a row went stale or its process is gone) or ``none`` (no row)."""
        from stream.console.kafka import group_status

        out: dict[str, Any] = {"activity": activity}
        if self.status_provider is not None:
            try:
                out["in_process"] = self.status_provider()
            except Exception as exc:
                out["in_process"] = {"error": f"its status could not be read ({broker_error(exc)})"}
        out["heartbeats"] = beats = self._heartbeats()
        out["group"] = self._broker_call(group_status, self.settings.app_id)  # shown, never decides
        in_process = out.get("in_process") or {}
        if any(b["alive"] for b in beats) or (in_process and not in_process.get("error")):
            out["status"] = "running"
        elif beats and all(b["state"] == "stopped" for b in beats):
            out["status"] = "stopped"
        else:
            out["status"] = "dead" if beats else "none"
        return out

    def beat_limit_s(self) -> float:
        """A heartbeat older than this is stale (5 s beats; a tick of a busy worker may delay one)."""
        return max(30.0, 5 * self.settings.tick_interval_s)

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
        out = []
        for w in rows:
            beat = w.get("heartbeat_at")
            age = (now - beat).total_seconds() if isinstance(beat, datetime) else None
            stats = w.get("stats") or {}
            state = beat_state(stats, age, self.beat_limit_s())
            out.append({"worker": w.get("id"), "heartbeat_age_s": round(age, 1) if age is not None else None,
                        "alive": state == "alive", "state": state, "partitions": w.get("partitions") or [],
                        "stats": {k: v for k, v in stats.items() if isinstance(v, int | float | str | bool)}})
        return out


def beat_state(stats: dict[str, Any], age: float | None, limit: float) -> str:
    """``alive``, ``stopped`` (marked by a clean exit), ``gone`` (its pid, on this host, is not running) or
    ``stale`` (no heartbeat within ``limit`` seconds)."""
    from stream.ops.locate import pid_alive

    if stats.get("state") == "stopped":
        return "stopped"
    if stats.get("host") == socket.gethostname() and isinstance(stats.get("pid"), int) and not pid_alive(stats["pid"]):
        return "gone"
    return "alive" if age is not None and age <= limit else "stale"


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
