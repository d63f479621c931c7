"""Validation of incoming reports: one-line reasons, identifiers dropped, keyed fingerprints."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stream.intake.fingerprints import fingerprint, person_fingerprint
from stream.intake.validate import Clean, Rejected, ReportValidator, to_incoming
from stream.io.specs import load_schema
from stream.testing.reports import day_of_reports, spec_ref


@pytest.fixture(scope="module")
def validator() -> ReportValidator:
    return ReportValidator(load_schema(spec_ref()), ("name", "dob"))


@pytest.fixture(scope="module")
def good() -> list[dict[str, object]]:
    return day_of_reports(2, 60, seed=3)["S1"]


def test_generated_reports_are_accepted_and_lose_identifiers(validator: ReportValidator,
                                                             good: list[dict[str, object]]) -> None:
    for r in good:
        res = validator.check(json.dumps(r).encode())
        assert isinstance(res, Clean), res
        inc = to_incoming(res, b"key", "station:S1", person_guard=True)
        assert set(inc.data) == set(validator.used)
        assert not {"name", "dob", "report_id"} & set(inc.data)
        assert inc.fingerprint == fingerprint(b"key", "S1", str(r["report_id"]))
        assert inc.person_fp == person_fingerprint(b"key", [str(r["name"]), str(r["dob"])])
        offset = inc.event_time.utcoffset()
        assert offset is not None and offset.total_seconds() == 0


@pytest.mark.parametrize("mutate, reason", [
    (lambda r: b"{not json", "malformed-json"),
    (lambda r: b"[1, 2]", "not-an-object"),
    (lambda r: json.dumps({k: v for k, v in r.items() if k != "suburb"}).encode(), "missing-field"),
    (lambda r: json.dumps(r | {"offence": ""}).encode(), "missing-field"),
    (lambda r: json.dumps(r | {"event_time": "yesterday"}).encode(), "invalid-time"),
    (lambda r: json.dumps(r | {"event_time": "2024-03-01T10:00:00"}).encode(), "invalid-time"),
    (lambda r: json.dumps(r | {"suburb": "Atlantis-on-Mars"}).encode(), "value-not-in-hierarchy"),
    (lambda r: json.dumps(r | {"offence": "Jaywalking on Mars"}).encode(), "unknown-offence"),
    (lambda r: json.dumps(r | {"age": {"years": 3}}).encode(), "invalid-value"),
])
def test_rejection_reasons(validator: ReportValidator, good: list[dict[str, object]],
                           mutate: Callable[[dict[str, Any]], bytes], reason: str) -> None:
    res = validator.check(mutate(good[0]))
    assert isinstance(res, Rejected)
    assert res.reason == reason
    assert res.message and "\n" not in res.message


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(["suburb", "sex", "reporter"]), st.text(min_size=1, max_size=12))
def test_unknown_qi_values_never_pass_and_are_not_echoed(validator: ReportValidator, good: list[dict[str, object]],
                                                         column: str, value: str) -> None:
    res = validator.check(json.dumps(good[0] | {column: value}).encode())
    if isinstance(res, Clean):  # only a real leaf of the hierarchy passes
        leaves = set(validator.schema.hierarchies[column].encode(
            pd.Series([value.strip()]), "top").labels[0])
        assert value.strip() in leaves
        return
    assert res.reason in {"value-not-in-hierarchy", "invalid-value", "missing-field"}
    if res.reason != "missing-field" and "control characters" not in res.message:  # names the field, not the value
        reference = validator.check(json.dumps(good[0] | {column: "zz-unknown-zz"}).encode())
        assert isinstance(reference, Rejected) and res.message == reference.message


def test_fingerprints_are_keyed() -> None:
    assert fingerprint(b"a", "S1", "r1") != fingerprint(b"b", "S1", "r1")
    assert fingerprint(b"a", "S1", "r1") != fingerprint(b"a", "S2", "r1")
    assert person_fingerprint(b"a", ["Jane  Roe", "1990-01-01"]) == person_fingerprint(b"a", ["jane roe", "1990-01-01"])
    assert person_fingerprint(b"a", ["", ""]) is None
