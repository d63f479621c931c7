"""``anonstream aggregate`` end to end: a declared scope charged to the ledger's policy until a block
refuses; overrides that would re-open an exhausted block refused; rows outside the scope not counted;
the spend committed before any noise, so a kill never leaves output without its spend."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from core.dp.mechanism import rho_from_epsilon
from core.generators.crime import generate_crime_reports
from stream.cli.main import main
from tests.stream.cli.test_anonymize import ROOT, cli

SCOPE = ["--stations", "S1,S2", "--days", "2024-01-01..2024-01-02"]
BLOCKS = ["station:S1/day:2024-01-01", "station:S1/day:2024-01-02",
          "station:S2/day:2024-01-01", "station:S2/day:2024-01-02"]


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("agg") / "reports.csv"
    generate_crime_reports(np.random.default_rng(7), stations=2, days=2, per_day=120).to_csv(path, index=False)
    return path


def _spends(ledger: Path) -> dict[str, float]:
    from db import Database, budget

    db = Database(f"sqlite:///{ledger}")
    try:
        with db.read() as s:
            return budget.spent_by_block(s)
    finally:
        db.dispose()


def test_counts_are_charged_until_a_block_refuses(reports: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    ledger = tmp_path / "ledger.db"
    query = ["aggregate", str(reports), "--spec", "crime", "--by", "region,offence", "--epsilon", "1",
             "--budget", "2", "--ledger", str(ledger), *SCOPE]
    fits = math.floor(rho_from_epsilon(2, 1e-6) / rho_from_epsilon(1, 1e-6))  # 3: the oracle, by zCDP composition
    outs = [tmp_path / f"c{i}.csv" for i in range(fits + 1)]
    for out in outs[:fits]:
        assert main([*query, "--out", str(out)]) == 0
        assert "144 cells by region x offence" in capsys.readouterr().out
    table = pd.read_csv(outs[0])
    assert list(table.columns) == ["region", "offence", "count", "ci95"] and len(table) == 8 * 18
    assert table["ci95"].nunique() == 1
    raw = pd.read_csv(reports)
    assert table["count"].sum() == pytest.approx(len(raw), abs=5 * 12 * len(table) ** 0.5)  # 5 sd of the sum
    assert not table["count"].equals(pd.read_csv(outs[1])["count"])  # fresh noise per query
    assert main([*query, "--out", str(outs[fits])]) == 2
    assert "privacy budget of block station:S1/day:2024-01-01 is exhausted" in capsys.readouterr().err
    assert not outs[fits].exists() and not list(tmp_path.glob(f".{outs[fits].stem}*"))  # nothing written
    sums = _spends(ledger)
    assert sorted(sums) == BLOCKS
    assert all(v == pytest.approx(fits * rho_from_epsilon(1, 1e-6)) for v in sums.values())


@pytest.mark.parametrize(("override", "words"), [
    (["--block", "feed-day"], "blocks feed-day (the ledger's: station-day)"),
    (["--block", "dataset"], "blocks dataset (the ledger's: station-day)"),
    (["--feed", "other"], "feed other is not in the ledger's privacy policy"),
    (["--budget", "50"], "cap_epsilon 50 (the ledger's: 1)"),
    (["--budget", "1000", "--epsilon", "100"], "--epsilon: Input should be less than or equal to 10"),
    (["--epsilon", "5"], "above the largest allowed per query"),
    (["--delta", "1e-9"], "delta 1e-09 (the ledger's: 1e-06)"),
    (["--epsilon", "1e-12"], "--epsilon: Input should be greater than or equal to 0.001"),
])
def test_overrides_cannot_reopen_an_exhausted_block(reports: Path, tmp_path: Path, override: list[str],
                                                     words: str, capsys: pytest.CaptureFixture[str]) -> None:
    ledger = tmp_path / "ledger.db"
    base = ["aggregate", str(reports), "--spec", "crime", "--by", "offence", "--ledger", str(ledger), *SCOPE]
    assert main([*base, "--epsilon", "1", "--budget", "1", "--out", str(tmp_path / "first.csv")]) == 0
    assert main([*base, "--epsilon", "1", "--out", str(tmp_path / "second.csv")]) == 2  # exhausted
    capsys.readouterr()
    before = _spends(ledger)
    out = tmp_path / "again.csv"
    args = [*base, *(["--epsilon", "1"] if "--epsilon" not in override else []), *override, "--out", str(out)]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("error:") == 1, err
    assert not out.exists() and _spends(ledger) == before  # nothing written, nothing spent


def test_rows_outside_the_scope_are_not_counted_and_a_dry_run_spends_nothing(
        reports: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    raw = pd.read_csv(reports)
    outlier = raw.iloc[[0]].assign(event_time="2023-10-16T09:00:00Z")  # eleven weeks earlier
    data = tmp_path / "with-outlier.csv"
    pd.concat([raw, outlier]).to_csv(data, index=False)
    ledger, out = tmp_path / "ledger.db", tmp_path / "weeks.csv"
    query = ["aggregate", str(data), "--spec", "crime", "--by", "week,region", "--epsilon", "1", "--ledger",
             str(ledger), *SCOPE]
    assert main([*query, "--dry-run", "--out", str(out)]) == 0
    said = capsys.readouterr().out
    assert "dry run, nothing spent" in said and "±" in said and not out.exists() and _spends(ledger) == {}
    assert main([*query, "--out", str(out)]) == 0
    said = capsys.readouterr().out
    assert "1 row(s) outside it not counted" in said
    assert pd.read_csv(out)["week"].unique().tolist() == ["2024-W01"]  # the outlier's week is no cell
    assert main(["aggregate", str(data), "--spec", "crime", "--by", "offence", "--epsilon", "1", "--ledger",
                 str(ledger), "--out", str(out)]) == 2
    assert "need --stations and --days" in capsys.readouterr().err


def test_without_ledger_and_bad_input(reports: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "weeks.csv"
    assert main(["aggregate", str(reports), "--spec", "crime", "--by", "week,region", "--epsilon", "1",
                 "--days", "2024-01-01..2024-01-02", "--out", str(out)]) == 0
    assert "not accounted" in capsys.readouterr().out
    assert pd.read_csv(out)["week"].unique().tolist() == ["2024-W01"]
    assert main(["aggregate", str(reports), "--spec", "crime", "--by", "week", "--epsilon", "1",
                 "--out", str(out)]) == 2
    assert "needs declared days" in capsys.readouterr().err
    assert main(["aggregate", str(reports), "--spec", "crime", "--by", "sex", "--epsilon", "1", "--unit", "person",
                 "--person", "name,dob", "--max-contributions", "2", "--out", str(out)]) == 0
    assert pd.read_csv(out)["sex"].tolist() == ["F", "M", "X"]
    assert main(["aggregate", str(reports), "--spec", "crime", "--by", "sex", "--epsilon", "1", "--unit", "person",
                 "--out", str(out)]) == 2
    assert "needs person" in capsys.readouterr().err
    assert main(["aggregate", str(reports), "--spec", "crime", "--by", "colour", "--epsilon", "1",
                 "--out", str(out)]) == 2
    assert "column 'colour' is not in the input" in capsys.readouterr().err
    assert main(["aggregate", str(reports), "--spec", "crime", "--by", "offence", "--epsilon", "1",
                 "--budget", "0.5", "--out", str(out)]) == 2
    assert "below one release's epsilon" in capsys.readouterr().err


def test_a_refusal_draws_no_noise(reports: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    import core.dp.plan

    query = ["aggregate", str(reports), "--spec", "crime", "--by", "offence", "--epsilon", "1", "--budget", "1",
             "--ledger", str(tmp_path / "l.db"), "--out", str(tmp_path / "c.csv"), *SCOPE]
    assert main(query) == 0

    def no_noise(*_a: object, **_k: object) -> None:
        raise AssertionError("noise drawn for a refused query")

    monkeypatch.setattr(core.dp.plan, "count_tables", no_noise)
    assert main(query) == 2
    assert "is exhausted: rho 0 of" in capsys.readouterr().err


@pytest.mark.parametrize("point", ["aggregate-after-charge", "aggregate-mid-write"])
def test_a_kill_never_leaves_output_without_its_spend(reports: Path, tmp_path: Path, point: str) -> None:
    """SIGKILL after the spend committed, before or while the output is written: a spend without output
    (the budget is lost, nothing is revealed), never the reverse."""
    ledger, out = tmp_path / "ledger.db", tmp_path / "counts.csv"
    proc = subprocess.run([sys.executable, "-m", "stream.cli.main", "aggregate", str(reports), "--spec", "crime",
                           "--by", "offence", "--epsilon", "1", "--ledger", str(ledger), "--out", str(out), *SCOPE],
                          cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "ANONSTREAM_FAULT_POINT": point})
    assert proc.returncode == -9, proc.stderr  # killed by the fault point
    assert not out.exists()
    assert sorted(_spends(ledger)) == BLOCKS  # the spend committed first
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".counts") and p.stat().st_size > 0 and
                point == "aggregate-after-charge"]  # before the write: not even a temporary file
    assert cli("budget", "show", "--ledger", str(ledger)).stdout.count("station:") == 4


def test_budget_commands_show_and_change_the_policy_with_an_audit_entry(reports: Path, tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    ledger = tmp_path / "ledger.db"
    assert main(["budget", "show", "--ledger", str(ledger)]) == 0
    assert "none recorded yet" in capsys.readouterr().out
    assert main(["budget", "set-cap", "--epsilon", "5", "--ledger", str(ledger)]) == 2
    assert "no privacy policy yet" in capsys.readouterr().err
    query = ["aggregate", str(reports), "--spec", "crime", "--by", "offence", "--epsilon", "1", "--budget", "1",
             "--ledger", str(ledger), "--out", str(tmp_path / "c.csv"), *SCOPE]
    assert main(query) == 0
    assert main(query) == 2  # exhausted
    capsys.readouterr()
    assert main(["budget", "set-cap", "--epsilon", "2", "--actor", "duty-officer", "--ledger", str(ledger)]) == 0
    assert "epsilon 1 -> 2" in capsys.readouterr().out
    assert main(query[:query.index("--budget")] + query[query.index("--budget") + 2:]) == 0  # the ledger's cap now
    assert main(["budget", "show", "--ledger", str(ledger)]) == 0
    shown = capsys.readouterr().out
    assert "cap epsilon 2" in shown and shown.count("station:") == 4
    from db import Database
    from db.console_queries import audit_entries

    db = Database(f"sqlite:///{ledger}")
    try:
        with db.read() as s:
            entries = audit_entries(s)
    finally:
        db.dispose()
    assert {(e["action"], e["actor"]) for e in entries} >= {("dp-cap-set", "duty-officer")}
