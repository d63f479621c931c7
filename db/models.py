"""SQLAlchemy 2 models of the release ledger.

Only keyed fingerprints of report ids (HMAC of station + report id) and of persons are stored, never
raw identifiers; the pending pool keeps the quasi-identifiers and the sensitive value of reports that
are not yet released (their direct identifiers are dropped before they reach the database).

Tables:

* ``windows``: tumbling event-time windows per feed and key (station / region / global; keys of a feed
  other than ``default`` start with ``<feed>/``, docs/operations.md "Several feeds") and their state
  (``open`` -> ``closing`` -> ``released`` | ``carried`` (too small, reports wait for the next window) |
  ``held`` (verification or engine failure, needs review) | ``empty`` | ``merged`` (its reports moved to a
  later window of the key that one push completed, :mod:`db.batches`)); ``flush`` asks for a release now,
  whatever ``min_release_rows`` says (``anonstream windows flush``).
* ``batches``: the pushes (batches) of each station as their markers reached a worker: begun, ended
  with how many rows the station sent, and when the windows they completed were merged (:mod:`db.batches`).
* ``pending_reports``: the pending pool; ``state`` is ``pending``, ``released``, ``suppressed`` or
  ``blocked`` (linking guard).
* ``releases`` (+ ``release_records``): each release with its manifest and its records exactly as
  published, so a stored but unpublished release is re-published as stored.
* ``released_fingerprints``: one row per released report (primary key: the fingerprint), the ledger
  that blocks re-release; ``content_fp`` (keyed content fingerprint, survives re-keying) serves the
  ``content`` linking guard and ``person_fp`` the ``person`` guard. Batch runs given a ledger
  (``anonymize --ledger``) record their releases here too, under a ``batch:`` window.
* ``watermarks``: highest event time seen per window key.
* ``counters`` / ``dlq_events``: DLQ counts and reasons, duplicates and corrections per feed and station.
* ``station_controls``: per-station pause flag (operator console).
* ``stations``: the station registry per feed (production accepts reports of registered stations only).
* ``workers``: each worker's assigned input partitions and heartbeat.
* ``audit_log``: who did what, when (no record values).
* ``dp_blocks`` / ``dp_spends``: the privacy budget per block and its spends, in :mod:`db.budget`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, ClassVar

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    TypeDecorator,
    UniqueConstraint,
    false,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from db.states import WindowState  # noqa: F401  (re-exported: the values of Window.state)

NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class UTCDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC datetimes on every backend (SQLite stores them naive; we re-attach UTC)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to the ledger; use timezone-aware UTC")
        return value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def utcnow() -> datetime:
    return datetime.now(UTC)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)
    # for type checkers: every model here is mapped to a Table (DeclarativeBase types it as FromClause)
    __table__: ClassVar[Table]


class Window(Base):
    __tablename__ = "windows"

    id: Mapped[str] = mapped_column(String(200), primary_key=True)
    feed: Mapped[str] = mapped_column(String(32), default="default", server_default="default", index=True)
    key: Mapped[str] = mapped_column(String(120), index=True)
    start: Mapped[datetime] = mapped_column(UTCDateTime())
    end: Mapped[datetime] = mapped_column(UTCDateTime())
    seq: Mapped[int] = mapped_column(Integer, default=0)
    state: Mapped[str] = mapped_column(String(16), default="open", index=True)
    close_reason: Mapped[str | None] = mapped_column(String(32))
    hold_reason: Mapped[str | None] = mapped_column(Text)
    count: Mapped[int] = mapped_column(Integer, default=0)
    duplicates: Mapped[int] = mapped_column(Integer, default=0)
    dropped: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    """Reports of the key dropped by the spec's ``on_missing = "drop"`` while this was its latest open window."""
    last_input_at: Mapped[datetime] = mapped_column(UTCDateTime())
    claimed_by: Mapped[str | None] = mapped_column(String(120))
    claimed_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    lease_until: Mapped[datetime | None] = mapped_column(UTCDateTime())  # renewed by the closing worker
    closed_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    release_id: Mapped[str | None] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    flush: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    """Release now, at least k reports, whatever ``min_release_rows`` says (the operator asked)."""

    __table_args__ = (UniqueConstraint("key", "start", "seq"),)


class Batch(Base):
    """One push of one station, as its markers reached a worker (:mod:`stream.wire.markers`)."""

    __tablename__ = "batches"

    feed: Mapped[str] = mapped_column(String(32), primary_key=True, default="default", server_default="default")
    station_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    batch_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    key: Mapped[str] = mapped_column(String(120), index=True)
    begun_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    ended_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    rows: Mapped[int | None] = mapped_column(Integer)
    """Rows the station sent in this batch, as its end marker says."""
    merged_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    """When the windows this batch completed were merged (``windows.merge_batch``) and left to close."""


class PendingReport(Base):
    __tablename__ = "pending_reports"

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True,
                                    autoincrement=True)
    fingerprint: Mapped[str] = mapped_column(String(64), unique=True)
    person_fp: Mapped[str | None] = mapped_column(String(64), index=True)
    content_hash: Mapped[str] = mapped_column(String(64))
    content_fp: Mapped[str | None] = mapped_column(String(64))
    station_id: Mapped[str] = mapped_column(String(120), index=True)
    window_key: Mapped[str] = mapped_column(String(120))
    window_id: Mapped[str] = mapped_column(ForeignKey("windows.id"), index=True)
    event_time: Mapped[datetime] = mapped_column(UTCDateTime())
    received_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    state: Mapped[str] = mapped_column(String(16), default="pending")
    release_id: Mapped[str | None] = mapped_column(String(64), index=True)
    data: Mapped[dict[str, Any]] = mapped_column(JSON)
    counted_in: Mapped[str | None] = mapped_column(String(64))
    """Set while pending: the release whose manifest counted this report as ``held_back`` (its next
    manifest counts it as ``carried_in``, so a sum over manifests counts every report once)."""
    arrived_in: Mapped[str | None] = mapped_column(String(200), index=True)
    """The window the report was ingested into (a later window adopting it leaves this alone): reports of
    one station that arrived in one window are one export for the content guard's occurrence count."""

    __table_args__ = (Index("ix_pending_reports_key_state", "window_key", "state"),)


class Release(Base):
    __tablename__ = "releases"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    window_id: Mapped[str] = mapped_column(ForeignKey("windows.id"), unique=True)
    window_key: Mapped[str] = mapped_column(String(120), index=True)
    stations: Mapped[list[str]] = mapped_column(JSON)
    engine: Mapped[str] = mapped_column(String(64))
    params: Mapped[dict[str, Any]] = mapped_column(JSON)
    seed: Mapped[int] = mapped_column(BigInteger)
    k_achieved: Mapped[int] = mapped_column(Integer)
    l_achieved: Mapped[int | None] = mapped_column(Integer)
    information_loss: Mapped[float | None] = mapped_column(Float)
    metrics: Mapped[dict[str, Any]] = mapped_column(JSON)
    verification: Mapped[dict[str, Any]] = mapped_column(JSON)
    received: Mapped[int] = mapped_column(Integer)
    released: Mapped[int] = mapped_column(Integer)
    suppressed: Mapped[int] = mapped_column(Integer)
    held_back: Mapped[int] = mapped_column(Integer)
    blocked: Mapped[int] = mapped_column(Integer, default=0)
    checksum: Mapped[str] = mapped_column(String(64))
    manifest: Mapped[dict[str, Any]] = mapped_column(JSON)
    state: Mapped[str] = mapped_column(String(16), default="stored", index=True)
    publish_claimed_by: Mapped[str | None] = mapped_column(String(120))
    publish_claimed_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    publish_lease_until: Mapped[datetime | None] = mapped_column(UTCDateTime())  # renewed while publishing
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, index=True)
    published_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    publish_count: Mapped[int] = mapped_column(Integer, default=0)


class ReleaseRecords(Base):
    __tablename__ = "release_records"

    release_id: Mapped[str] = mapped_column(ForeignKey("releases.id"), primary_key=True)
    columns: Mapped[list[str]] = mapped_column(JSON)
    rows: Mapped[list[list[Any]]] = mapped_column(JSON)


class ReleasedFingerprint(Base):
    __tablename__ = "released_fingerprints"

    fingerprint: Mapped[str] = mapped_column(String(64), primary_key=True)
    release_id: Mapped[str] = mapped_column(ForeignKey("releases.id"), index=True)
    person_fp: Mapped[str | None] = mapped_column(String(64), index=True)
    content_fp: Mapped[str | None] = mapped_column(String(64), index=True)
    released_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class Watermark(Base):
    __tablename__ = "watermarks"

    key: Mapped[str] = mapped_column(String(120), primary_key=True)
    event_time: Mapped[datetime] = mapped_column(UTCDateTime())
    pending_duplicates: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    """Duplicates and corrections of the key that arrived while it had no open window: the key's next
    release counts them in its manifest (and subtracts them here in the same transaction)."""
    pending_dropped: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    """The same for reports dropped for a missing value (``on_missing = "drop"``)."""


class Counter(Base):
    __tablename__ = "counters"

    feed: Mapped[str] = mapped_column(String(32), primary_key=True, default="default", server_default="default")
    station_id: Mapped[str] = mapped_column(String(120), primary_key=True)
    kind: Mapped[str] = mapped_column(String(32), primary_key=True)
    reason: Mapped[str] = mapped_column(String(64), primary_key=True)
    count: Mapped[int] = mapped_column(BigInteger, default=0)
    last_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class DlqEvent(Base):
    __tablename__ = "dlq_events"

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True,
                                    autoincrement=True)
    at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, index=True)
    feed: Mapped[str] = mapped_column(String(32), default="default", server_default="default")
    station_id: Mapped[str] = mapped_column(String(120))
    reason: Mapped[str] = mapped_column(String(64))
    message: Mapped[str] = mapped_column(Text)


class StationControl(Base):
    __tablename__ = "station_controls"

    station_id: Mapped[str] = mapped_column(String(120), primary_key=True)
    paused: Mapped[bool] = mapped_column(Boolean, default=False)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    updated_by: Mapped[str | None] = mapped_column(String(120))


class Station(Base):
    """A station known to a feed: registered by an operator (``anonstream stations add [--feed F]``) or on
    first sight (embedded)."""

    __tablename__ = "stations"

    feed: Mapped[str] = mapped_column(String(32), primary_key=True, default="default", server_default="default")
    station_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    source: Mapped[str] = mapped_column(String(16), default="operator")
    added_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    added_by: Mapped[str | None] = mapped_column(String(120))
    note: Mapped[str | None] = mapped_column(String(200))


class WorkerStatus(Base):
    """One row per worker: its input partitions and a heartbeat (operator console, tests)."""

    __tablename__ = "workers"

    id: Mapped[str] = mapped_column(String(120), primary_key=True)
    started_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    heartbeat_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    partitions: Mapped[list[int]] = mapped_column(JSON, default=list)
    stats: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)


class AuditEntry(Base):
    __tablename__ = "audit_log"

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True,
                                    autoincrement=True)
    at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, index=True)
    actor: Mapped[str] = mapped_column(String(120))
    action: Mapped[str] = mapped_column(String(64))
    subject: Mapped[str | None] = mapped_column(String(200))
    detail: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)


metadata = Base.metadata
