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


ARRESTS_SPEC = """
name = "arrests"
identifiers = ["arrest_key"]
unknown = "top"
id_column = "arrest_key"
station_column = "precinct"
time_column = "arrest_date"

[[qi]]
name = "arrest_date"
type = "date"
hierarchy = { levels = ["day", "month", "year"], format = "us" }

[[qi]]
name = "precinct"
type = "categorical"
hierarchy = { rows = [["101", "101-102", "*"], ["102", "101-102", "*"], ["103", "103-104", "*"],
                      ["104", "103-104", "*"]] }

[[qi]]
name = "age"
type = "numeric"
hierarchy = { widths = [10, 20, 40], domain = [0, 120], integer = true }

[[qi]]
name = "sex"
type = "categorical"
hierarchy = { rows = [["F", "*"], ["M", "*"]] }

[sensitive]
name = "offence"
"""
"""An arrests export's spec (like a draft of the bundled NYPD file): a US date, the precinct (also the
station), a whole-number age, sex, offence."""


def overlapping_exports(seed: int, n: int = 120, co: int = 20, shared: int = 60, fresh: int = 80,
                        days: int = 1, stations: tuple[str, ...] = ("101", "102")
                        ) -> tuple[list[dict[str, str]], list[dict[str, str]], list[int]]:
    """Two exports of one department's arrests in :data:`ARRESTS_SPEC`, sharing ``shared`` reports.

    Export A: ``n`` arrests plus ``co`` co-arrests (a copy of an arrest's content under another arrest
    key: same day, precinct, age, sex and offence), written ``06/17/2020``, ``M``, ``30``. Export B:
    ``shared`` reports of A under new arrest keys (the first ones are co-arrest pairs), plus ``fresh``
    new arrests, written ``6/17/2020``, ``m``, ``030``. Returns (A, B, the positions in A of B's shared
    reports, in B's order)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    offences = ["ASSAULT 3", "PETIT LARCENY", "ROBBERY", "FELONY ASSAULT", "DANGEROUS DRUGS"]

    def arrest(key: str) -> dict[str, Any]:
        return {"arrest_key": key, "day": 1 + int(rng.integers(days)), "precinct": str(rng.choice(stations)),
                "age": int(rng.integers(18, 70)), "sex": str(rng.choice(["M", "F"])),
                "offence": str(rng.choice(offences))}

    def written(r: dict[str, Any], layout: str) -> dict[str, str]:
        day, age, sex = r["day"], r["age"], r["sex"]
        out = {k: str(v) for k, v in r.items() if k != "day"}
        if layout == "a":
            return {**out, "arrest_date": f"06/{day:02d}/2020", "age": str(age), "sex": sex}
        return {**out, "arrest_date": f"6/{day}/2020", "age": f"{age:03d}", "sex": sex.lower()}

    base = [arrest(f"A{i:05d}") for i in range(n)]
    a = base + [{**base[i], "arrest_key": f"A9{i:04d}"} for i in range(co)]  # co-arrests of the first `co`
    picks = [i for j in range(min(co, shared // 2)) for i in (j, n + j)]  # co-arrest pairs first
    picks += [i for i in range(co, n)][: shared - len(picks)]
    b = [{**a[i], "arrest_key": f"B{k:05d}"} for k, i in enumerate(picks)]
    b += [arrest(f"B5{k:04d}") for k in range(fresh)]
    return [written(r, "a") for r in a], [written(r, "b") for r in b], picks
