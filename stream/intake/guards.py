"""Input guards: sizes, characters and value ranges of a report, checked before anything touches the database.

These checks run on every message, accepted or rejected (a rejected report's station id is written
to the DLQ counters, so it must be as safe as an accepted one's). Each returns ``None`` when the
value is fine, else a ``(reason, message)`` pair; messages name the field, never echo the value.

* :func:`check_payload_size`: a message larger than ``max_report_bytes`` is ``too-large``;
* :func:`check_station_id`: 1-64 characters of ``A-Z a-z 0-9 . _ -`` starting with a letter or
  digit (it becomes part of window keys, Kafka keys and database rows), else ``invalid-station``;
  :func:`valid_station_id` gives a valid id in its canonical form (``08`` is station ``8``);
* :func:`check_report_id`: at most 128 printable characters, else ``invalid-report-id``;
* :func:`check_text`: field values at most 256 characters without control characters (NUL
  included), else ``invalid-value``;
* :func:`plausible_time`: the event time converted to UTC (an offset that pushes it out of the
  representable range is an ``implausible-time``) and within ``[now - horizon, now + max_future]``.

:func:`bounded_payload` makes a dead letter's payload small enough for any producer: the first
``DLQ_PAYLOAD_CHARS`` characters, the original length in bytes and a SHA-256 of the whole message.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from core.canonical import station_id

STATION_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
MAX_REPORT_ID = 128
MAX_TEXT = 256
# A dead letter's payload excerpt: JSON escaping may make a character 12 bytes (\ud83d\ude00), so
# 16,384 characters stay under 200 KB, far below the producers' 1 MB max_request_size.
DLQ_PAYLOAD_CHARS = 16_384
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")

Problem = tuple[str, str] | None


def _setting_default(name: str) -> Callable[[], int]:
    """The default of setting ``name``, declared once in :class:`stream.config.settings.Settings` (read on
    first use, so that importing this module does not load the settings)."""
    def default() -> int:
        from stream.config.settings import Settings

        return int(Settings.model_fields[name].default)

    return default


@dataclass(frozen=True)
class Limits:
    """Bounds on a single report (from the settings; the defaults are the settings' own)."""

    max_report_bytes: int = field(default_factory=_setting_default("max_report_bytes"))
    max_future_s: int = field(default_factory=_setting_default("event_time_max_future_s"))
    horizon_days: int = field(default_factory=_setting_default("event_time_horizon_days"))

    @classmethod
    def from_settings(cls, settings: Any) -> Limits:
        return cls(max_report_bytes=settings.max_report_bytes, max_future_s=settings.event_time_max_future_s,
                   horizon_days=settings.event_time_horizon_days)


def check_payload_size(raw: bytes | str, limits: Limits) -> Problem:
    size = len(raw)
    if size > limits.max_report_bytes:
        return "too-large", f"message is {size} bytes, more than the {limits.max_report_bytes} allowed"
    return None


_SCALARS = (str, int, float, bool)


def is_scalar(value: Any) -> bool:
    return isinstance(value, _SCALARS)


def valid_station_id(value: Any) -> str | None:
    """The station id in its canonical form (:func:`core.canonical.station_id`: trimmed, ``08`` is
    ``8``) if it is safe to store (see :data:`STATION_RE`), else None."""
    if isinstance(value, bool) or not isinstance(value, str | int):
        return None
    text = str(value).strip() if isinstance(value, str) else str(value) if abs(value) < 10**60 else ""
    return station_id(text) if STATION_RE.fullmatch(text) else None


def station_ids(values: Iterable[Any]) -> tuple[list[str], list[Any]]:
    """Station ids named from outside (a CLI option, a console form) in their canonical form, each once
    and in order, and the values that are not valid station ids."""
    good: dict[str, None] = {}
    bad: list[Any] = []
    for value in values:
        canon = valid_station_id(value)
        if canon is None:
            bad.append(value)
        else:
            good[canon] = None
    return list(good), bad


def check_station_id(col: str, value: Any) -> Problem:
    if valid_station_id(value) is None:
        return "invalid-station", (f"field '{col}' must be 1-64 characters of A-Z a-z 0-9 . _ - "
                                   "starting with a letter or digit")
    return None


def check_report_id(col: str, value: Any) -> Problem:
    if not is_scalar(value) or isinstance(value, bool):
        return "invalid-report-id", f"field '{col}' must be a string or a number"
    text = str(value).strip() if not isinstance(value, int) or abs(value) < 10**60 else "x" * (MAX_REPORT_ID + 1)
    if len(text) > MAX_REPORT_ID or _CONTROL.search(text):
        return "invalid-report-id", f"field '{col}' must be at most {MAX_REPORT_ID} printable characters"
    return None


def check_text(col: str, value: Any) -> Problem:
    """A used or person column: a scalar, at most :data:`MAX_TEXT` characters, no control characters."""
    if value is None or (type(value) is str and len(value) <= MAX_TEXT and _CONTROL.search(value) is None):
        return None  # the common case, first
    if not is_scalar(value):
        return "invalid-value", f"field '{col}' must be a scalar"
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**60:
        return "invalid-value", f"field '{col}' is longer than {MAX_TEXT} characters"
    text = str(value)
    if len(text) > MAX_TEXT:
        return "invalid-value", f"field '{col}' is longer than {MAX_TEXT} characters"
    if _CONTROL.search(text):
        return "invalid-value", f"field '{col}' contains control characters"
    return None


def plausible_time(col: str, when: datetime, now: datetime, limits: Limits) -> datetime | tuple[str, str]:
    """``when`` in UTC if it lies within the plausible range around ``now``, else a problem."""
    try:
        utc = when.astimezone(UTC)
    except (OverflowError, ValueError):
        return "implausible-time", f"field '{col}' is outside the representable time range"
    try:
        earliest = now - timedelta(days=limits.horizon_days)
        latest = now + timedelta(seconds=limits.max_future_s)
    except OverflowError:  # absurd settings; refuse rather than crash
        return "implausible-time", f"field '{col}' cannot be checked against the plausible range"
    if utc > latest:
        return "implausible-time", (f"field '{col}' is more than {limits.max_future_s} s in the future")
    if utc < earliest:
        return "implausible-time", f"field '{col}' is older than the {limits.horizon_days}-day horizon"
    return utc


def one_line(text: str, limit: int = 300) -> str:
    """A message safe for a log line, a database row and a Kafka message: no control characters, bounded."""
    return _CONTROL.sub(" ", text)[:limit]


def bounded_payload(raw: bytes | str | None) -> dict[str, Any]:
    """A dead letter's payload fields: an excerpt, the original size in bytes and a SHA-256 of the whole."""
    if raw is None:
        return {"payload": "", "payload_bytes": 0, "payload_sha256": None, "truncated": False}
    data = raw if isinstance(raw, bytes) else str(raw).encode("utf-8", "replace")
    full = data.decode("utf-8", "replace")
    return {"payload": full[:DLQ_PAYLOAD_CHARS], "payload_bytes": len(data),
            "payload_sha256": hashlib.sha256(data).hexdigest(), "truncated": len(full) > DLQ_PAYLOAD_CHARS}
