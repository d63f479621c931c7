"""Benchmark: a registered station's release with and without a flood of invented station ids.

Setup: production mode (station registry enforced), one worker, the embedded broker (tansu) and a
throwaway PostgreSQL cluster, one registered station ``S1`` pushing 200 generated reports of one
day, idle timeout 2 s. The flood is 3,000 valid-looking reports, each from a different unregistered
station id, pushed BEFORE S1's reports (the review's attack: before the registry, each invented
station opened a window, and S1's release waited 9.2 s -> 226 s).

Measures, per run, the seconds from starting the worker to S1's release being published (in the
ledger), to S1's last report being in the pending pool (ingest: the flood is read first), the
difference (how long S1's release waited once its reports were in), and the windows opened. With
``--first-sight`` it also runs the flood with embedded-mode registration on first sight (every
invented station opens a window: its one-report window can only be carried, and such windows are
carried in bulk, so S1's release waits for the flood's ingest, not for 3,000 releases).

    .venv/bin/python bench/station_flood.py [--first-sight]

Writes bench/results/station_flood.json and prints a table. Wall-clock figures on a shared 2-core
machine are noisy; the tests assert on counts, never on these times.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sqlalchemy import func, select  # noqa: E402

from db.models import PendingReport, Release, Window  # noqa: E402
from db.stations import StationRegistry  # noqa: E402
from stream.ops.broker import EmbeddedBroker  # noqa: E402
from stream.ops.runtime import quiet_clients  # noqa: E402
from stream.testing.reports import day_of_reports  # noqa: E402
from stream.testing.scenario import Scenario  # noqa: E402
from stream.testing.services import PostgresServer  # noqa: E402

RESULTS = ROOT / "bench" / "results"
KEY = "9f2c4e71a0b35d86c1e7f04a92b3d5e6a7c8f9012b3c4d5e6f708192a3b4c5d6"
SIGNING_KEY = "3c5e7a9b1d2f4a6c8e0b2d4f6a8c0e1b3d5f7a9c2e4b6d8f0a1c3e5b7d9f1a2c"


def run(kafka: EmbeddedBroker, pg: PostgresServer, workdir: Path, flood: int, mode: str) -> dict[str, Any]:
    overrides: dict[str, Any] = {"fingerprint_key": KEY}
    if mode == "registered":
        overrides["mode"] = "production"
        overrides["signing_key"] = SIGNING_KEY
    else:
        overrides["register_stations"] = "first-sight"
    sc = Scenario(kafka, pg, workdir, **overrides)
    try:
        StationRegistry(sc.db).add(["S1"], "bench", datetime.now(UTC))
        reports = day_of_reports(1, 200, seed=5)
        template = reports["S1"][0]
        extra = [(f"F{i:04d}", json.dumps(template | {"station_id": f"F{i:04d}", "report_id": f"F{i:04d}-1"})
                  .encode()) for i in range(flood)]
        sc.push({}, extra)
        sc.push(reports)
        started = time.monotonic()
        sc.start_worker()
        elapsed = ingested = None
        while time.monotonic() - started < 600:
            with sc.db.read() as s:
                done = s.execute(select(func.count()).select_from(Release).where(
                    Release.state == "published", Release.window_key == "station:S1")).scalar_one()
                pooled = s.execute(select(func.count()).select_from(PendingReport).where(
                    PendingReport.station_id == "S1")).scalar_one()
            if ingested is None and pooled >= len(reports["S1"]):
                ingested = time.monotonic() - started
            if done:
                elapsed = time.monotonic() - started
                break
            time.sleep(0.2)
        with sc.db.read() as s:
            windows = s.execute(select(func.count()).select_from(Window)).scalar_one()
        return {"flood": flood, "mode": mode, "s1_release_s": None if elapsed is None else round(elapsed, 2),
                "s1_ingested_s": None if ingested is None else round(ingested, 2),
                "s1_wait_after_ingest_s": None if elapsed is None or ingested is None else round(elapsed - ingested, 2),
                "windows_opened": int(windows)}
    finally:
        sc.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--first-sight", action="store_true",
                        help="also run the flood with first-sight registration (slow)")
    args = parser.parse_args()
    quiet_clients(False)
    workdir = Path(tempfile.mkdtemp(prefix="anonstream-flood-"))
    pg = PostgresServer()
    kafka = EmbeddedBroker(log_file=workdir / "broker.log").start()
    rows = []
    try:
        plan = [(0, "registered"), (3000, "registered")] + ([(3000, "first-sight")] if args.first_sight else [])
        for i, (flood, mode) in enumerate(plan):
            rows.append(run(kafka, pg, workdir / f"run{i}", flood, mode))
    finally:
        kafka.stop()
        pg.stop()
    base = rows[0]["s1_release_s"] or float("nan")
    for r in rows:
        r["vs_no_flood"] = round((r["s1_release_s"] or float("nan")) / base, 2)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "station_flood.json").write_text(json.dumps({"runs": rows}, indent=2))
    print(f"{'flood':>6} {'mode':<12} {'S1 release (s)':>15} {'x no flood':>10} {'S1 in pool (s)':>15} "
          f"{'then release (s)':>17} {'windows':>8}")
    for r in rows:
        print(f"{r['flood']:>6} {r['mode']:<12} {r['s1_release_s']!s:>15} {r['vs_no_flood']:>10} "
              f"{r['s1_ingested_s']!s:>15} {r['s1_wait_after_ingest_s']!s:>17} {r['windows_opened']:>8}")


if __name__ == "__main__":
    main()
