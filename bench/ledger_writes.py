"""Benchmark: the ledger's bulk writes on PostgreSQL, with and without the JSON fast path.

    .venv/bin/python bench/ledger_writes.py

On a throwaway PostgreSQL cluster (started like the tests do), per path (``fast``: ``db/bulk.py``'s
one JSON document per statement; ``portable``: SQLAlchemy's insertmanyvalues / IN lists, what
SQLite uses):

  * ingest: 20,000 validated reports written to the pending pool in batches of 2,000 (the first
    batch is a warm-up and not timed): wall time and this process's CPU time, which is what competes
    with faust's event loop for the GIL in a worker;
  * store: the ledger transaction of one 10,000-report CG-Kanon release (release row, records,
    10,000 released fingerprints, 10,000 pool state updates).

Writes bench/results/ledger_writes.json and prints a table.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import SecretStr

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import db.bulk
from bench._common import print_table, write_results
from db import Database, PoolRepository
from db.ledger import IncomingReport
from db.windows import WindowPolicy
from stream.config.settings import Settings
from stream.intake.validate import Clean, ReportValidator, to_incoming
from stream.io.specs import load_schema
from stream.ops.runtime import migrate
from stream.station.simulate import generate_day
from stream.testing.reports import DAY, spec_ref
from stream.testing.services import PostgresServer
from stream.worker.release import Orchestrator, window_policy


def incoming(settings: Settings, stations: int, per_station: int) -> list[IncomingReport]:
    validator = ReportValidator(load_schema(settings.spec), settings.person_columns)
    reports = [r for rs in generate_day(stations, per_station, seed=1, day=DAY).values() for r in rs]
    out = []
    for r in reports:
        clean = validator.check(json.dumps(r).encode())
        assert isinstance(clean, Clean), f"a simulated report was rejected: {clean}"
        out.append(to_incoming(clean, settings.key_bytes(), settings.window_key_for(r["station_id"]), True))
    return out


def settings(pg: PostgresServer, name: str, workdir: Path, cap: int) -> Settings:
    """The bench's settings on a new database ``name``: windows of at most ``cap`` reports."""
    return Settings(database_url=pg.create_database(name), windows=WindowPolicy(cap=cap), spec=spec_ref(),
                    fingerprint_key=SecretStr("bench"), data_dir=workdir, broker_url="kafka://127.0.0.1:1")


def run(pg: PostgresServer, path: str, workdir: Path) -> dict[str, Any]:
    fast = db.bulk.use_fast_path
    if path == "portable":
        db.bulk.use_fast_path = lambda session: False
    try:
        out: dict[str, Any] = {"path": path}
        # ingest: 5 stations x 4,000 reports, no window closes
        s = settings(pg, f"ingest_{path}", workdir, cap=1_000_000)
        migrate(s)
        ledger = Database(s.db_url())
        reports, pool, now = incoming(s, 5, 4000), PoolRepository(ledger, window_policy(s)), datetime.now(UTC)
        pool.ingest(reports[:2000], [], now)
        wall, cpu = time.perf_counter(), time.process_time()
        for i in range(2000, len(reports), 2000):
            pool.ingest(reports[i:i + 2000], [], now)
        n = len(reports) - 2000
        out.update(ingest_reports=n, ingest_wall_s=round(time.perf_counter() - wall, 3),
                   ingest_cpu_s=round(time.process_time() - cpu, 3))
        out["ingest_cpu_us_per_report"] = round(out["ingest_cpu_s"] / n * 1e6, 1)
        ledger.dispose()
        # store: one station's 10,000-report window, released with the service default engine
        s = settings(pg, f"store_{path}", workdir, cap=10_000)
        migrate(s)
        ledger = Database(s.db_url())
        reports = incoming(s, 1, 10_000)
        pool = PoolRepository(ledger, window_policy(s))
        for i in range(0, len(reports), 2000):
            pool.ingest(reports[i:i + 2000], [], datetime.now(UTC))
        orchestrator = Orchestrator(s, ledger, load_schema(s.spec), "bench")
        timed: dict[str, float] = {}
        store = orchestrator.repo.store

        def timed_store(*args: Any, **kwargs: Any) -> bool:
            wall, cpu = time.perf_counter(), time.process_time()
            try:
                return store(*args, **kwargs)
            finally:
                timed.update(wall=time.perf_counter() - wall, cpu=time.process_time() - cpu)

        # a timing wrapper put over the bound method for this one run (mypy refuses assigning to a method)
        orchestrator.repo.store = timed_store  # type: ignore[method-assign]
        (wid, why), = orchestrator.due(datetime.now(UTC))
        window = orchestrator.claim(wid, why, datetime.now(UTC))
        assert window is not None and orchestrator.release_window(window, datetime.now(UTC)) is not None
        out.update(store_reports=10_000, store_wall_s=round(timed["wall"], 3), store_cpu_s=round(timed["cpu"], 3))
        ledger.dispose()
        return out
    finally:
        db.bulk.use_fast_path = fast


def main() -> int:
    workdir = Path(tempfile.mkdtemp(prefix="anonstream-ledger-bench-"))
    pg = PostgresServer()
    try:
        rows: list[dict[str, Any]] = []
        for path in ("portable", "fast", "portable", "fast"):
            print(f"{path} path ...", file=sys.stderr, flush=True)
            rows.append(run(pg, path, workdir / f"{path}{len(rows)}"))
    finally:
        pg.stop()
    write_results("ledger_writes", {"rows": rows})
    print_table(rows, ["path", "ingest_reports", "ingest_wall_s", "ingest_cpu_s", "ingest_cpu_us_per_report",
                       "store_reports", "store_wall_s", "store_cpu_s"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
