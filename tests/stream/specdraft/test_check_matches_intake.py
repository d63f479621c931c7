"""What ``spec check`` passes, push accepts, row for row (issue 41, item 2).

Property: for random small tables (station names with spaces, some mapped by the spec's
``station_map``; report ids repeated or not; event times in and out of the declared format and of the
plausible range; values outside the hierarchy, missing, overlong or with control characters), when
:func:`check_frame` says the file fits, push's own validator (:class:`ReportValidator`, called directly:
no broker) accepts every row and no report id repeats; and each row the validator refuses is one the
check counted as rejected.
"""

from __future__ import annotations

import csv
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.canonical import canonical_id
from stream.intake.validate import Clean, ReportValidator
from stream.io.rows import rows_for_spec
from stream.io.specs import load_schema
from stream.io.tables import read_table
from stream.specdraft.check import check_frame

NOW = datetime(2026, 6, 1, tzinfo=UTC)
SPEC = """\
name = "random"
id_column = "case"
time_column = "when"
station_column = "station"
identifiers = ["case"]

[station_map]
"Queens North" = "queens-north"
"Bronx 4" = "bronx-4"

[[qi]]
name = "age"
type = "numeric"
hierarchy = { widths = [10, 20], domain = [0, 120], integer = true }

[[qi]]
name = "when"
type = "date"
hierarchy = { levels = ["day", "month", "year"], format = "iso" }

[sensitive]
name = "offence"
severity = { "Theft" = 1, "Assault" = 3 }
"""

GOOD_STATIONS = ["Queens North", "Bronx 4", "S1", "08", "8"]
BAD_STATIONS = ["Brooklyn South", "", "-x", "a" * 70]


def mostly(good: st.SearchStrategy[str], bad: list[str]) -> st.SearchStrategy[str]:
    """A good value five times in six, else one of ``bad``."""
    return st.one_of(*[good] * 5, st.sampled_from(bad))


station = mostly(st.sampled_from(GOOD_STATIONS), BAD_STATIONS)
when = mostly(st.dates(datetime(2017, 1, 1).date(), datetime(2026, 6, 1).date()).map(str),
              ["2026-13-01", "yesterday", "", "2010-01-01", "2030-01-01"])
age = mostly(st.integers(0, 119).map(str), ["", "34.5", "abc", "130", "-1"])
offence = mostly(st.sampled_from(["Theft", "Assault"]), ["theft", "", "Murder", "Theft\x07", "x" * 300])
row = st.fixed_dictionaries({"case": st.integers(1, 400).map(str), "station": station, "when": when,
                             "age": age, "offence": offence})
good_row = st.fixed_dictionaries({
    "case": st.integers(1, 400).map(str), "station": st.sampled_from(GOOD_STATIONS),
    "when": st.dates(datetime(2017, 1, 1).date(), datetime(2026, 6, 1).date()).map(str),
    "age": st.integers(0, 119).map(str), "offence": st.sampled_from(["Theft", "Assault"])})


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.one_of(st.lists(row, min_size=1, max_size=12),  # half the tables without a bad value by design
                     st.lists(good_row, min_size=1, max_size=12, unique_by=lambda r: r["case"])))
def test_what_spec_check_passes_push_accepts_row_for_row(rows: list[dict[str, str]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        spec, src = Path(tmp) / "s.toml", Path(tmp) / "export.csv"
        spec.write_text(SPEC, encoding="utf-8")
        with src.open("w", newline="", encoding="utf-8") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        schema = load_schema(spec)
        frame = read_table(src)
        report = check_frame(frame, schema, 1, 1.0, rows=rows_for_spec(src, schema.spec.input), now=NOW)
        assert report.intake is not None and not report.intake.skipped
        validator = ReportValidator(schema)
        seen: set[str] = set()
        refused: set[int] = set()
        repeated = False
        for line, raw in rows_for_spec(src, schema.spec.input):
            got = validator.check(dict(raw), NOW)
            key = canonical_id(raw["case"])
            repeated |= key in seen
            seen.add(key)
            if not isinstance(got, Clean):
                refused.add(line)
        assert refused <= set(report.intake.rejected_lines)
        if report.fits:
            assert not refused and not repeated
