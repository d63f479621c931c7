"""The batch pipeline as a library (stream.batch.run.anonymize_table), checked against the engine run
directly on the same rows, the input table and a ledger."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from core.encoding import Schema, encode
from core.engines.registry import engine_names, get_engine, make_params
from core.generators.crime import generate_crime_reports
from core.verify import verify_release
from stream.batch.exposure import declared, exposed_engines
from stream.batch.run import BatchOptions, BatchResult, anonymize_table
from stream.io.specs import load_schema
from stream.io.tables import read_for_spec


@pytest.fixture(scope="module")
def schema() -> Schema:
    return load_schema("crime")


@pytest.fixture(scope="module")
def day_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("run") / "day.csv"
    generate_crime_reports(np.random.default_rng(21), stations=2, per_day=150).to_csv(path, index=False)
    return path


def _run(path: Path, schema: Schema, ledger: str | None = None, **options: Any) -> tuple[BatchResult, list[str]]:
    notes: list[str] = []
    engine = get_engine("mondrian")
    result = anonymize_table(read_for_spec(path, schema.spec, schema), schema, engine,
                             make_params(engine, {"k": 5}), ledger, options=BatchOptions(**options),
                             notify=notes.append)
    return result, notes


def test_the_release_is_the_engines_own_on_the_same_rows_verified(day_file: Path, schema: Schema) -> None:
    result, notes = _run(day_file, schema, seed=3, order_seed=9)
    frame = read_for_spec(day_file, schema.spec, schema)
    engine = get_engine("mondrian")
    direct = engine.anonymize(encode(frame, schema), make_params(engine, {"k": 5}), np.random.default_rng(3))
    table = result.table
    pd.testing.assert_frame_equal(table[schema.qi_names], direct.rows[schema.qi_names])  # same labels, same rows
    assert result.ok and verify_release(frame, direct, schema).ok
    assert result.rows == len(frame) and result.release.released + len(result.release.suppressed) == len(frame)
    smallest = int(table.groupby(schema.qi_names, dropna=False).size().min())
    assert result.risk["prosecutor"]["highest"] == pytest.approx(1 / smallest)
    assert result.summary["order_seed"] == 9 and sorted(result.positions) == list(range(len(table)))
    assert notes == [n for n in notes if n.startswith("warning: no --ledger")] and len(notes) == 1
    assert ", ".join(exposed_engines()) in notes[0]


def test_the_order_is_seeded_and_keep_order_warns(day_file: Path, schema: Schema) -> None:
    a, _ = _run(day_file, schema, order_seed=4)
    b, _ = _run(day_file, schema, order_seed=4)
    assert list(a.positions) == list(b.positions)
    kept, notes = _run(day_file, schema, keep_order=True)
    assert kept.positions is None and kept.summary["order"] == "input (--keep-order)"
    assert any(n.startswith("warning: --keep-order") for n in notes)


def test_a_ledger_excludes_what_it_released_and_records_the_rest(day_file: Path, schema: Schema,
                                                                 tmp_path: Path) -> None:
    ledger = str(tmp_path / "ledger.db")
    first, notes = _run(day_file, schema, ledger, source="day.csv")
    assert first.recorded is not None and first.recorded["excluded"] == 0 and not any("no --ledger" in n for n in notes)
    frame = pd.read_csv(day_file, dtype=str)
    more = generate_crime_reports(np.random.default_rng(22), stations=2, per_day=100, start="2024-03-01")
    mixed = tmp_path / "mixed.csv"
    pd.concat([frame.head(120), more.astype(str)], ignore_index=True).to_csv(mixed, index=False)
    second, notes = _run(mixed, schema, ledger, source="mixed.csv")
    assert second.recorded is not None and second.recorded["excluded"] == 120 and second.rows == len(more)
    assert any(n.startswith("ledger: 120 of ") for n in notes)


def test_the_registry_reads_linking_exposure_as_the_classes_declare_it() -> None:
    for name in engine_names():
        assert (declared(name, "linking_exposed") is True) == get_engine(name).linking_exposed, name
    assert exposed_engines()  # the harness found some (docs/privacy.md)
