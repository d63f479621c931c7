"""The k-regular verifier reads the originals of a date QI by the hierarchy's declared format.

kmember, lgreedy and ils publish date ranges; the verifier checks every matched original lies
inside its row's range. Originals written ``02/13/2020`` (``us``) or ``13/02/2020`` (``day-first``),
with or without a time of day, must be parsed as the spec declares, not refused as ambiguous.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from core.encoding import Schema, encode
from core.engines.registry import get_engine, make_params
from core.schema import parse_spec
from core.verify import verify_release


def _table(fmt: str, rows: int = 60) -> tuple[pd.DataFrame, Schema]:
    rng = np.random.default_rng(7)
    days = pd.Timestamp("2020-01-01") + pd.to_timedelta(rng.integers(0, 90, rows), unit="D")
    pattern = {"us": "%m/%d/%Y", "day-first": "%d/%m/%Y"}[fmt]
    written = [d.strftime(pattern) + (" 00:00" if i % 3 == 0 else "") for i, d in enumerate(days)]
    df = pd.DataFrame({"arrested": written, "sex": rng.choice(["F", "M"], rows),
                       "offence": rng.choice(["theft", "assault", "fraud"], rows)})
    spec = parse_spec({"qi": [{"name": "arrested", "type": "date",
                               "hierarchy": {"levels": ["day", "month", "year"], "format": fmt}},
                              {"name": "sex", "type": "categorical", "hierarchy": {"rows": [["F", "*"], ["M", "*"]]}}],
                       "sensitive": {"name": "offence"}})
    return df, Schema.from_spec(spec)


@pytest.mark.parametrize("fmt", ["us", "day-first"])
@pytest.mark.parametrize("name", ["kmember", "lgreedy", "ils"])
def test_range_releases_of_declared_date_formats_verify(name: str, fmt: str) -> None:
    df, schema = _table(fmt)
    assert df["arrested"].str.match(r"\d\d/\d\d/").all() and (df["arrested"].str.slice(0, 2).astype(int) <= 12).any()
    engine = get_engine(name)
    release = engine.anonymize(encode(df, schema), make_params(engine, {"k": 4}), np.random.default_rng(0))
    assert release.verification_mode == "k-regular"
    report = verify_release(df, release, schema)
    assert report.ok, report.failures
    assert report.k == 4


def test_a_label_that_misses_its_original_still_fails() -> None:
    df, schema = _table("us", rows=12)
    engine = get_engine("kmember")
    release = engine.anonymize(encode(df, schema), make_params(engine, {"k": 3}), np.random.default_rng(0))
    release.rows["arrested"] = "[1999-01-01, 1999-01-31]"
    report = verify_release(df, release, schema)
    assert not report.ok and any("outside the released label" in f for f in report.failures)
