"""``anonstream aggregate`` end to end: noisy counts with intervals, charged to a ledger until a block's
cap refuses the next query (one line naming the block, nothing written)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from core.dp.mechanism import rho_from_epsilon
from core.generators.crime import generate_crime_reports
from tests.stream.cli.test_anonymize import assert_one_line_error, cli


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("agg") / "reports.csv"
    generate_crime_reports(np.random.default_rng(7), stations=2, days=2, per_day=120).to_csv(path, index=False)
    return path


def test_counts_are_charged_until_a_block_refuses(reports: Path, tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.db"
    query = ("aggregate", str(reports), "--spec", "crime", "--by", "region,offence", "--epsilon", "5",
             "--budget", "9", "--ledger", str(ledger))
    outs = [tmp_path / f"c{i}.csv" for i in range(3)]
    for out in outs[:2]:  # two queries of rho(5) fit a cap of rho(9); a third does not
        proc = cli(*query, "--out", str(out))
        assert proc.returncode == 0, proc.stderr
        assert "144 cells by region x offence" in proc.stdout
    table = pd.read_csv(outs[0])
    assert list(table.columns) == ["region", "offence", "count", "ci95"] and len(table) == 8 * 18
    assert (table["count"] >= 0).all() and table["ci95"].nunique() == 1
    raw = pd.read_csv(reports)
    assert table["count"].sum() == pytest.approx(len(raw), abs=40 * len(table) ** 0.5)
    assert not table["count"].equals(pd.read_csv(outs[1])["count"])  # fresh noise per query

    assert_one_line_error(cli(*query, "--out", str(outs[2])), "privacy budget of block station:S1/day:2024-01-01")
    assert not outs[2].exists() and not list(tmp_path.glob(".c2.csv.*"))  # nothing written

    from db import Database, budget

    db = Database(f"sqlite:///{ledger}")
    try:
        with db.read() as s:
            sums = budget.spent_by_block(s)
            assert len(budget.spends(s)) == 2 * 4  # two queries x four station-days, the refusal spent nothing
    finally:
        db.dispose()
    assert sorted(sums) == ["station:S1/day:2024-01-01", "station:S1/day:2024-01-02",
                            "station:S2/day:2024-01-01", "station:S2/day:2024-01-02"]
    assert all(v == pytest.approx(2 * rho_from_epsilon(5, 1e-6)) and v <= rho_from_epsilon(9, 1e-6)
               for v in sums.values())


def test_without_ledger_and_bad_input(reports: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from stream.cli.main import main

    out = tmp_path / "weeks.csv"
    assert main(["aggregate", str(reports), "--spec", "crime", "--by", "week,region", "--epsilon", "1",
                 "--out", str(out)]) == 0
    assert "not accounted" in capsys.readouterr().out
    assert pd.read_csv(out)["week"].unique().tolist() == ["2024-W01"]
    assert main(["aggregate", str(reports), "--spec", "crime", "--by", "sex", "--epsilon", "1", "--unit", "person",
                 "--person", "name,dob", "--max-contributions", "2", "--out", str(out)]) == 0
    assert pd.read_csv(out)["sex"].tolist() == ["F", "M", "X"]
    assert main(["aggregate", str(reports), "--spec", "crime", "--by", "sex", "--epsilon", "1", "--unit", "person",
                 "--out", str(out)]) == 2
    assert "needs person" in capsys.readouterr().err
    assert main(["aggregate", str(reports), "--spec", "crime", "--by", "colour", "--epsilon", "1",
                 "--out", str(out)]) == 2
    assert "column 'colour' is not in the input" in capsys.readouterr().err
    assert main(["aggregate", str(reports), "--spec", "crime", "--by", "offence", "--epsilon", "2",
                 "--budget", "1", "--out", str(out)]) == 2
    assert "below one release's epsilon" in capsys.readouterr().err


def test_a_refusal_draws_no_noise(reports: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    import core.dp.plan
    from stream.cli.main import main

    query = ["aggregate", str(reports), "--spec", "crime", "--by", "offence", "--epsilon", "5", "--budget", "5",
             "--ledger", str(tmp_path / "l.db"), "--out", str(tmp_path / "c.csv")]
    assert main(query) == 0

    def no_noise(*_a: object, **_k: object) -> None:
        raise AssertionError("noise drawn for a refused query")

    monkeypatch.setattr(core.dp.plan, "count_tables", no_noise)
    assert main(query) == 2
    assert "is exhausted: rho 0 of" in capsys.readouterr().err
