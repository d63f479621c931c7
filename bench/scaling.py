"""Benchmark: N workers (1..4) on one broker (16 partitions) and one PostgreSQL, each under the same CPU quota.

Simulated stations whose daily volumes follow a Zipf law (a few large, many small; ``--stations``,
``--zipf``) push ``--reports`` reports of one day before the workers start (a backlog, so throughput is the
workers' own rate, not the feed's). Then N workers start, each in its own cgroup limited to ``--quota`` CPUs
(bench/_cgroup.py; unlimited where cgroups cannot be written, and said so), as compose starts replicas, and
the run ends when every report is accounted for and every release published.

Per N: throughput (reports/s from the first report the workers ingest to settled; their start-up apart),
reports per worker-CPU-second (the kernel's CPU time of each worker's cgroup, children included), balance (the
largest worker's share of released reports over 1/N), lock wait (PostgreSQL backends waiting on a lock,
sampled every 0.25 s: seconds of waiting summed over backends), latency from the end of the push to each
release's publication (p50/p95 over releases), peak memory per worker, and the reports topic's partition skew
(largest partition over mean). The push frames each station's reports with batch markers, as ``anonstream
push`` does, and each run's releases are reduced to their content (records and manifests without ids, record
order and DP noise: ``stream.testing.scenario.release_contents``) and hashed: ``same_as_n1`` says whether N
workers released byte for byte what one did.

    .venv/bin/python bench/scaling.py [--reports 50000] [--workers 1,2,3,4] [--quota 0.3]

Writes bench/results/scaling.json and prints a table.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
from kafka.partitioner.default import murmur2  # noqa: E402
from sqlalchemy import func, select, text  # noqa: E402

from bench._cgroup import Group, make_group, proc_cpu_s  # noqa: E402
from bench._common import print_table, write_results  # noqa: E402
from db.models import PendingReport, Release, Window  # noqa: E402
from stream.ops.broker import EmbeddedBroker, free_port  # noqa: E402
from stream.ops.runtime import quiet_clients, stop_process, worker_env  # noqa: E402
from stream.station.simulate import generate_day  # noqa: E402
from stream.testing.reports import DAY  # noqa: E402
from stream.testing.scenario import Scenario, release_contents  # noqa: E402
from stream.testing.services import PostgresServer  # noqa: E402

PARTITIONS = 16


def zipf_day(total: int, stations: int, s: float, seed: int) -> dict[str, list[dict[str, Any]]]:
    """One day of ``total`` reports over ``stations`` stations, station i's share proportional to 1/i^s."""
    weights = 1.0 / np.arange(1, stations + 1) ** s
    sizes = np.maximum(np.floor(weights / weights.sum() * total).astype(int), 20)
    out: dict[str, list[dict[str, Any]]] = {}
    for i, n in enumerate(sizes):
        day = generate_day(1, int(n), seed + i, DAY, prefix=f"Z{i + 1:02d}S")
        out.update(day)
    return out


def partition_skew(stations: dict[str, list[dict[str, Any]]]) -> float:
    """Largest partition's reports over the mean, keyed by station as the producer keys them."""
    load = np.zeros(PARTITIONS)
    for st, rows in stations.items():
        load[(murmur2(st.encode()) & 0x7FFFFFFF) % PARTITIONS] += len(rows)
    return float(load.max() / load.mean())


def spawn(sc: Scenario, group: Group | None, log: Path) -> subprocess.Popen[bytes]:
    """A worker as ``anonstream run`` in its own cgroup (moved there before it execs, so children follow)."""
    settings = sc.settings.with_updates(web_port=free_port())
    cmd = [sys.executable, "-m", "stream.cli.main", "run", "--no-migrate"]
    if group is not None:
        cmd = ["sh", "-c", group.shell_prefix() + ' && exec "$0" "$@"', *cmd]
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        proc = subprocess.Popen(cmd, env=worker_env(settings), stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)
    sc.workers.append(proc)
    return proc


class LockSampler(threading.Thread):
    """Samples PostgreSQL backends waiting on a lock, integrating them over time (backend-seconds)."""

    def __init__(self, sc: Scenario, interval: float = 0.25) -> None:
        super().__init__(daemon=True)
        self.sc, self.interval, self.wait_s, self.stop = sc, interval, 0.0, threading.Event()
        self.first_ingest: float | None = None  # monotonic time the pool first held a report

    def run(self) -> None:
        query = text("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                     "AND datname = current_database()")
        while not self.stop.wait(self.interval):
            with self.sc.db.read() as s:
                self.wait_s += int(s.execute(query).scalar_one()) * self.interval
                if self.first_ingest is None and s.execute(select(PendingReport.fingerprint).limit(1)).first():
                    self.first_ingest = time.monotonic()


def run(kafka: EmbeddedBroker, pg: PostgresServer, root: Path, n: int, quota: float,
        reports: dict[str, list[dict[str, Any]]], concurrency: int) -> dict[str, Any]:
    workdir = root / f"n{n}"
    sc = Scenario(kafka, pg, workdir, reports_partitions=PARTITIONS, idle_timeout_s=2.0,
                  release_concurrency=concurrency)
    groups = [make_group(f"n{n}-w{i}", quota) for i in range(n)]
    try:
        sc.push(reports, batch="zipf-day")  # framed by batch markers, as `anonstream push` sends a day
        pushed_at = datetime.now(UTC)
        sampler = LockSampler(sc)
        started = time.monotonic()
        procs = [spawn(sc, g, workdir / f"worker-{i}.log") for i, g in enumerate(groups)]
        sampler.start()
        acc = sc.wait_settled(timeout=3600)
        settled = time.monotonic()
        sampler.stop.set()
        elapsed = settled - (sampler.first_ingest or started)  # the workers' start-up is reported apart
        cpu = [g.cpu_s() if g else proc_cpu_s(p.pid) for g, p in zip(groups, procs, strict=True)]
        mem = [g.peak_mb() if g else None for g in groups]
        with sc.db.read() as s:
            shares = dict(s.execute(select(Window.claimed_by, func.sum(Window.count))
                                    .where(Window.state == "released").group_by(Window.claimed_by)).tuples().all())
            published = list(s.execute(select(Release.published_at)).scalars())
        lat = sorted((p - pushed_at).total_seconds() for p in published if p is not None)
        contents = release_contents(sc.releases()[1])  # what was released, ids and record order apart
        blob = json.dumps(contents, sort_keys=True, default=str)
        digest = hashlib.sha256(blob.encode()).hexdigest()[:16]
        (root / f"contents-n{n}.json").write_text(blob)  # to find what differs when a digest does
        total = sum(len(v) for v in reports.values())
        by_worker = sorted((int(v) for v in shares.values()), reverse=True)
        return {"workers": n, "quota_cpus": quota if all(groups) else None, "reports": total,
                "released": acc.get("released", 0), "releases": len(published), "seconds": round(elapsed, 1),
                "startup_s": round((sampler.first_ingest or started) - started, 1),
                "throughput": round(total / elapsed, 1), "cpu_s": round(sum(cpu), 1),
                "per_cpu_s": round(total / max(sum(cpu), 1e-9), 1),
                "balance": round(by_worker[0] / (sum(by_worker) / n), 2) if by_worker else None,
                "worker_shares": by_worker, "lock_wait_s": round(sampler.wait_s, 1),
                "p50_s": round(statistics.median(lat), 1) if lat else None,
                "p95_s": round(lat[int(0.95 * (len(lat) - 1))], 1) if lat else None,
                "peak_mb": [round(m) if m else None for m in mem], "content_sha256": digest,
                "published_records": sum(len(c["records"]) for c in contents)}
    finally:
        for p in sc.workers:
            stop_process(p)
        sc.close()
        for g in groups:
            if g:
                g.remove()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reports", type=int, default=50_000)
    parser.add_argument("--stations", type=int, default=60)
    parser.add_argument("--zipf", type=float, default=1.0, help="Zipf exponent of station volumes")
    parser.add_argument("--workers", default="1,2,3,4")
    parser.add_argument("--quota", type=float, default=0.3,
                        help="CPUs per worker (cgroup quota; 4 x 0.3 leaves 0.8 of 2 cores to broker and database)")
    parser.add_argument("--release-concurrency", type=int, default=None,
                        help="windows a worker anonymizes at once (RELEASE_CONCURRENCY); default: the worker's whole "
                             "CPUs, at least 1 (a worker at 0.3 CPU that took two windows at once would hold both "
                             "while the others ran out of work)")
    parser.add_argument("--seed", type=int, default=43)
    args = parser.parse_args()
    quiet_clients(False)
    reports = zipf_day(args.reports, args.stations, args.zipf, args.seed)
    sizes = sorted((len(v) for v in reports.values()), reverse=True)
    print(f"{sum(sizes)} reports from {len(sizes)} stations (largest {sizes[:3]}, smallest {sizes[-1]}); "
          f"partition skew {partition_skew(reports):.2f}", flush=True)
    root = Path(tempfile.mkdtemp(prefix="anonstream-scaling-"))
    pg, kafka = PostgresServer(), EmbeddedBroker(log_file=root / "broker.log").start()
    rows = []
    concurrency = args.release_concurrency or max(1, int(args.quota))
    try:
        for n in (int(x) for x in args.workers.split(",")):
            rows.append(run(kafka, pg, root, n, args.quota, reports, concurrency))
            print(rows[-1], flush=True)
    finally:
        kafka.stop()
        pg.stop()
    one = rows[0]["throughput"] / rows[0]["workers"]
    for r in rows:
        r["vs_linear"] = round(r["throughput"] / (r["workers"] * one), 2)
        r["same_as_n1"] = r["content_sha256"] == rows[0]["content_sha256"]
    write_results("scaling", {"args": vars(args), "release_concurrency": concurrency,
                              "partition_skew": partition_skew(reports), "runs": rows})
    print_table(rows, ["workers", "quota_cpus", "throughput", "vs_linear", "per_cpu_s", "balance", "lock_wait_s",
                       "p50_s", "p95_s", "peak_mb", "seconds", "startup_s", "releases", "same_as_n1"])


if __name__ == "__main__":
    main()
