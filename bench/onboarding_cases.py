"""The generated exports of bench/onboarding.py: issue 41's cases, each a small file written to a folder.

Each case is ``(name, file, spec pushed with or None for the draft, --station or None)``; seeded, so the
same files every run.
"""

from __future__ import annotations

from datetime import date, timedelta
from pathlib import Path

import numpy as np
import pandas as pd

from stream.io.specs import resolve_spec_path

OFFENCES = ["Theft", "Assault", "Robbery", "Burglary", "Fraud", "Vandalism"]
AREAS = ["Queens North", "Queens South", "Bronx / 4th", "Staten Island"]


def _people(rng: np.random.Generator, n: int) -> dict[str, object]:
    return {"age": rng.integers(18, 90, n).astype(str), "sex": rng.choice(["F", "M"], n),
            "offence": rng.choice(OFFENCES, n)}


def _days(rng: np.random.Generator, n: int, start: date, days: int) -> list[str]:
    return [(start + timedelta(days=int(d))).isoformat() for d in rng.integers(0, days, n)]


def generated(folder: Path, n: int = 600) -> list[tuple[str, Path, str | None, str | None]]:
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(41)
    out: list[tuple[str, Path, str | None, str | None]] = []

    dup = folder / "dup-headers.csv"  # `age` twice: refused in one line, naming both positions
    frame = pd.DataFrame({"report_id": [f"R{i}" for i in range(n)], "event_date": _days(rng, n, date(2025, 3, 1), 60),
                          **_people(rng, n)})
    frame.insert(4, "age2", frame["age"])
    frame.to_csv(dup, index=False, header=["report_id", "event_date", "age", "sex", "age", "offence"])
    out.append(("dup-headers", dup, None, None))

    outcomes = folder / "outcomes-key.csv"  # outcome columns and a key unique across precincts
    people = _people(rng, n)
    pd.DataFrame({"case_id": rng.permutation(np.arange(10_000, 10_000 + n)).astype(str),
                  "arrest_date": _days(rng, n, date(2025, 1, 1), 90), "age": people["age"], "sex": people["sex"],
                  "race": rng.choice(["A", "B", "W", "H"], n), "precinct": rng.choice(["101", "102", "103"], n),
                  "offense": people["offence"], "c_charge_degree": rng.choice(["F", "M"], n),
                  "two_year_recid": rng.choice(["0", "1"], n), "arrest_type": rng.choice(["Adult", "Juvenile"], n),
                  "disposition": rng.choice(["Convicted", "Dismissed", "Pending"], n)}).to_csv(outcomes, index=False)
    out.append(("outcomes-key", outcomes, None, None))

    spaces = folder / "station-spaces.csv"  # stations named by area, with spaces: a station_map
    pd.DataFrame({"report_id": [f"R{i}" for i in range(n)], "event_date": _days(rng, n, date(2025, 5, 1), 45),
                  "station": rng.choice(AREAS, n), **_people(rng, n)}).to_csv(spaces, index=False)
    out.append(("station-spaces", spaces, None, None))

    months = folder / "months-17.csv"  # one station's 17 months (517 days, more than a key's hourly windows)
    days = 517
    m = 2 * days
    when = [(date(2024, 6, 1) + timedelta(days=int(i) % days)).isoformat() for i in rng.permutation(m)]
    pd.DataFrame({"report_id": [f"H{i}" for i in range(m)], "event_date": when, **_people(rng, m)}).to_csv(
        months, index=False)
    out.append(("months-17", months, None, "S1"))

    out.append(("wrong-spec", outcomes, str(resolve_spec_path("crime")), None))  # the outcomes file, crime spec
    return out
