"""``spec check`` runs the intake on the sample: each row as ``push`` would send it, through the very checks
``push`` and the workers apply, so what the check passes, push accepts.

The row is the reader's (:mod:`stream.io.rows`), filled with ``--station`` as push fills it
(:func:`stream.station.producer.as_sent`; a row naming another station is ``station-mismatch``), a
report id already on an earlier line is ``duplicate-id`` (:func:`stream.io.dupes.repeated_ids`, per
station or department-wide by ``id_scope``), and everything else is
:meth:`stream.intake.validate.ReportValidator.check`: station ids (through the spec's
``station_map``), report ids, event times and their plausible range, the guards on sizes and
characters, the missing-value policy, declared dates, hierarchies and the severity table.

A file without the report id or event time column (a batch-only export, such as Adult) is not checked
row by row: push's header check (:mod:`stream.io.header`) refuses it whole before sending anything. A
warning says so, and the data may fit the spec for ``anonymize``. A file without the station column is
checked as one station's export (push then needs ``--station``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

import pandas as pd

from stream.intake.validate import Rejected, ReportValidator
from stream.io.dupes import repeated_ids
from stream.io.header import needed_columns
from stream.io.rows import Row
from stream.station.producer import as_sent, other_station

if TYPE_CHECKING:
    from core.encoding import Schema

EXAMPLES = 3  # example lines per reason
ONE_STATION = "S1"  # the station a file without a station column is checked as (push --station fills it in)


@dataclass
class IntakeCheck:
    """What push's checks say of the sample's rows: accepted, and rejected by reason (with example lines)."""

    checked: int = 0
    accepted: int = 0
    reasons: Counter[str] = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=dict)
    skipped: str = ""  # why push's checks were not run (a file without stream keys)
    note: str = ""  # how they were run, when it is worth saying (a file of one station, without --station)
    rejected_lines: list[int] = field(default_factory=list)

    def lines(self) -> list[str]:
        """One line per reason: the count and the first examples."""
        return [f"{n} x {reason}: " + "; ".join(self.examples.get(reason, [])) for reason, n in
                sorted(self.reasons.items(), key=lambda t: (-t[1], t[0]))]


def frame_rows(frame: pd.DataFrame) -> Iterator[Row]:
    """The rows of a frame from :func:`stream.io.tables.read_table` as the reader gave them, with their lines."""
    lines = frame.attrs.get("lines")
    first = int(frame.attrs.get("first_line", 2))
    cols = list(frame.columns)
    for pos, values in enumerate(frame.itertuples(index=False, name=None)):
        line = int(lines[int(frame.index[pos])]) if lines is not None else first + pos
        yield line, {c: (None if v is None or v is pd.NA or (isinstance(v, float) and v != v) else v)
                     for c, v in zip(cols, values)}


def intake_check(rows: Iterable[Row], schema: Schema, station: str | None = None,
                 now: datetime | None = None) -> IntakeCheck:
    """Each row through push's checks, in push's order; ``now`` is the time the plausible range is around."""
    spec = schema.spec
    out = IntakeCheck()
    batch = list(rows)
    columns: dict[str, None] = {}
    for _line, row in batch[:100]:
        columns.update(dict.fromkeys(row))
    keys = [c for c in needed_columns(spec, stream=True, station_given=True) if c not in columns]
    if keys:  # push's header check refuses the file before sending a row (stream/io/header.py)
        out.skipped = (f"the file has no column {', '.join(map(repr, keys))} (the stream's report id or event "
                       "time): push refuses it whole; checked for anonymize only")
        return out
    validator = ReportValidator(schema)
    station_col, id_col = validator.station_col, validator.id_col
    if station is None and station_col not in columns:  # one station's export: push takes --station
        station = ONE_STATION
        out.note = (f"no station column '{station_col}' in the file: push needs --station (checked as one "
                    "station's export)")
    repeated = repeated_ids(iter(batch), id_col, station_col, station, global_ids=spec.id_scope == "global",
                            station_map=validator.station_map)
    for line, raw in batch:
        out.checked += 1
        problem = _problem(validator, line, raw, station, repeated.get(line), now)
        if problem is None:
            out.accepted += 1
            continue
        reason, text = problem
        out.reasons[reason] += 1
        out.rejected_lines.append(line)
        shown = out.examples.setdefault(reason, [])
        if len(shown) < EXAMPLES:
            shown.append(f"line {line}: {text}")
    return out


def _problem(validator: ReportValidator, line: int, raw: dict[str, Any], station: str | None, earlier: int | None,
             now: datetime | None) -> tuple[str, str] | None:
    """``(reason, message with the value)`` if push rejects the row, as :func:`push_reports` decides."""
    row = as_sent(raw, validator.station_col, None)
    if station is not None:
        given = other_station(validator, row, station)
        if given is not None:
            return "station-mismatch", f"field '{validator.station_col}' does not match --station ({given!r})"
        row[validator.station_col] = station
    if earlier is not None:
        return "duplicate-id", f"field '{validator.id_col}': report id already on line {earlier}"
    checked = validator.check(dict(row), now)
    if isinstance(checked, Rejected):
        value = f" (value {checked.detail.value!r})" if checked.detail is not None else ""
        return checked.reason, checked.message + value
    return None
