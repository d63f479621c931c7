"""Each column factorized once (core.codes): every step that reads the codes a frame carries gives what it
gives on the same frame without them (the verifier, risk profile, typed table, utility report, codebook,
publication order and CSV writer), and the reader's codes are those pandas would give the columns."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from core.codes import Codes, TableCodes, attach, carried, class_key
from core.columns import build_codebook, typed_columns
from core.encoding import Schema, encode
from core.engines.registry import get_engine, make_params
from core.generators.crime import generate_crime_reports
from core.metrics.utility import utility_report
from core.risk import risk_profile
from core.risk.classes import class_index
from core.verify import verify_release
from stream.batch.order import publication_positions
from stream.io.csvout import row_ids, write_csv
from stream.io.csvsafe import neutralize_frame
from stream.io.specs import load_schema
from stream.io.tables import read_for_spec


def _plain(frame: pd.DataFrame) -> pd.DataFrame:
    """The same rows without carried codes."""
    out = frame.copy()
    out.attrs.pop("codes", None)
    return out


@pytest.fixture(scope="module")
def schema() -> Schema:
    return load_schema("crime")


@pytest.fixture(scope="module")
def day_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("codes") / "day.csv"
    frame = generate_crime_reports(np.random.default_rng(5), stations=2, per_day=200)
    frame.loc[frame.index[::17], "suburb"] = ""  # missing values, for the spec's on_missing policy
    frame.to_csv(path, index=False)
    return path


def _with_policy(schema: Schema, policy: str) -> Schema:
    spec = schema.spec
    return Schema.from_spec(spec.model_copy(update={"input": spec.input.model_copy(update={"on_missing": policy})}))


@pytest.mark.parametrize("policy", ["drop", "leaf"])
def test_the_reader_carries_what_pandas_would_factorize(day_file: Path, schema: Schema, policy: str) -> None:
    spec = _with_policy(schema, policy).spec
    frame = read_for_spec(day_file, spec, Schema.from_spec(spec))
    for col in spec.used_columns():
        got, want = carried(frame, col), Codes.of(frame[col])
        assert got is not None, col
        assert np.array_equal(got.codes, want.codes) and list(got.uniques) == list(want.uniques), col
    assert carried(frame[spec.used_columns()], spec.qi_names[0]) is None  # a derived frame carries none
    assert carried(copy.deepcopy(frame), spec.qi_names[0]) is None


def test_codes_take_and_renumber_as_pandas_factorizes() -> None:
    rng = np.random.default_rng(3)
    for _ in range(200):
        values = np.array([None if x == 0 else f"v{x}" for x in rng.integers(0, 7, 40)], dtype=object)
        codes = Codes.of(values)
        rows = rng.permutation(40)[: rng.integers(1, 40)]
        for got, want in ((codes.take(rows), Codes.of(values[rows])),):
            assert np.array_equal(got.codes, want.codes) and list(got.uniques) == list(want.uniques)
        filled = values.copy()
        filled[codes.codes < 0] = "v3"  # a value the column already holds
        got = Codes.renumbered(np.where(codes.codes < 0, codes.size, codes.codes), np.append(codes.uniques, "v3"))
        want = Codes.of(filled)
        assert np.array_equal(got.codes, want.codes) and list(got.uniques) == list(want.uniques)
        frame = pd.DataFrame({"a": values, "b": filled})
        cls, _ = class_index(frame, ["a", "b"])
        assert np.array_equal(class_key(((Codes.of(values).codes, codes.size), (want.codes, want.size)), 40), cls)


@pytest.mark.parametrize("engine_name", ["optimal", "mondrian"])
def test_every_step_gives_the_same_with_or_without_codes(day_file: Path, schema: Schema, engine_name: str) -> None:
    schema = _with_policy(schema, "drop")
    frame = read_for_spec(day_file, schema.spec, schema)
    engine = get_engine(engine_name)
    release = engine.anonymize(encode(frame, schema), make_params(engine, {"k": 4}), np.random.default_rng(0))
    used = [c for c in schema.spec.used_columns() if c in release.rows.columns]
    rows = release.rows
    attach(rows, TableCodes.of(rows, used))
    bare = type(release)(**{**release.__dict__, "rows": _plain(rows)})
    plain_frame = _plain(frame)
    assert verify_release(frame, release, schema).as_dict() == verify_release(plain_frame, bare, schema).as_dict()
    risk = [risk_profile(r.rows, schema.qi_names, original=f, sensitive=schema.sensitive,
                         severity=schema.severity).summary()
            for f, r in ((frame, release), (plain_frame, bare))]
    assert risk[0] == risk[1]
    table, table_bare = typed_columns(rows, schema), typed_columns(bare.rows, schema)
    pd.testing.assert_frame_equal(table, table_bare)
    assert carried(table, schema.qi_names[0]) is not None
    assert utility_report(schema, frame, table) == utility_report(schema, plain_frame, table_bare)
    assert (build_codebook(schema, table, suppressed=len(release.suppressed))
            == build_codebook(schema, table_bare, suppressed=len(release.suppressed)))
    keys = [*schema.qi_names, *([schema.sensitive] if schema.sensitive else [])]
    ids = row_ids(table, keys)
    assert np.array_equal(ids, row_ids(_plain(table), keys))
    assert np.array_equal(publication_positions(table, 7, ids), publication_positions(_plain(table), 7, ids))


def test_the_writer_gives_the_same_bytes_with_codes(tmp_path: Path) -> None:
    rng = np.random.default_rng(8)
    n = 300
    frame = pd.DataFrame({"a": rng.choice(np.array(["=x", "y", "-3", "z,w"], dtype=object), n),
                          "b": np.array([f"id{i}" for i in range(n)], dtype=object),
                          "c": pd.array(rng.integers(0, 5, n), dtype="Int64")})
    attach(frame, TableCodes.of(frame, ["a", "b", "c"]))
    ids = row_ids(frame)
    assert np.array_equal(ids, row_ids(_plain(frame)))
    with_codes, without = tmp_path / "with.csv", tmp_path / "without.csv"
    write_csv(frame, with_codes, ids, neutralize_frame)
    write_csv(_plain(frame), without, ids, neutralize_frame)
    assert with_codes.read_bytes() == without.read_bytes()
    assert with_codes.read_bytes() == neutralize_frame(_plain(frame)).to_csv(index=False).encode()
