"""Crime reports for the stream tests, from the real generator (core.generators.crime) and the bundled spec."""

from __future__ import annotations

from datetime import UTC, datetime

from stream.simulate import generate_day

DAY = datetime(2024, 3, 1, tzinfo=UTC)


def spec_ref() -> str:
    return "crime"


def day_of_reports(stations: int, n: int, seed: int, day: datetime = DAY) -> dict[str, list[dict[str, object]]]:
    """A generated day of ``stations`` stations (``S1`` ...), each station's reports in event-time order."""
    return generate_day(stations, n, seed, day)
