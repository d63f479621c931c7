"""Batch runs without an order side channel and with a memory: --order-seed/--keep-order, --ledger, the warning."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from core.generators.crime import generate_crime_reports
from stream.testing.services import PostgresServer
from stream.worker.sampling import publish_order
from tests.stream.cli.test_anonymize import assert_one_line_error, cli


@pytest.fixture(scope="module")
def day(tmp_path_factory: pytest.TempPathFactory) -> pd.DataFrame:
    return generate_crime_reports(np.random.default_rng(11), per_day=240)


def _write(frame: pd.DataFrame, path: Path) -> Path:
    frame.to_csv(path, index=False)
    return path


def test_output_order_is_independent_of_input_order(day: pd.DataFrame, tmp_path: Path) -> None:
    by_id = _write(day.sort_values("report_id"), tmp_path / "by_id.csv")
    by_offence = _write(day.sort_values(["offence", "age", "report_id"], ascending=False), tmp_path / "by_off.csv")
    outs = []
    for src in (by_id, by_offence):
        out = tmp_path / f"{src.stem}-out.csv"
        proc = cli("anonymize", str(src), "--spec", "crime", "--engine", "optimal", "-k", "5",
                   "--order-seed", "42", "--out", str(out))
        assert proc.returncode == 0, proc.stderr
        outs.append(pd.read_csv(out, dtype=str, keep_default_na=False))
    assert outs[0].equals(outs[1])  # same rows, same order, whatever the input order
    # and not the input's order: the offence sequence is not the input's
    assert list(outs[0]["offence"]) != list(day.sort_values("report_id")["offence"])


def test_default_order_seed_is_private_and_reported(day: pd.DataFrame, tmp_path: Path) -> None:
    src = _write(day, tmp_path / "d.csv")
    runs = []
    for i in range(2):
        out, rep = tmp_path / f"o{i}.csv", tmp_path / f"r{i}.json"
        proc = cli("anonymize", str(src), "--spec", "crime", "--engine", "mondrian", "-k", "5", "--out", str(out),
                   "--report", str(rep))
        assert proc.returncode == 0, proc.stderr
        runs.append((pd.read_csv(out, dtype=str, keep_default_na=False), json.loads(rep.read_text())))
    (a, ra), (b, rb) = runs
    assert ra["order"] == "random" and ra["order_seed"] != rb["order_seed"]  # fresh, private, in the report only
    cols = list(a.columns)
    assert a.sort_values(cols).reset_index(drop=True).equals(b.sort_values(cols).reset_index(drop=True))
    assert str(ra["order_seed"]) not in (tmp_path / "o0.csv").read_text()


def test_keep_order_warns_and_keeps_input_order(day: pd.DataFrame, tmp_path: Path) -> None:
    src = _write(day, tmp_path / "d.csv")
    out = tmp_path / "o.csv"
    proc = cli("anonymize", str(src), "--spec", "crime", "--engine", "kmember", "-k", "5", "--keep-order",
               "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "warning: --keep-order" in proc.stderr and "internal diagnostics only" in proc.stderr
    assert list(pd.read_csv(out, dtype=str)["offence"]) == list(day["offence"])


def test_without_ledger_the_warning_appears_once_and_names_engines(day: pd.DataFrame, tmp_path: Path) -> None:
    src = _write(day, tmp_path / "d.csv")
    proc = cli("anonymize", str(src), "--spec", "crime", "--engine", "mondrian", "-k", "5")
    assert proc.returncode == 0, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("warning: no --ledger")]
    assert len(lines) == 1 and "kmember" in lines[0] and "ils" in lines[0]


def test_ledger_excludes_rekeyed_copies_and_records_releases(day: pd.DataFrame, tmp_path: Path) -> None:
    ledger = tmp_path / "var" / "ledger.db"
    first = _write(day, tmp_path / "day1.csv")
    other = generate_crime_reports(np.random.default_rng(12), per_day=200, start="2024-01-02", prefix="T")
    copies = day.iloc[:20].assign(station_id="S9", report_id=[f"S9-{i}" for i in range(20)])
    second = _write(pd.concat([other, copies]), tmp_path / "day2.csv")
    reports = []
    for i, src in enumerate((first, second)):
        rep = tmp_path / f"r{i}.json"
        proc = cli("anonymize", str(src), "--spec", "crime", "--engine", "kmember", "-k", "5",
                   "--ledger", str(ledger), "--report", str(rep), "--out", str(tmp_path / f"o{i}.csv"))
        assert proc.returncode == 0, proc.stderr
        assert "warning: no --ledger" not in proc.stderr
        reports.append(json.loads(rep.read_text()))
    assert reports[0]["ledger"]["excluded"] == 0
    assert reports[1]["ledger"]["excluded"] == 20 and reports[1]["ledger"]["excluded_by_rule"] == {"content": 20}
    assert reports[1]["released"] + reports[1]["suppressed"] == 200
    assert (ledger.parent / "fingerprint.key").exists()  # the key lives beside the ledger file
    assert_one_line_error(cli("anonymize", str(first), "--spec", "crime", "--engine", "kmember", "--ledger",
                              str(ledger)), "already released")


@pytest.mark.postgres
def test_ledger_on_postgresql_needs_migrations(day: pd.DataFrame, tmp_path: Path, pg: PostgresServer,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    import migrations

    # a ledger URL has no folder to keep the fingerprint key beside: it goes to the data dir (./var of the
    # repo, for the CLI runs below), so give the runs one of their own
    monkeypatch.setenv("ANONSTREAM_HOME", str(tmp_path / "home"))
    url = pg.create_database("batchledger")
    src = _write(day, tmp_path / "d.csv")
    assert_one_line_error(cli("anonymize", str(src), "--spec", "crime", "--ledger", url), "anonstream migrate")
    migrations.upgrade(url)
    proc = cli("anonymize", str(src), "--spec", "crime", "--engine", "mondrian", "--ledger", url)
    assert proc.returncode == 0, proc.stderr
    again = cli("anonymize", str(src), "--spec", "crime", "--engine", "mondrian", "--ledger", url)
    assert_one_line_error(again, "already released")


def test_publish_order_ignores_the_order_rows_come_in() -> None:
    rows = [[i % 3, f"[{i % 7}0-{i % 7}9]", "Theft" if i % 2 else "Fraud"] for i in range(50)]
    shuffled = [rows[i] for i in np.random.default_rng(1).permutation(len(rows))]
    assert publish_order(rows, 9, lead=1) == publish_order(shuffled, 9, lead=1)
    assert publish_order(rows, 9, lead=1) != publish_order(rows, 10, lead=1)


def test_ledger_without_report_ids_counts_identical_rows_as_occurrences(tmp_path: Path) -> None:
    """A census-like file (no report id, station or time): identical rows are different people and are all
    released; a second run of the same file releases nothing."""
    from tests.stream.cli.test_anonymize import SPEC

    spec = tmp_path / "tiny.toml"
    spec.write_text(SPEC)
    rows = [{"name": f"p{i}", "age": 20 + i % 5, "colour": ["red", "blue"][i % 2], "offence": ["Theft", "Fraud"][i % 2]}
            for i in range(40)]  # every row has 3 identical twins
    src = _write(pd.DataFrame(rows), tmp_path / "a.csv")
    ledger, rep = tmp_path / "l.db", tmp_path / "r.json"
    proc = cli("anonymize", str(src), "--spec", str(spec), "-k", "4", "--ledger", str(ledger), "--report", str(rep))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(rep.read_text())["ledger"]["excluded"] == 0
    assert_one_line_error(cli("anonymize", str(src), "--spec", str(spec), "-k", "4", "--ledger", str(ledger)),
                          "already released")
