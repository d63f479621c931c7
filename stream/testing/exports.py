"""A real export rewritten the way other records systems write the same records (tests, benchmarks).

Stations' exports differ from the bundled NYPD file in layout, not in content: dates carry a time
part (``01/08/2021 00:00``, ``02/13/2021 12:00:00 AM``, ``2021/01/01 00:47:36``, ISO
``2021-01-08T10:00:00Z``) or mix layouts (one system's, or two merged systems'), headers say
nothing (``TYPE``, ``col_7``), an outcome flag or disposition sits beside the offence under a name
like a station's, columns come in another order. :func:`nypd_variants` builds one export per such
layout from the NYPD arrests; ``spec draft`` must write a spec each of them fits
(tests/stream/specdraft/test_fit.py, bench/spec_draft.py).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
import pandas as pd

DATE = "ARREST_DATE"
TIME_LAYOUTS: dict[str, str] = {
    "us-time": "%m/%d/%Y %H:%M",
    "us-ampm": "%m/%d/%Y %I:%M:%S %p",
    "ymd-time": "%Y/%m/%d %H:%M:%S",
    "iso-z": "%Y-%m-%dT%H:%M:%SZ",
}
# Headers no name rule recognises, so only the content says what a column holds.
BLIND = {"OFNS_DESC": "TYPE", "PD_DESC": "DETAIL", "LAW_CAT_CD": "LVL", "PD_CD": "C1", "KY_CD": "C2",
         "LAW_CODE": "C3"}
DISPOSITIONS = ("ARRESTED", "SUMMONS ISSUED", "RELEASED", "DESK APPEARANCE TICKET")


def with_times(frame: pd.DataFrame, layout: str, seed: int = 0, column: str = DATE,
               source: str = "%m/%d/%Y") -> pd.DataFrame:
    """``column`` rewritten with a random time of day in ``layout`` (a strptime pattern)."""
    rng = np.random.default_rng(seed)
    days = pd.to_datetime(frame[column], format=source)
    when = days + pd.to_timedelta(rng.integers(0, 24 * 3600, len(frame)), unit="s")
    return frame.assign(**{column: when.dt.strftime(layout)})


def mixed_times(frame: pd.DataFrame, seed: int = 0, column: str = DATE) -> pd.DataFrame:
    """Two layouts in one column, as one real export: ``01/08/2021 00:00`` and ``02/13/2021 12:00:00 AM``."""
    rng = np.random.default_rng(seed)
    days = pd.to_datetime(frame[column], format="%m/%d/%Y")
    short = rng.random(len(frame)) < 0.5
    text = np.where(short, days.dt.strftime("%m/%d/%Y 00:00"), days.dt.strftime("%m/%d/%Y 12:00:00 AM"))
    return frame.assign(**{column: text})


def two_systems(frame: pd.DataFrame, seed: int = 0, column: str = DATE) -> pd.DataFrame:
    """Two records systems' layouts in one file: ``2021/01/08 10:47:36`` and ``01/08/2021 10:47:36 AM``."""
    rng = np.random.default_rng(seed)
    when = pd.to_datetime(frame[column], format="%m/%d/%Y") + pd.to_timedelta(
        rng.integers(0, 24 * 3600, len(frame)), unit="s")
    first = rng.random(len(frame)) < 0.5
    text = np.where(first, when.dt.strftime("%Y/%m/%d %H:%M:%S"), when.dt.strftime("%m/%d/%Y %I:%M:%S %p"))
    return frame.assign(**{column: text})


def with_outcomes(frame: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """A use-of-force flag and a disposition, named like a station's columns, placed first."""
    rng = np.random.default_rng(seed)
    extra = pd.DataFrame({"USE_OF_FORCE": rng.choice(["Y", "N"], len(frame), p=[0.1, 0.9]),
                          "OFFICE_DISPOSITION": rng.choice(DISPOSITIONS, len(frame))}, index=frame.index)
    return pd.concat([extra, frame], axis=1)


def blind_headers(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.rename(columns=BLIND)


def numbered_headers(frame: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """Columns shuffled and named ``col_1`` ... (nothing but the content tells what they hold)."""
    order = np.random.default_rng(seed).permutation(len(frame.columns))
    shuffled = frame.iloc[:, order]
    return shuffled.set_axis([f"col_{i + 1}" for i in range(len(order))], axis=1)


def outcome_only(frame: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """No offence column: the disposition (an outcome) is what the draft must protect."""
    gone = ["OFNS_DESC", "PD_DESC", "PD_CD", "KY_CD", "LAW_CODE", "LAW_CAT_CD"]
    return with_outcomes(frame, seed).drop(columns=gone)


VARIANTS: dict[str, Callable[[pd.DataFrame], pd.DataFrame]] = {
    **{f"times-{name}": functools.partial(with_times, layout=layout) for name, layout in TIME_LAYOUTS.items()},
    "times-mixed": mixed_times,
    "times-two-systems": two_systems,
    "offence-blind": blind_headers,
    "outcome-station": with_outcomes,
    "outcome-only": outcome_only,
    "numbered-shuffled": numbered_headers,
    "all-at-once": lambda f: numbered_headers(with_outcomes(with_times(blind_headers(f), TIME_LAYOUTS["ymd-time"]))),
}


def nypd_variants(frame: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """One export per layout of :data:`VARIANTS`, from the NYPD arrests (all values as strings)."""
    return {name: make(frame.copy()) for name, make in VARIANTS.items()}
