"""Benchmark: the streaming pipeline end to end, against a pass-through faust agent on the same broker.

Setup: 5 stations x 10,000 generated crime reports (one day each; the 10,000 cap closes each
station's window on size), the embedded broker (tansu) and a throwaway PostgreSQL cluster (started
like the tests do), engine = the service default (``cg-diverse``, k=5, distinct l=2).

Measures
  * throughput (reports/s) from the first push to the last manifest received by a consumer, with one
    and with two worker processes (target: one worker >= 80 % of the pass-through agent; two workers
    >= 1.6 x one worker);
  * latency from window close to its manifest at the consumer, per window, and from the worker's
    claim of the window (target <= 5 s for a 10,000-report CG-Kanon window). In the 5-station runs
    all five windows close within seconds of each other, so later ones also wait for a release slot;
    the ``lone_window`` runs (one station, 10,000 reports, one worker, three times) measure a window
    that closes while nothing else is being released;
  * peak memory (VmHWM) of each worker process, alone and summed with its release processes;
  * the ingest path alone: one worker, no window closing (push to the last report in the pool);
  * the ceiling: a faust agent forwarding every message of the same 50,000 reports to another topic,
    timed the same way (first push to last forwarded message).

    .venv/bin/python bench/pipeline.py [--quick] [--scaling] [--lone] [--batches]

By default the five stations' reports are merged in event-time order (a live feed: every window
closes at the end of the push, then waits for a release slot); ``--batches`` pushes each station's day
as one framed batch, the stations one after another, as five stations' ``anonstream push`` of their
daily exports would (a window closes when its batch ends, while later stations are still ingested).

Writes bench/results/pipeline.json (``--batches``: pipeline_batches.json) and prints a table. The
machine has 2 cores shared with other jobs: wall-clock figures are noisy, and two workers compete
with the broker, PostgreSQL and the producer for those 2 cores.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from db.status import workers as worker_rows  # noqa: E402
from stream.ops.broker import EmbeddedBroker, ensure_topics, free_port  # noqa: E402
from stream.ops.kafka_clients import make_producer  # noqa: E402
from stream.ops.runtime import quiet_clients, stop_process  # noqa: E402
from stream.station.simulate import generate_day  # noqa: E402
from stream.testing.reports import DAY  # noqa: E402
from stream.testing.scenario import Scenario  # noqa: E402
from stream.testing.services import PostgresServer  # noqa: E402
from stream.wire.markers import Marker, parse_marker  # noqa: E402

RESULTS = ROOT / "bench" / "results"


def peak_memory_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def process_tree(pid: int) -> list[int]:
    """``pid`` and its live descendants (a worker's release processes)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        for children in Path(f"/proc/{p}/task").glob("*/children"):
            try:
                todo.extend(int(c) for c in children.read_text().split())
            except OSError:
                continue
    return out


def tree_memory_mb(pid: int) -> float | None:
    """Sum of the peak memory (VmHWM) of a worker and its release processes (an upper bound on their
    simultaneous peak)."""
    peaks = [m for m in (peak_memory_mb(p) for p in process_tree(pid)) if m is not None]
    return sum(peaks) if peaks else None


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a live process (0 if it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def postgres_cpu() -> float:
    """CPU seconds of every PostgreSQL process on the machine (the bench's throwaway cluster only)."""
    total = 0.0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        if "(postgres)" in text:
            total += cpu_seconds(int(stat.parent.name))
    return total


class CpuMeter:
    """Where the CPU went during one run: workers, broker, PostgreSQL, this process (producer+consumer)."""

    def __init__(self, broker_pid: int, worker_pids: list[int]) -> None:
        self.broker_pid, self.worker_pids = broker_pid, worker_pids
        self.start = self._sample()

    def _sample(self) -> dict[str, float]:
        t = os.times()
        return {"workers": sum(cpu_seconds(c) for p in self.worker_pids for c in process_tree(p)),
                "broker": cpu_seconds(self.broker_pid),
                "postgres": postgres_cpu(), "bench (push + consume)": t.user + t.system}

    def since(self, wall: float) -> dict[str, Any]:
        end = self._sample()
        used = {k: round(end[k] - self.start[k], 2) for k in end}
        total = sum(used.values())
        return {"cpu_s": used, "total_cpu_s": round(total, 2), "cores_busy": round(total / wall, 2) if wall else None}


def report_count(payloads: list[tuple[bytes, bytes]]) -> int:
    """The reports among ``payloads``: batch markers (``--batches``) frame them but are not reports."""
    return sum(1 for _, value in payloads if parse_marker(value) is None)


def push_all(bootstrap: list[str], topic: str, payloads: list[tuple[bytes, bytes]]) -> float:
    producer = make_producer(bootstrap)
    started = time.time()
    for key, value in payloads:
        producer.send(topic, key=key, value=value)
    producer.flush()
    producer.close()
    return started


def run_pipeline(kafka: EmbeddedBroker, pg: PostgresServer, workdir: Path, payloads: list[tuple[bytes, bytes]],
                 n_workers: int, cap: int, **settings: Any) -> dict[str, Any]:
    sc = Scenario(kafka, pg, workdir, window_max_reports=cap, idle_timeout_s=10.0, take_within_s=0.2,
                  log_level=os.environ.get("BENCH_LOG_LEVEL", "warn"))
    sc.settings = sc.settings.with_updates(take_max=2000, **settings)
    try:
        for _ in range(n_workers):
            sc.start_worker()
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # every worker holds input partitions before we start the clock
            live = [w for w in worker_rows(sc.db) if w["partitions"]]
            if len(live) == n_workers and sum(len(w["partitions"]) for w in live) == sc.settings.reports_partitions:
                break
            time.sleep(0.3)
        meter = CpuMeter(kafka.proc.pid if kafka.proc else 0, [w.pid for w in sc.workers])
        started = push_all(sc.settings.bootstrap_servers(), sc.settings.topic_reports, payloads)
        pushed_after = round(time.time() - started, 2)
        sc.pushed = n_reports = report_count(payloads)
        arrivals: dict[str, float] = {}
        from stream.analyst.consumer import make_consumer

        consumer = make_consumer(sc.settings.bootstrap_servers(), [sc.settings.topic_releases])
        expected = None
        limit = time.monotonic() + 600
        while time.monotonic() < limit:
            for msgs in consumer.poll(timeout_ms=200).values():
                for m in msgs:
                    arrivals.setdefault(json.loads(m.value)["release_id"], time.time())
            acc = sc.accounting()
            done = sum(acc.get(k, 0) for k in ("released", "suppressed", "blocked", "dlq", "duplicate", "correction"))
            if done >= n_reports and acc.get("windows_open", 1) == 0 and acc.get("releases_stored", 1) == 0:
                expected = acc.get("releases_published", 0)
                if len(arrivals) >= expected:
                    break
        consumer.close()
        memory = [peak_memory_mb(w.pid) for w in sc.workers]
        tree_memory = [tree_memory_mb(w.pid) for w in sc.workers]
        cpu = meter.since((max(arrivals.values()) if arrivals else time.time()) - started)
        with sc.db.read() as s:
            from sqlalchemy import func, select

            from db.models import PendingReport, Release, Window

            rows = s.execute(select(Release.id, Release.released, Window.claimed_at, Window.close_reason,
                                    Window.last_input_at,
                                    Release.created_at, Release.published_at, Release.verification)
                             .join(Window, Release.window_id == Window.id)).all()
            last_ingest = s.execute(select(func.max(PendingReport.received_at))).scalar_one().timestamp()
        # A window closes on its size cap when its last report is written to the pool (last_input_at):
        # latency runs from there, so it includes any wait for a free release slot; from_claim omits it.
        latencies = sorted(arrivals[r.id] - r.last_input_at.timestamp() for r in rows if r.id in arrivals)
        big = [arrivals[r.id] - r.last_input_at.timestamp() for r in rows
               if r.id in arrivals and r.released >= cap * 0.9]
        from_claim = sorted(arrivals[r.id] - r.claimed_at.timestamp() for r in rows if r.id in arrivals)
        finished = max(arrivals.values())
        # where a window's time goes: the release's own timings, then stored / published / manifest received,
        # each measured from the window's claim
        breakdown = sorted(({**(r.verification or {}).get("timings", {}),
                             "due_after_push_s": round(r.last_input_at.timestamp() - started, 2),
                             "published_s": round((r.published_at - r.claimed_at).total_seconds(), 2)
                             if r.published_at else None,
                             "manifest_s": round(arrivals[r.id] - r.claimed_at.timestamp(), 2) if r.id in arrivals
                             else None,
                             "claimed_after_push_s": round(r.claimed_at.timestamp() - started, 2)} for r in rows),
                           key=lambda b: b["claimed_after_push_s"])
        acc = sc.accounting()
        return {"workers": n_workers, "reports": n_reports, "releases": len(rows),
                "released": acc.get("released", 0), "suppressed": acc.get("suppressed", 0),
                "seconds": round(finished - started, 2),
                "ingest_seconds": round(last_ingest - started, 2), "push_seconds": pushed_after,
                "cpu": cpu,
                "throughput": round(n_reports / (finished - started), 1),
                "latency_s": {"min": round(latencies[0], 2), "median": round(latencies[len(latencies) // 2], 2),
                              "max": round(latencies[-1], 2)},
                "latency_full_windows_s": [round(x, 2) for x in sorted(big)],
                "latency_from_claim_s": [round(x, 2) for x in from_claim],
                "close_reasons": sorted({r.close_reason for r in rows}),
                "windows": breakdown,
                "worker_peak_mb": [round(m, 1) if m else None for m in memory],
                "worker_with_release_processes_peak_mb": [round(m, 1) if m else None for m in tree_memory]}
    finally:
        sc.close()


def run_ingest_only(kafka: EmbeddedBroker, pg: PostgresServer, workdir: Path,
                    payloads: list[tuple[bytes, bytes]]) -> dict[str, Any]:
    """One worker ingesting the reports into the pending pool with no window closing (a 1,000,000 cap,
    10-minute idle timeout): the ingest path alone, push to the last report in the pool."""
    sc = Scenario(kafka, pg, workdir, window_max_reports=1_000_000, idle_timeout_s=600.0, take_within_s=0.2,
                  log_level=os.environ.get("BENCH_LOG_LEVEL", "warn"))
    sc.settings = sc.settings.with_updates(take_max=2000)
    try:
        worker = sc.start_worker()
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not [w for w in worker_rows(sc.db) if w["partitions"]]:
            time.sleep(0.3)
        meter = CpuMeter(kafka.proc.pid if kafka.proc else 0, [worker.pid])
        started = push_all(sc.settings.bootstrap_servers(), sc.settings.topic_reports, payloads)
        limit = time.monotonic() + 600
        while time.monotonic() < limit and sc.accounting().get("pending", 0) < len(payloads):
            time.sleep(0.05)
        wall = time.time() - started
        return {"reports": len(payloads), "seconds": round(wall, 2), "throughput": round(len(payloads) / wall, 1),
                "cpu": meter.since(wall)}
    finally:
        sc.close()


PASSTHROUGH = '''
import os, time, faust
broker, src, dst, n, out, app_id, port = os.environ["PT_ARGS"].split("|")
n = int(n)
app = faust.App(app_id, broker=broker, store="memory://", datadir=out + ".d", broker_session_timeout=6,
                broker_heartbeat_interval=2, consumer_auto_offset_reset="earliest", topic_allow_declare=False,
                web_port=int(port), web_bind="127.0.0.1", web_host="127.0.0.1")
source = app.topic(src, key_serializer="raw", value_serializer="raw")
sink = app.topic(dst, key_serializer="raw", value_serializer="raw")
seen = 0

@app.agent(source, concurrency=1)
async def forward(stream):
    global seen
    async for event in stream.events():
        await sink.send(key=event.key, value=event.value)
        seen += 1
        if seen == n:
            await app.producer.flush()
            open(out, "w").write(str(time.time()))

@app.on_partitions_assigned.connect
async def assigned(app, assigned, **kw):
    if any(tp.topic == src for tp in assigned):
        open(out + ".ready", "w").write("1")

app.main()
'''


def run_passthrough(kafka: EmbeddedBroker, workdir: Path, payloads: list[tuple[bytes, bytes]]) -> dict[str, Any]:
    tag = str(int(time.time()))
    src, dst = f"pt{tag}.in", f"pt{tag}.out"
    ensure_topics(kafka.bootstrap, {src: 4, dst: 1})
    script = workdir / "passthrough.py"
    script.write_text(PASSTHROUGH)
    out = workdir / "passthrough.done"
    args = "|".join([kafka.url, src, dst, str(len(payloads)), str(out), f"passthrough-{tag}", str(free_port())])
    proc = subprocess.Popen([sys.executable, str(script), "worker", "-l", "warn"],
                            env={**os.environ, "PT_ARGS": args},
                            stdout=subprocess.DEVNULL, stderr=(workdir / "passthrough.log").open("wb"), cwd=workdir)
    try:
        deadline = time.monotonic() + 120
        while not Path(str(out) + ".ready").exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
        meter = CpuMeter(kafka.proc.pid if kafka.proc else 0, [proc.pid])
        started = push_all([kafka.bootstrap], src, payloads)
        pushed_after = round(time.time() - started, 2)
        while not out.exists() and time.monotonic() < deadline + 600 and proc.poll() is None:
            time.sleep(0.2)
        if not out.exists():
            raise RuntimeError(f"pass-through agent failed; see {workdir / 'passthrough.log'}")
        finished = float(out.read_text())
        reports = report_count(payloads)  # the agent forwards every message, markers too; reports/s as the worker
        return {"reports": reports, "seconds": round(finished - started, 2), "push_seconds": pushed_after,
                "cpu": meter.since(finished - started),
                "throughput": round(reports / (finished - started), 1),
                "peak_mb": round(peak_memory_mb(proc.pid) or 0, 1)}
    finally:
        stop_process(proc)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="5 stations x 2,000 reports, one pipeline run")
    parser.add_argument("--lone", action="store_true",
                        help="only the lone-window runs (one station, one worker, three times): a window's latency "
                             "on an otherwise quiet machine")
    parser.add_argument("--batches", action="store_true",
                        help="push each station's day as one batch (begin and end markers, as `anonstream push` "
                             "frames it), the stations one after another, instead of all stations' reports merged "
                             "in event-time order; runs the pass-through agent and one worker only "
                             "(bench/results/pipeline_batches.json)")
    parser.add_argument("--scaling", action="store_true",
                        help="also run one and two workers with RELEASE_CONCURRENCY=1 (one window per worker at a "
                             "time), which shows worker scaling when a single worker does not fill the cores")
    args = parser.parse_args()
    quiet_clients()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # still stop the broker and PostgreSQL
    per_station = 2_000 if args.quick else 10_000
    reports = generate_day(5, per_station, seed=1, day=DAY)
    def message(station: str, report: dict[str, Any]) -> tuple[bytes, bytes]:
        return station.encode(), json.dumps(report, separators=(",", ":")).encode()

    if args.batches:  # each station's day as one framed batch, the stations one after another
        payloads = []
        for st, rs in reports.items():
            payloads += [(st.encode(), Marker("begin", "bench", st).encode()), *(message(st, r) for r in rs),
                         (st.encode(), Marker("end", "bench", st, len(rs)).encode())]
    else:  # the stations' reports merged in event-time order: every window closes at the end of the push
        merged = sorted(((str(r["event_time"]), st, r) for st, rs in reports.items() for r in rs), key=lambda x: x[0])
        payloads = [message(st, r) for _, st, r in merged]
    workdir = Path(tempfile.mkdtemp(prefix="anonstream-bench-"))
    pg = PostgresServer()
    kafka = EmbeddedBroker(log_file=workdir / "broker.log").start()
    results: dict[str, Any] = {"stations": 5, "per_station": per_station,
                               "engine": "cg-diverse, k=5, l=2 (service default)", "machine": "2 shared cores; noisy"}
    try:
        if args.lone:
            lone = [p for p in payloads if p[0] == payloads[0][0]]
            results["lone_window"] = []
            for i in range(3):
                print(f"pipeline, a lone {len(lone)}-report window ({i + 1}/3) ...", file=sys.stderr, flush=True)
                results["lone_window"].append(run_pipeline(kafka, pg, workdir / f"lone{i}", lone, 1, per_station))
            RESULTS.mkdir(parents=True, exist_ok=True)
            (RESULTS / "pipeline_lone.json").write_text(json.dumps(results, indent=2))
            close = [r["latency_full_windows_s"][0] for r in results["lone_window"] if r["latency_full_windows_s"]]
            claim = [r["latency_from_claim_s"][0] for r in results["lone_window"]]
            print(f"lone {per_station:,}-report window, close -> manifest (s): {close}; claim -> manifest: {claim}")
            return 0
        print(f"pass-through agent on {len(payloads)} reports ...", file=sys.stderr, flush=True)
        results["passthrough"] = run_passthrough(kafka, workdir, payloads)
        results["push"] = "station batches, one after another" if args.batches else "merged in event-time order"
        if not args.quick and not args.batches:
            print("one worker, ingest only ...", file=sys.stderr, flush=True)
            results["ingest_only"] = run_ingest_only(kafka, pg, workdir / "ingest", payloads)
        print("pipeline, one worker ...", file=sys.stderr, flush=True)
        results["one_worker"] = run_pipeline(kafka, pg, workdir / "w1", payloads, 1, per_station)
        if not args.quick and not args.batches:
            print("pipeline, two workers ...", file=sys.stderr, flush=True)
            results["two_workers"] = run_pipeline(kafka, pg, workdir / "w2", payloads, 2, per_station)
        if not args.quick and not args.batches:
            lone = [p for p in payloads if p[0] == payloads[0][0]]
            results["lone_window"] = []
            for i in range(3):
                print(f"pipeline, a lone {len(lone)}-report window ({i + 1}/3) ...", file=sys.stderr, flush=True)
                results["lone_window"].append(run_pipeline(kafka, pg, workdir / f"lone{i}", lone, 1, per_station))
        if args.scaling and not args.quick:
            for n, name in ((1, "one_worker_1slot"), (2, "two_workers_1slot")):
                print(f"pipeline, {name} ...", file=sys.stderr, flush=True)
                results[name] = run_pipeline(kafka, pg, workdir / name, payloads, n, per_station,
                                             release_concurrency=1)
    finally:
        kafka.stop()
        pg.stop()
    one, pt = results["one_worker"], results["passthrough"]
    results["one_worker_vs_passthrough"] = round(one["throughput"] / pt["throughput"], 3)
    if "two_workers" in results:
        results["two_vs_one_worker"] = round(results["two_workers"]["throughput"] / one["throughput"], 3)
    if "two_workers_1slot" in results:
        results["two_vs_one_worker_1slot"] = round(results["two_workers_1slot"]["throughput"]
                                                   / results["one_worker_1slot"]["throughput"], 3)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / ("pipeline_batches.json" if args.batches else "pipeline.json")).write_text(json.dumps(results, indent=2))
    print(f"{'run':<19}{'reports':>9}{'seconds':>9}{'reports/s':>11}{'lat med':>9}{'lat max':>9}{'peak MB':>10}")
    print(f"{'pass-through':<19}{pt['reports']:>9}{pt['seconds']:>9}{pt['throughput']:>11}{'':>9}{'':>9}"
          f"{pt['peak_mb']:>10}")
    runs = ("one_worker", "two_workers", "one_worker_1slot", "two_workers_1slot")
    for name in runs:
        if name in results:
            r = results[name]
            print(f"{name:<19}{r['reports']:>9}{r['seconds']:>9}{r['throughput']:>11}{r['latency_s']['median']:>9}"
                  f"{r['latency_s']['max']:>9}{max(m or 0 for m in r['worker_with_release_processes_peak_mb']):>10}")
    print(f"one worker / pass-through = {results['one_worker_vs_passthrough']}"
          + (f"; two / one worker = {results['two_vs_one_worker']}" if "two_vs_one_worker" in results else ""))
    print(f"full-window latencies (s): {one['latency_full_windows_s']}")
    if "ingest_only" in results:
        ing = results["ingest_only"]
        print(f"ingest only (one worker, no window closing): {ing['seconds']} s, {ing['throughput']} reports/s, "
              f"worker {ing['cpu']['cpu_s']['workers']} CPU-s")
    if "lone_window" in results:
        close = [r["latency_full_windows_s"][0] for r in results["lone_window"] if r["latency_full_windows_s"]]
        claim = [r["latency_from_claim_s"][0] for r in results["lone_window"]]
        print(f"lone 10,000-report window, close -> manifest (s): {close}; claim -> manifest: {claim}")
    print("CPU seconds from the first push to the end (2 cores = 2 CPU-s per wall second):")
    for name in ("passthrough", *runs):
        if name in results:
            r = results[name]
            parts = ", ".join(f"{k} {v}" for k, v in r["cpu"]["cpu_s"].items())
            print(f"  {name}: push {r['push_seconds']} s; {r['cpu']['total_cpu_s']} CPU-s "
                  f"({r['cpu']['cores_busy']} cores busy): {parts}")
    cols = ("due_after_push_s", "claimed_after_push_s", "candidates_s", "anonymize_s", "verify_s", "published_s",
            "manifest_s")
    if "two_vs_one_worker_1slot" in results:
        print(f"one release slot per worker: two / one worker = {results['two_vs_one_worker_1slot']}")
    for name in ("two_workers", "two_workers_1slot"):  # 2 cores: no run can take less than its CPU-s / 2
        if name in results:
            floor = results[name]["cpu"]["total_cpu_s"] / 2
            base = results["one_worker_1slot" if name.endswith("1slot") else "one_worker"]["seconds"]
            print(f"{name}: {results[name]['cpu']['total_cpu_s']} CPU-s on 2 cores -> at least {floor:.1f} s, "
                  f"so at most {base / floor:.2f} x the one-worker run ({base} s)")
    for name in runs:
        if name in results:
            print(f"{name}: due, claimed (after push) / candidates / anonymize / verify / published, manifest "
                  "(after claim), s")
            for w in results[name]["windows"]:
                print("  " + " / ".join(str(w.get(k)) for k in cols))
    return 0


if __name__ == "__main__":
    sys.exit(main())
