"""Benchmark: the intersection attack (core/attacks/linking.py) on every engine and every release path.

    .venv/bin/python bench/linking_attack.py [--per-day 600] [--overlap 0.08] [--engines a,b] [--k 5]

Two generated days of crime reports (core.generators.crime): day 1 from station S1; day 2 from S2
plus ``overlap`` of day 1's reports again, pushed under S2 with new report ids (same content, new
keys: what two overlapping extracts of one department look like). The adversary knows each shared
report's QI values (age, sex, suburb, postcode, reporter) and exactly which releases hold it, takes
the rows of each release whose labels cover it and intersects the offences.

Paths per engine:

* ``batch``: ``anonstream anonymize`` run on each file separately (no ledger; the CLI warns);
* ``batch-ledger``: the same two runs with ``--ledger FILE`` (default guard ``content``);
* ``stream``: the stream's release path (pool, windows per station, default link guard ``content``),
  in process on SQLite;
* ``stream-report`` (with ``--report-guard``): the stream with ``link_guard=report`` (the old rule).

Columns: ``shared`` reports, ``linked`` (in two releases), ``disclosed`` (the intersection leaves
only the true offence though no single release did), ``narrowed`` (fewer than k consistent
candidates), ``homogeneous`` (a single release already shows one offence: not linking; ``-l 2``).
Writes bench/results/linking_attack.json and prints the table.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
import pandas as pd
from sqlalchemy import select

import migrations
from bench._common import print_table, write_results
from core.attacks import intersection_attack
from core.engines.registry import engine_names
from core.generators.crime import generate_crime_reports
from db import Database, PoolRepository
from db.models import ReleasedFingerprint, ReleaseRecords
from stream.config.settings import Settings
from stream.intake.validate import Clean, ReportValidator, to_incoming
from stream.io.specs import load_schema
from stream.worker.release import Orchestrator, window_policy

KEY = "linking-attack-bench-key"
SCHEMA = load_schema("crime")


def overlapping_days(per_day: int, overlap: float, seed: int) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Day 1 (S1), day 2 (S2 plus re-keyed copies of ``overlap`` of day 1) and the shared rows."""
    rng = np.random.default_rng(seed)
    day1 = generate_crime_reports(rng, per_day=per_day, start="2024-03-01")
    day2 = generate_crime_reports(rng, per_day=per_day, start="2024-03-02", prefix="T")
    day2["station_id"] = "S2"
    day2["report_id"] = [f"S2-{i:06d}" for i in range(len(day2))]
    n = max(1, round(overlap * per_day))
    shared = day1.iloc[np.sort(rng.choice(len(day1), n, replace=False))].copy()
    copies = shared.assign(station_id="S2", report_id=[f"S2-copy-{i:05d}" for i in range(n)])
    return day1, pd.concat([day2, copies], ignore_index=True), shared.reset_index(drop=True)


def _settings(tmp: Path, engine: str, k: int, guard: str = "content", params: dict[str, Any] | None = None) -> Settings:
    return Settings(database_url=f"sqlite:///{tmp / 'ledger.db'}", data_dir=tmp, engine=engine, k=k,
                    fingerprint_key=KEY, idle_timeout_s=1.0, link_guard=guard, engine_params=params or {})


def _ledger_releases(url: str, settings: Settings, shared: pd.DataFrame) -> tuple[list[pd.DataFrame], list[list[int]]]:
    """Every release's rows from the ledger, and per shared report the releases that hold it."""
    from stream.batch.history import fingerprint_rows

    db = Database(url)
    with db.read() as s:
        recs = list(s.execute(select(ReleaseRecords)).scalars())
        where = s.execute(select(ReleasedFingerprint.content_fp, ReleasedFingerprint.release_id)).all()
    db.dispose()
    order = {r.release_id: i for i, r in enumerate(recs)}
    frames = [pd.DataFrame(r.rows, columns=r.columns) for r in recs]
    by_content: dict[str, list[int]] = {}
    for cfp, rid in where:
        by_content.setdefault(cfp, []).append(order[rid])
    content = fingerprint_rows(shared, SCHEMA, settings).content
    return frames, [by_content.get(c, []) for c in content]


def run_batch(tmp: Path, engine: str, k: int, days: tuple[pd.DataFrame, pd.DataFrame], shared: pd.DataFrame,
              ledger: bool, params: dict[str, Any] | None = None) -> tuple[list[pd.DataFrame], list[list[int]]]:
    from stream.cli.main import main

    outs = []
    for i, day in enumerate(days):
        src, out = tmp / f"day{i + 1}.csv", tmp / f"day{i + 1}-{engine}-{ledger}.csv"
        day.to_csv(src, index=False)
        args = ["anonymize", str(src), "--spec", "crime", "--engine", engine, "-k", str(k), "--out", str(out)]
        args += [f"--param={n}={json.dumps(v)}" for n, v in (params or {}).items()]
        if ledger:
            args += ["--ledger", str(tmp / "ledger.db")]
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            rc = main(args)
        if rc != 0:
            raise RuntimeError(f"anonymize {engine} day {i + 1} exited {rc}")
        outs.append(pd.read_csv(out, dtype=str, keep_default_na=False))
    if ledger:
        return _ledger_releases(f"sqlite:///{tmp / 'ledger.db'}", _settings(tmp, engine, k), shared)
    return outs, [[0, 1]] * len(shared)  # no ledger: every shared report is in both inputs (none suppressed)


def run_stream(tmp: Path, engine: str, k: int, days: tuple[pd.DataFrame, pd.DataFrame], shared: pd.DataFrame,
               guard: str, params: dict[str, Any] | None = None) -> tuple[list[pd.DataFrame], list[list[int]]]:
    settings = _settings(tmp, engine, k, guard, params)
    url = settings.db_url()
    migrations.upgrade(url)
    db = Database(url)
    pool = PoolRepository(db, window_policy(settings))
    orch = Orchestrator(settings, db, SCHEMA, "bench")
    validator = ReportValidator(SCHEMA, settings.person_columns)
    now = datetime(2030, 1, 1, tzinfo=UTC)
    for d, day in enumerate(days):
        incoming = []
        for rec in day.to_dict("records"):
            clean = validator.check(rec)
            assert isinstance(clean, Clean)
            incoming.append(to_incoming(clean, KEY.encode(), settings.window_key_for(clean.station_id), True,
                                        settings.content_columns))
        pool.ingest(incoming, [], now + timedelta(hours=d))
        orch.close_due(now + timedelta(hours=d, minutes=5))
    db.dispose()
    return _ledger_releases(url, settings, shared)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--per-day", type=int, default=600)
    ap.add_argument("--overlap", type=float, default=0.08)
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--engines", default=",".join(engine_names()))
    ap.add_argument("--paths", default="batch,batch-ledger,stream")
    ap.add_argument("--report-guard", action="store_true", help="also run the stream with link_guard=report")
    args = ap.parse_args()
    os.environ["ANONSTREAM_FINGERPRINT_KEY"] = KEY  # the batch CLI's key (the stream gets it in Settings)
    day1, day2, shared = overlapping_days(args.per_day, args.overlap, args.seed)
    paths = args.paths.split(",") + (["stream-report"] if args.report_guard else [])
    rows: list[dict[str, Any]] = []
    for engine in args.engines.split(","):
        for path in paths:
            t0 = time.perf_counter()
            with tempfile.TemporaryDirectory() as tmp:
                if path.startswith("batch"):
                    rels, member = run_batch(Path(tmp), engine, args.k, (day1, day2), shared, path == "batch-ledger")
                else:
                    guard = "report" if path == "stream-report" else "content"
                    rels, member = run_stream(Path(tmp), engine, args.k, (day1, day2), shared, guard)
            res = intersection_attack(rels, shared, SCHEMA, args.k, membership=member)
            row = {"engine": engine, "path": path, "releases": len(rels), "shared": len(shared),
                   **{k: v for k, v in res.as_dict().items() if k not in ("k", "persons")},
                   "seconds": round(time.perf_counter() - t0, 1)}
            rows.append(row)
            print(json.dumps(row), file=sys.stderr)
    cols = ["engine", "path", "releases", "shared", "linked", "disclosed", "narrowed", "homogeneous",
            "inconsistent", "seconds"]
    path = write_results("linking_attack", {"per_day": args.per_day, "overlap": args.overlap, "k": args.k,
                                            "seed": args.seed, "rows": rows})
    print_table(rows, cols)
    print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
