"""Validation of incoming reports against the dataset spec, with one-line dead-letter reasons.

A report is rejected (reason in brackets) when it is not JSON (``malformed-json``), not an object
(``not-an-object``), lacks a required field (``missing-field``; with ``on_missing = "drop"`` a
missing used value gives ``missing-value``), has an event time that does not parse by the declared
format, or is not ISO-8601 with a UTC offset when none is declared (``invalid-time``), has a QI value
that is not a leaf of its hierarchy (``value-not-in-hierarchy``), that does not parse as a number,
whole number or date in the declared format (``invalid-value``) or an ambiguous day/month date
(``ambiguous-date``), or has a sensitive value missing from the severity table when the spec has one
and no default severity (``unknown-offence``). The shared parsing rules are in core/contract.py
(the input contract of docs/spec.md); :mod:`stream.intake.contract` holds the per-report pieces.
The guards of :mod:`stream.intake.guards` run first: a Kafka tombstone (``tombstone``), an oversized message
(``too-large``), JSON nested beyond the parser's depth (``malformed-json``), an unsafe station id
(``invalid-station``) or report id (``invalid-report-id``), overlong values or control characters
(``invalid-value``) and event times outside the plausible range (``implausible-time``).
:meth:`ReportValidator.screen` never raises: anything unforeseen is ``internal-error`` naming the
exception class.

Accepted reports lose their direct identifiers here: only the used columns (QIs, sensitive,
pass-through) survive, plus the keyed fingerprints built by :func:`to_incoming`. The station id and
report id of a :class:`Clean` report are in their canonical form (:func:`core.canonical.canonical_id`:
trimmed, ``08`` is ``8``), so every key built from them (fingerprint, window, pool, ledger, budget
block) is the same whichever way an export spells them. A station column value the spec's
``station_map`` lists is routed by its mapped id (area names with spaces are not station ids); a QI on
that column still sees the value itself.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from core.canonical import canonical_id, canonical_value
from core.encoding import Schema
from core.errors import AnonymizationError
from stream.intake.contract import apply_missing, declared_dates, event_time, value_rejection
from stream.intake.dead_letters import dead_letter
from stream.intake.fingerprints import content_fingerprint, content_hash, fingerprint, person_fingerprint
from stream.intake.guards import (
    Limits,
    check_payload_size,
    check_report_id,
    check_station_id,
    check_text,
    is_scalar,
    one_line,
    plausible_time,
    valid_station_id,
)
from stream.io.rejects import RejectDetail

if TYPE_CHECKING:  # the ledger (SQLAlchemy) is imported where reports are stored, not by `push`
    from db.ledger import IncomingReport, Rejection


@dataclass(frozen=True)
class Rejected:
    reason: str
    message: str
    station_id: str | None
    detail: RejectDetail | None = None  # field and raw value, for the station's own screen only


@dataclass(frozen=True)
class Clean:
    report_id: str
    station_id: str
    event_time: datetime
    data: dict[str, str]
    person: list[str]
    scope: str | None = None  # where the report id is unique: None = its station, "*" = department-wide
    canonical: dict[str, str] = field(default_factory=dict)  # per used column: :func:`core.canonical.canonical_value`


class ReportValidator:
    """Checks one report at a time; hierarchy look-ups are cached per (column, value)."""

    def __init__(self, schema: Schema, person_columns: tuple[str, ...] = (), limits: Limits | None = None) -> None:
        spec = schema.spec
        self.limits = limits or Limits()
        self.schema = schema
        self.id_col = spec.id_column or "report_id"
        self.global_ids = spec.id_scope == "global"
        self.station_col = spec.station_column or "station_id"
        self.station_map = {str(k).strip(): v for k, v in spec.station_map.items()}
        if bad := [v for v in self.station_map.values() if valid_station_id(v) is None]:
            from core.errors import SpecError

            raise SpecError(f"spec field 'station_map': {bad[0]!r} is not a station id (1-64 characters of "
                            "A-Z a-z 0-9 . _ - starting with a letter or digit)")
        self.time_col = spec.time_column or "event_time"
        self.used = spec.used_columns()
        self.required = [self.id_col, self.station_col, self.time_col]  # used columns: on_missing policy
        self.person_columns = tuple(person_columns)
        self.unknown = spec.unknown
        sens = spec.sensitive
        self.sensitive = sens.name if sens else None
        self.severity = set(sens.severity) if sens and sens.severity and sens.default_severity is None else None
        self._cache: dict[tuple[str, str], tuple[str, str] | None] = {}
        self._canon: dict[tuple[str, str], str] = {}

    def parse(self, raw: bytes | str | dict[str, Any] | None) -> dict[str, Any] | Rejected:
        if isinstance(raw, dict):
            return raw
        if raw is None:
            return Rejected("tombstone", "message has no value (a Kafka tombstone)", None)
        if not isinstance(raw, bytes | str):
            return Rejected("malformed-json", f"payload is a {type(raw).__name__}, expected bytes", None)
        too_big = check_payload_size(raw, self.limits)
        if too_big is not None:
            return Rejected(*too_big, None)
        try:
            obj = json.loads(raw)
        except RecursionError:
            return Rejected("malformed-json", "payload is JSON nested too deeply", None)
        except (ValueError, UnicodeDecodeError) as exc:
            return Rejected("malformed-json", f"payload is not valid JSON: {one_line(str(exc), 80)}", None)
        if not isinstance(obj, dict):
            return Rejected("not-an-object", f"payload is a JSON {type(obj).__name__}, expected an object", None)
        return obj

    def _value_error(self, col: str, value: str) -> tuple[str, str] | None:
        """``(reason, message)`` if the hierarchy of ``col`` refuses ``value`` (cached)."""
        key = (col, value)
        if key not in self._cache:
            msg = None
            try:
                self.schema.hierarchies[col].check_value(value, self.unknown)
            except AnonymizationError as exc:
                msg = value_rejection(self.schema.spec, col, exc)
            except (ValueError, TypeError):
                msg = ("invalid-value", f"field '{col}': value is refused by its hierarchy")
            if len(self._cache) > 200_000:
                self._cache.clear()
            self._cache[key] = msg
        return self._cache[key]

    def canonical(self, col: str, value: str) -> str:
        """The canonical form of ``value`` in ``col`` (what content fingerprints hash; cached)."""
        key = (col, value)
        out = self._canon.get(key)
        if out is None:
            if len(self._canon) > 200_000:
                self._canon.clear()
            out = self._canon[key] = canonical_value(self.schema.hierarchies.get(col), value)
        return out

    def screen(self, raw: bytes | str | dict[str, Any] | None, now: datetime | None = None) -> Clean | Rejected:
        """:meth:`check` that never raises: an unforeseen failure is ``internal-error`` (exception class)."""
        try:
            return self.check(raw, now)
        except Exception as exc:  # the last resort: one message never fails its batch
            return Rejected("internal-error", f"validation failed with {type(exc).__name__}", None)

    def station_value(self, obj: dict[str, Any]) -> Any:
        """The report's station as the intake keys it: its station column's value, through the spec's
        ``station_map`` when the value is listed there (the column's own value is what a QI sees)."""
        value = obj.get(self.station_col)
        if self.station_map and isinstance(value, str | int) and not isinstance(value, bool):
            return self.station_map.get(str(value).strip(), value)
        return value

    def guard_fields(self, obj: dict[str, Any]) -> tuple[str, str] | None:
        """Sizes and characters of the id, station, used and person fields (:mod:`stream.intake.guards`)."""
        problem = check_station_id(self.station_col, self.station_value(obj))
        problem = problem or check_report_id(self.id_col, obj.get(self.id_col))
        for col in (*self.used, *self.person_columns):
            problem = problem or check_text(col, obj.get(col))
        when = obj.get(self.time_col)
        if problem is None and (not is_scalar(when) or len(str(when)) > 64):
            problem = "invalid-time", f"field '{self.time_col}' must be an ISO-8601 time string"
        return problem

    def check(self, raw: bytes | str | dict[str, Any] | None, now: datetime | None = None) -> Clean | Rejected:
        obj = self.parse(raw)
        if isinstance(obj, Rejected):
            return obj
        station = valid_station_id(self.station_value(obj))  # None unless safe to store and count
        missing = [c for c in self.required if obj.get(c) is None or (isinstance(obj[c], str) and not obj[c].strip())]
        if missing:
            return Rejected("missing-field", f"required field(s) missing or empty: {', '.join(missing)}", station)
        problem = self.guard_fields(obj)
        if problem is not None:
            return Rejected(*problem, station)
        assert station is not None
        text = str(obj[self.time_col]).strip()
        when = event_time(self.schema.spec, self.time_col, text)
        if isinstance(when, tuple):
            return Rejected(*when, station, RejectDetail(self.time_col, text))
        utc = plausible_time(self.time_col, when, now or datetime.now(UTC), self.limits)
        if isinstance(utc, tuple):
            return Rejected(*utc, station, RejectDetail(self.time_col, text))
        refused = apply_missing(self.schema.spec, obj, self.used) or declared_dates(self.schema.spec, obj,
                                                                                      self.time_col)
        if refused is not None:
            return Rejected(*refused[:2], station, *refused[2:])
        data: dict[str, str] = {}
        for col in self.used:
            value = obj[col]
            if isinstance(value, dict | list):
                return Rejected("invalid-value", f"field '{col}' must be a scalar", station)
            data[col] = str(value).strip()
        for q in self.schema.qi_names:
            err = self._value_error(q, data[q])
            if err is not None:
                return Rejected(*err, station, RejectDetail(q, data[q]))
        if self.severity is not None and self.sensitive and data[self.sensitive] not in self.severity:
            return Rejected("unknown-offence", f"field '{self.sensitive}': value is not in the severity table",
                            station, RejectDetail(self.sensitive, data[self.sensitive]))
        person = [str(obj.get(c, "") or "") for c in self.person_columns]
        canonical = {c: self.canonical(c, v) for c, v in data.items()}
        return Clean(canonical_id(obj[self.id_col]), station, utc, data, person, "*" if self.global_ids else None,
                     canonical)


def to_incoming(clean: Clean, key: bytes, window_key: str, person_guard: bool,
                content_columns: tuple[str, ...] = ()) -> IncomingReport:
    """Drop identifiers: keep the used columns, the keyed report fingerprint, the keyed content
    fingerprint (see :func:`stream.intake.fingerprints.content_fingerprint`) and (optionally) the person's."""
    from db.ledger import IncomingReport

    return IncomingReport(
        fingerprint=fingerprint(key, clean.scope or clean.station_id, clean.report_id),
        person_fp=person_fingerprint(key, clean.person) if person_guard and clean.person else None,
        content_hash=content_hash({"t": clean.event_time.isoformat(), **clean.data}),
        station_id=clean.station_id, window_key=window_key, event_time=clean.event_time, data=clean.data,
        content_fp=content_fingerprint(key, clean.person, content_fields(clean, content_columns)))


def content_fields(clean: Clean, columns: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    """The (name, value) pairs of the content fingerprint: the parsed event time (UTC) plus ``columns``
    of the report's used columns (all of them, i.e. the QIs and the sensitive value, when empty), each
    in its canonical form (:func:`core.canonical.canonical_value`: a date as its day, a number as its
    value, text trimmed and case-folded), never as the raw cell text."""
    names = [c for c in (columns or tuple(clean.data)) if c in clean.data]
    return [("event_time", clean.event_time.astimezone(UTC).isoformat()),
            *((c, clean.canonical.get(c) or canonical_value(None, clean.data[c])) for c in names)]


@dataclass
class Screened:
    """A batch split by :func:`screen_batch`: every message is in exactly one of ``accepted`` / ``rejections``."""

    accepted: list[IncomingReport]
    raws: list[bytes | str | None]  # the raw message of each accepted report (for the ledger's refusals)
    rejections: list[Rejection]
    dead: list[dict[str, Any]]  # one bounded dead letter per rejection
    accepted_at: list[int] = field(default_factory=list)  # each accepted report's place in the batch
    rejected_at: list[int] = field(default_factory=list)  # each rejection's place in the batch


def screen_batch(validator: ReportValidator, values: Sequence[bytes | str | None], key: bytes,
                 window_key_for: Callable[[str], str], person_guard: bool, now: datetime,
                 content_columns: tuple[str, ...] = ()) -> Screened:
    """Validate a batch and drop identifiers; never raises (``internal-error`` is the last resort)."""
    from db.ledger import Rejection

    out = Screened([], [], [], [])
    for at, raw in enumerate(values):
        res = validator.screen(raw, now)
        if not isinstance(res, Rejected):
            try:
                out.accepted.append(to_incoming(res, key, window_key_for(res.station_id), person_guard,
                                                 content_columns))
                out.raws.append(raw)
                out.accepted_at.append(at)
                continue
            except Exception as exc:
                res = Rejected("internal-error", f"ingest failed with {type(exc).__name__}", res.station_id)
        tally_key = window_key_for(res.station_id) if res.reason == "missing-value" and res.station_id else None
        out.rejections.append(Rejection(res.station_id or "unknown", res.reason, res.message, tally_key))
        out.dead.append(dead_letter(raw, res.reason, res.message, res.station_id, now))
        out.rejected_at.append(at)
    return out
