"""One log format for every command and process: plain text, or JSON lines (``ANONSTREAM_LOG_FORMAT=json``).

* Text: ``2026-01-01T00:00:00Z INFO stream.worker.service: message [release=… window=… station=…]``.
* JSON: one object per line with ``time``, ``level``, ``logger``, ``message`` and, when the call
  passed them with ``extra=``, ``release_id``, ``window`` and ``station`` as fields (see :func:`ctx`):
  a line about a window or a release has both ``window`` and ``release_id`` (null while a window has
  no release yet), so one query finds every line of a window or of a release.

The Kafka client libraries (kafka-python, aiokafka) log connections at INFO and whole payloads at
DEBUG, and a payload carries a report's identifiers and quasi-identifiers. Their loggers are kept
at WARNING whatever ``-v`` says; ``ANONSTREAM_CLIENT_LOG_LEVEL=info`` lowers them to INFO, never to
DEBUG. Nothing in this service logs a report's identifier or QI values: messages carry counts,
release ids, window keys and station ids only.

Warnings a healthy worker prints at start-up that ask nothing of anyone are dropped at their own logger
(:class:`HarmlessFilter`, shown again with ``-v``): faust's "Missing sensor state for rebalance #N"
(logged at every start's first rebalance, which no sensor saw begin) and kafka-python's "Task … ran for
0.1xs (>0.100s threshold)" under one second (its event loop's step was slow while the worker imports
and connects; longer stalls still show).
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
from datetime import UTC, datetime
from typing import Any

# Loggers of the client libraries: WARNING by default, never below INFO (their DEBUG logs payloads).
CLIENT_LOGGERS = ("kafka", "aiokafka")
# Libraries that log values at INFO/DEBUG (SQLAlchemy logs statement parameters, i.e. a pending
# report's QI values, once its logger is enabled): WARNING always.
VALUE_LOGGERS = ("sqlalchemy", "numba", "matplotlib", "PIL", "fontTools")
# Chatty framework loggers: WARNING unless -v.
FRAMEWORK_LOGGERS = ("faust", "mode", "alembic", "aiohttp.access", "urllib3")
FIELDS = ("release_id", "window", "station")
SLOW_STEP = re.compile(r"ran for (\d+(?:\.\d+)?)s \(>")


def _slow_step_under_1s(message: str) -> bool:
    m = SLOW_STEP.search(message)
    return m is not None and float(m.group(1)) < 1.0


# logger -> what marks a harmless warning of it (the module docstring says why each is harmless)
HARMLESS = {"faust.app.base": lambda m: "Missing sensor state" in m, "kafka.net.selector": _slow_step_under_1s}


class HarmlessFilter(logging.Filter):
    """Drops the known-harmless warnings of one logger (:data:`HARMLESS`)."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.rule = HARMLESS[name]

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.levelno <= logging.WARNING and self.rule(record.getMessage()))


def ctx(release_id: str | None = None, window: str | None = None, station: str | None = None) -> dict[str, Any]:
    """``extra=`` for a log call: the fields the JSON format carries (never a report's values). A line about
    a window or a release carries both ``window`` and ``release_id``, the one not known as null."""
    out: dict[str, Any] = {"release_id": release_id, "window": window} if release_id or window else {}
    return out | ({"station": station} if station is not None else {})


def release_ctx(release_id: str, manifest: bytes) -> dict[str, Any]:
    """:func:`ctx` of a release from its encoded manifest (its ``window.id``)."""
    try:
        window = (json.loads(manifest).get("window") or {}).get("id")
    except (ValueError, AttributeError):
        window = None
    return ctx(release_id, window if isinstance(window, str) else None)


def _utc(record: logging.LogRecord) -> str:
    return datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {"time": _utc(record), "level": record.levelname, "logger": record.name,
                               "message": record.getMessage(), "pid": record.process}
        for name in FIELDS:
            if hasattr(record, name):  # passed with extra= (None: the line's window has no release yet)
                value = getattr(record, name)
                out[name] = None if value is None else str(value)
        if record.exc_info and record.exc_info[0] is not None:
            out["exception"] = self.formatException(record.exc_info)
        return json.dumps(out, ensure_ascii=False)


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        extra = " ".join(f"{n.split('_')[0]}={getattr(record, n)}" for n in FIELDS
                         if getattr(record, n, None) is not None)
        line = f"{_utc(record)} {record.levelname} {record.name}: {record.getMessage()}" + (
            f" [{extra}]" if extra else "")
        if record.exc_info and record.exc_info[0] is not None:
            line += "\n" + self.formatException(record.exc_info)
        return line


class ClientRepeatFilter(logging.Filter):
    """The Kafka clients log every failed connection attempt (several lines per retry): one line per
    kind of message per ``interval`` seconds, the next one saying how many were held back."""

    def __init__(self, interval: float = 60.0) -> None:
        super().__init__()
        self.interval = interval
        self._seen: dict[tuple[str, str], tuple[float, int]] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.name.startswith(CLIENT_LOGGERS):
            return True
        key = (record.name, re.sub(r"[\d.]+", "#", str(record.msg))[:120])
        last, held = self._seen.get(key, (0.0, 0))
        if record.created - last < self.interval:
            self._seen[key] = (last, held + 1)
            return False
        self._seen[key] = (record.created, 0)
        if held:
            record.msg = f"{record.msg} ({held} similar line(s) held back)"
        return True


class ConnectionTracebackFilter(logging.Filter):
    """A framework error that only says a service is unreachable (faust's worker logs the broker's
    ``KafkaConnectionError`` at start-up with a traceback) keeps its one line; the traceback is shown
    only when the handler runs at DEBUG (``-v``). Other errors keep their tracebacks."""

    def __init__(self, verbose: bool = False) -> None:
        super().__init__()
        self.verbose = verbose

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if exc is not None and not self.verbose and _is_connection_error(exc):
            record.exc_info = None
            record.exc_text = None
        return True


def _is_connection_error(exc: BaseException) -> bool:
    return isinstance(exc, ConnectionError) or any(
        c.__name__.endswith(("ConnectionError", "NodeNotReadyError")) for c in type(exc).__mro__)


def client_level(requested: str | None = None) -> int:
    """Level of the Kafka client loggers: WARNING, or INFO when asked; never DEBUG (payloads)."""
    name = (requested or os.environ.get("ANONSTREAM_CLIENT_LOG_LEVEL") or "warning").upper()
    level = logging.getLevelName(name)
    return max(level if isinstance(level, int) else logging.WARNING, logging.INFO)


def setup(verbose: bool = False, fmt: str | None = None, level: int | None = None) -> None:
    """Configure the root logger once per process (CLI, worker, release processes)."""
    fmt = (fmt or os.environ.get("ANONSTREAM_LOG_FORMAT") or "text").lower()
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    handler.addFilter(ClientRepeatFilter())
    handler.addFilter(ConnectionTracebackFilter(verbose))
    root = logging.getLogger()
    for h in list(root.handlers):
        root.removeHandler(h)
    root.addHandler(handler)
    root.setLevel(level if level is not None else (logging.DEBUG if verbose else logging.INFO))
    quiet(verbose)


def quiet(verbose: bool = False) -> None:
    """Client loggers at WARNING (INFO when asked), framework loggers at WARNING unless verbose; the known-harmless
    warnings dropped unless verbose."""
    for name in HARMLESS:
        logger = logging.getLogger(name)
        for old in [f for f in logger.filters if isinstance(f, HarmlessFilter)]:
            logger.removeFilter(old)
        if not verbose:
            logger.addFilter(HarmlessFilter(name))
    for name in CLIENT_LOGGERS:
        logging.getLogger(name).setLevel(client_level())
    for name in VALUE_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
    for name in FRAMEWORK_LOGGERS:
        logging.getLogger(name).setLevel(logging.INFO if verbose else logging.WARNING)
