"""Content fingerprints of accepted reports are over canonical values, never the raw cell text."""

from __future__ import annotations

from pathlib import Path

from db.ledger import IncomingReport
from stream.intake.validate import Clean, ReportValidator, content_fields, to_incoming
from stream.io.specs import load_schema
from stream.testing.reports import ARRESTS_SPEC, overlapping_exports


def _validator(tmp_path: Path) -> ReportValidator:
    spec = tmp_path / "arrests.toml"
    spec.write_text(ARRESTS_SPEC)
    return ReportValidator(load_schema(str(spec)))


def _incoming(v: ReportValidator, report: dict[str, str]) -> IncomingReport:
    clean = v.check(dict(report))
    assert isinstance(clean, Clean), clean
    return to_incoming(clean, b"key", f"station:{clean.station_id}", False)


def test_one_report_in_two_layouts_has_one_content(tmp_path: Path) -> None:
    v = _validator(tmp_path)
    a, b, picks = overlapping_exports(seed=2)
    for k, i in enumerate(picks):  # b[k] is a[i] written 6/1/2020, m, 044 under another arrest key
        first, again = _incoming(v, a[i]), _incoming(v, b[k])
        assert first.content_fp == again.content_fp
        assert first.fingerprint != again.fingerprint
        assert first.data != again.data  # the values are kept as written; only the fingerprint is canonical


def test_co_offenders_share_a_content_and_other_reports_do_not(tmp_path: Path) -> None:
    v = _validator(tmp_path)
    a, _, _ = overlapping_exports(seed=2, n=30, co=5)
    fps = [_incoming(v, r).content_fp for r in a]
    assert fps[:5] == fps[30:35]  # the co-arrests of the first five
    older = {**a[0], "age": str(int(a[0]["age"]) + 1)}
    assert _incoming(v, older).content_fp != fps[0]


def test_content_fields_are_canonical(tmp_path: Path) -> None:
    v = _validator(tmp_path)
    clean = v.check({"arrest_key": "1", "arrest_date": "6/7/2020", "precinct": "101", "age": "030",
                     "sex": "m", "offence": " Robbery "})
    assert isinstance(clean, Clean)
    assert dict(content_fields(clean)) == {"event_time": "2020-06-07T00:00:00+00:00", "arrest_date": "2020-06-07",
                                           "precinct": "101", "age": "30", "sex": "m", "offence": "robbery"}
