"""Synthetic crime reports with realistic structure, for demos, tests and benchmarks.

Pure: every function takes a :class:`numpy.random.Generator` and returns DataFrames; nothing is
read or written. The same generator state always gives the same reports.

One report has the columns of the shared crime-report record:

* ``report_id`` (unique across files and days, ``<station>-<YYYYMMDD>-<sequence>``), ``station_id``,
  ``event_time`` (ISO-8601 UTC);
* ``name`` and ``dob``: synthetic direct identifiers, consistent with ``age`` on the event day;
* ``age``, ``sex`` (F, M, X), ``suburb``, ``postcode``, ``reporter``: quasi-identifiers;
* ``offence``: the sensitive attribute, drawn from :data:`~core.generators.crime_data.OFFENCES`.

How the values are drawn (see ``crime_data`` for the tables):

* the offence from its share (petty offences common, murder rare);
* the age of the person the report concerns from an offence-specific shifted gamma distribution
  (e.g. vandalism around 21, embezzlement around 42), the sex from an offence-specific share of
  men (plus 0.5 % ``X``);
* the suburb from the station's suburbs, weighted by report volume and, for violent offences, by
  the district's violent-crime factor; the postcode is the suburb's;
* the reporter from offence-specific weights (drunken driving is reported by officers,
  embezzlement by businesses, murder by officers, witnesses and relatives ...);
* the time of day from an offence-specific hourly profile (assaults at night, fraud by day).

Stations split the suburbs (in district order) into contiguous, nearly equal groups, so each
station reports on its own precinct; one station covers every suburb.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pandas as pd

from core.errors import ParamsError
from core.generators.crime_data import (
    DISTRICTS,
    FIRST_NAMES_F,
    FIRST_NAMES_M,
    HOURS,
    OFFENCES,
    REPORTERS,
    SEVERITY,
    SEXES,
    SURNAMES,
)

__all__ = ["DISTRICTS", "OFFENCES", "REPORTERS", "SEVERITY", "CrimeChunk", "generate_crime_reports",
           "iter_crime_reports", "station_suburbs"]

COLUMNS = ["report_id", "station_id", "event_time", "name", "dob", "age", "sex", "suburb", "postcode",
           "reporter", "offence"]
MAX_AGE = 95
X_SHARE = 0.005


@dataclass(frozen=True)
class CrimeChunk:
    """The reports of one station on one day."""

    day: int
    station: str
    frame: pd.DataFrame


def _suburb_table() -> pd.DataFrame:
    rows = [(suburb, postcode, weight, district, factor)
            for district, (factor, suburbs) in DISTRICTS.items() for suburb, postcode, weight in suburbs]
    return pd.DataFrame(rows, columns=["suburb", "postcode", "weight", "district", "violent_factor"])


def station_suburbs(stations: int) -> list[list[str]]:
    """The suburbs each of ``stations`` stations covers (contiguous groups in district order)."""
    table = _suburb_table()
    if not 1 <= stations <= len(table):
        raise ParamsError(f"stations must be between 1 and {len(table)} (one suburb each at least); got {stations}")
    return [list(part) for part in np.array_split(table["suburb"].to_numpy(), stations)]


def _offence_arrays() -> dict[str, np.ndarray]:
    offs = list(OFFENCES.values())
    share = np.array([o.share for o in offs])
    reporter = np.array([o.reporter for o in offs], dtype=float)
    hours = np.array([HOURS[o.hours] for o in offs], dtype=float)
    return {
        "names": np.array(list(OFFENCES), dtype=object),
        "share": share / share.sum(),
        "age": np.array([o.age for o in offs], dtype=float),
        "p_male": np.array([o.p_male for o in offs]),
        "reporter": reporter / reporter.sum(axis=1, keepdims=True),
        "hours": hours / hours.sum(axis=1, keepdims=True),
        "violent": np.array([o.violent for o in offs]),
    }


def _draw_rows(p: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One categorical draw per row of the probability matrix ``p`` (rows sum to 1)."""
    cum = np.cumsum(p, axis=1)
    u = rng.random(len(p))[:, None]
    return np.minimum((u > cum).sum(axis=1), p.shape[1] - 1)


def _ages(off: np.ndarray, prof: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    lo, mean, sd = prof[off, 0], prof[off, 1], prof[off, 2]
    excess = mean - lo
    shape, scale = (excess / sd) ** 2, sd**2 / excess
    return np.minimum(lo + np.floor(rng.gamma(shape, scale)), MAX_AGE).astype(np.int64)


def _dob(event_day: pd.DatetimeIndex, age: np.ndarray, rng: np.random.Generator) -> pd.DatetimeIndex:
    """A date of birth that makes the person exactly ``age`` on ``event_day``."""
    day = np.where((event_day.month == 2) & (event_day.day == 29), 28, event_day.day)
    birthday = pd.to_datetime(pd.DataFrame({"year": event_day.year - age, "month": event_day.month, "day": day}))
    return pd.DatetimeIndex(birthday - pd.to_timedelta(rng.integers(1, 365, len(age)), unit="D"))


def _chunk(rng: np.random.Generator, station: str, suburbs: list[str], day: pd.Timestamp, n: int,
           first_seq: int, offs: dict[str, np.ndarray], table: pd.DataFrame) -> pd.DataFrame:
    off = rng.choice(len(offs["names"]), size=n, p=offs["share"])
    age = _ages(off, offs["age"], rng)
    u = rng.random(n)
    p_m = offs["p_male"][off] * (1 - X_SHARE)
    sex = np.where(u < X_SHARE, 2, np.where(u < X_SHARE + p_m, 1, 0))
    local = table[table["suburb"].isin(suburbs)].reset_index(drop=True)
    base = local["weight"].to_numpy()
    violent_w = base * local["violent_factor"].to_numpy()
    probs = np.stack([base / base.sum(), violent_w / violent_w.sum()])
    where = _draw_rows(probs[offs["violent"][off].astype(int)], rng)
    reporter = _draw_rows(offs["reporter"][off], rng)
    hour = _draw_rows(offs["hours"][off], rng)
    seconds = hour * 3600 + rng.integers(0, 3600, n)
    order = np.argsort(seconds, kind="stable")
    off, age, sex, where, reporter, seconds = (a[order] for a in (off, age, sex, where, reporter, seconds))
    times = day + pd.to_timedelta(seconds, unit="s")
    women = rng.choice(len(FIRST_NAMES_F), n)
    men = rng.choice(len(FIRST_NAMES_M), n)
    anyone = rng.random(n) < 0.5
    first = np.where((sex == 1) | ((sex == 2) & anyone), np.array(FIRST_NAMES_M, dtype=object)[men],
                     np.array(FIRST_NAMES_F, dtype=object)[women])
    last = np.array(SURNAMES, dtype=object)[rng.choice(len(SURNAMES), n)]
    dob = _dob(pd.DatetimeIndex(times).normalize(), age, rng)
    seq = np.arange(first_seq, first_seq + n)
    return pd.DataFrame({
        "report_id": [f"{station}-{day:%Y%m%d}-{s:06d}" for s in seq],
        "station_id": station,
        "event_time": pd.DatetimeIndex(times).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "name": first + " " + last,
        "dob": dob.strftime("%Y-%m-%d"),
        "age": age,
        "sex": np.array(SEXES, dtype=object)[sex],
        "suburb": local["suburb"].to_numpy()[where],
        "postcode": local["postcode"].to_numpy()[where],
        "reporter": np.array(REPORTERS, dtype=object)[reporter],
        "offence": offs["names"][off],
    }, columns=COLUMNS)


def iter_crime_reports(rng: np.random.Generator, *, stations: int = 1, days: int = 1, per_day: int = 10_000,
                       start: str = "2024-01-01", prefix: str = "S") -> Iterator[CrimeChunk]:
    """Yield the reports day by day and station by station (``per_day`` reports per station per day).

    Each chunk draws from its own child generator seeded from ``rng`` in a fixed order, so the
    concatenated chunks equal :func:`generate_crime_reports` with the same arguments.
    """
    if days < 1 or per_day < 1:
        raise ParamsError(f"days and per_day must be at least 1; got days={days}, per_day={per_day}")
    try:
        first_day = pd.Timestamp(start, tz="UTC").normalize()
    except ValueError:
        raise ParamsError(f"start must be a date like 2024-01-01; got {start!r}") from None
    groups = station_suburbs(stations)
    offs, table = _offence_arrays(), _suburb_table()
    seeds = rng.integers(0, 2**63 - 1, size=(days, stations))
    for day in range(days):
        for s, suburbs in enumerate(groups):
            station = f"{prefix}{s + 1}"
            frame = _chunk(np.random.default_rng(seeds[day, s]), station, suburbs,
                           first_day + pd.Timedelta(days=day), per_day, day * per_day + 1, offs, table)
            yield CrimeChunk(day=day, station=station, frame=frame)


def generate_crime_reports(rng: np.random.Generator, *, stations: int = 1, days: int = 1,
                           per_day: int = 10_000, start: str = "2024-01-01", prefix: str = "S") -> pd.DataFrame:
    """All reports of ``stations`` stations over ``days`` days, ``per_day`` per station per day."""
    chunks = [c.frame for c in iter_crime_reports(rng, stations=stations, days=days, per_day=per_day,
                                                  start=start, prefix=prefix)]
    return pd.concat(chunks, ignore_index=True)
