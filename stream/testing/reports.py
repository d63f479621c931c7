"""Crime reports for the stream tests, from the real generator (core.generators.crime) and the bundled spec."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from db.ledger import IngestResult, PoolRepository
from stream.config.settings import Settings
from stream.intake.validate import Clean, ReportValidator, to_incoming
from stream.io.specs import load_schema
from stream.station.simulate import generate_day

DAY = datetime(2024, 3, 1, tzinfo=UTC)


def spec_ref() -> str:
    return "crime"


def day_of_reports(stations: int, n: int, seed: int, day: datetime = DAY) -> dict[str, list[dict[str, object]]]:
    """A generated day of ``stations`` stations (``S1`` ...), each station's reports in event-time order."""
    return generate_day(stations, n, seed, day)


def ingest_reports(settings: Settings, pool: PoolRepository, reports: list[dict[str, Any]], now: datetime,
                   key: bytes, person_guard: bool = True, validator: ReportValidator | None = None) -> IngestResult:
    """Validate ``reports`` as the worker does (each must be valid), drop identifiers and write them to the
    pending pool in one batch, each under its own station's window key."""
    validator = validator or ReportValidator(load_schema(settings.spec), settings.person_columns)
    incoming = []
    for r in reports:
        clean = validator.check(dict(r), now)
        assert isinstance(clean, Clean), clean
        incoming.append(to_incoming(clean, key, settings.window_key_for(clean.station_id), person_guard))
    return pool.ingest(incoming, [], now)
