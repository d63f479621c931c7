"""Shared fixtures: paths to the benchmark data beside the repo, and bundled specs."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = ROOT.parent / "shared" / "data"


def shared(*parts: str) -> Path:
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"benchmark data not found at {path}")
    return path


@pytest.fixture(scope="session")
def adult_df() -> pd.DataFrame:
    return pd.read_csv(shared("adult", "adult.csv"), sep=";", dtype=str)


@pytest.fixture(scope="session")
def adult_schema():
    from stream.io.specs import load_schema

    return load_schema("adult")


@pytest.fixture(scope="module")
def validator():  # type: ignore[no-untyped-def]
    """The stream's report validator on the crime spec, default input limits (tests/stream and tests/db)."""
    from stream.intake.guards import Limits
    from stream.intake.validate import ReportValidator
    from stream.io.specs import load_schema
    from stream.testing.reports import spec_ref

    return ReportValidator(load_schema(spec_ref()), ("name", "dob"), Limits())


@pytest.fixture(scope="module")
def good() -> dict:
    """One valid generated crime report."""
    from stream.testing.reports import day_of_reports

    return day_of_reports(1, 5, seed=5)["S1"][0]
