"""Benchmark: one window release as the worker does it, stage by stage, in one process.

One station's window as ``bench/pipeline.py`` builds it (``generate_day(5, 10,000, seed=1)``, station
``S1``) is ingested into a fresh SQLite ledger as the worker does, the engine is warmed up (the
worker does this on its first batch), then :class:`stream.worker.release.Orchestrator` closes the
window ``--repeat`` times, each on a copy of the ingested ledger. Every stage is timed in wall and
CPU (user + sys) seconds; the table gives medians, stages indented under their caller.

    .venv/bin/python bench/release_window.py [--repeat 5] [--engine cg-diverse] [--profile] [--threads 1|2|spare]
    .venv/bin/python bench/release_window.py --digest --seeds 1 2 3 --per-station 3000

``--digest`` prints, per engine and seed, a SHA-256 of what a release publishes (its record messages,
and its signed manifest without the signature and the fresh DP noise): the same figures before and
after a change that must not change any output. Writes bench/results/release_window.json (or
release_digests.json with ``--digest``).
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import hashlib
import json
import os
import pstats
import shutil
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

from pydantic import SecretStr

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import migrations  # noqa: E402
from bench._common import write_results  # noqa: E402
from core.engines.base import reproducible_diagnostics  # noqa: E402
from db import Database, PoolRepository, ReleaseRepository  # noqa: E402
from db.deployment import DeploymentRow  # noqa: E402
from db.windows import WindowPolicy  # noqa: E402
from stream.config.privacy import StreamPrivacy  # noqa: E402
from stream.config.settings import Settings  # noqa: E402
from stream.io.specs import load_schema  # noqa: E402
from stream.station.simulate import generate_day  # noqa: E402
from stream.testing.reports import DAY, ingest_reports  # noqa: E402
from stream.worker.release import Orchestrator, window_policy  # noqa: E402

SIGNING = "11" * 32
KEY = "release-window-bench-key"
DEPLOYMENT = "b" * 32
ENGINE_L = {"cg-diverse": 2, "cg-kanon": 1}  # cg-kanon enforces k only: the feed asks for k only


def cpu_now() -> float:
    """User + system CPU seconds of this process."""
    t = os.times()
    return t.user + t.system


class Stages:
    """Wall and CPU time per call path of the functions :meth:`wrap` instruments."""

    def __init__(self) -> None:
        self.stack: list[str] = []
        self.order: list[str] = []  # call paths in order of first call
        self.runs: list[dict[str, list[float]]] = []  # per repeat: path -> [wall, cpu, calls]

    def start_run(self) -> None:
        self.runs.append({})

    def wrap(self, owner: Any, attr: str, name: str | None = None) -> None:
        """Replace ``owner.attr`` by a timed call (timed only inside a run: warm-up and set-up are not)."""
        fn, label = getattr(owner, attr), name or attr

        @functools.wraps(fn)
        def timed(*args: Any, **kwargs: Any) -> Any:
            if not self.runs:
                return fn(*args, **kwargs)
            path = "/".join([*self.stack, label])
            if path not in self.order:
                self.order.append(path)
            self.stack.append(label)
            w0, c0 = time.perf_counter(), cpu_now()
            try:
                return fn(*args, **kwargs)
            finally:
                self.stack.pop()
                acc = self.runs[-1].setdefault(path, [0.0, 0.0, 0])
                acc[0] += time.perf_counter() - w0
                acc[1] += cpu_now() - c0
                acc[2] += 1

        setattr(owner, attr, timed)

    def table(self) -> list[dict[str, Any]]:
        rows = []
        for path in self.order:
            seen = [r[path] for r in self.runs if path in r]
            rows.append({"stage": "  " * path.count("/") + path.rsplit("/", 1)[-1], "path": path,
                         "wall_s": round(statistics.median(s[0] for s in seen), 3),
                         "cpu_s": round(statistics.median(s[1] for s in seen), 3),
                         "calls": seen[0][2]})
        return rows


def instrument(st: Stages) -> None:
    """Time the release steps where the worker calls them (module globals, looked up at call time)."""
    import importlib

    targets = {
        "stream.worker.release": ["eligible", "encode", "verify_release", "release_risk", "dp_counts", "event_days",
                                  "event_date_spans", "typed_columns", "publish_order", "record_messages",
                                  "publishable_utility", "build_manifest", "build_codebook", "rows_digest",
                                  "sign_manifest", "checksum_encoded", "seen_counts"],
        "core.engines.nesting": ["nesting_report"],
        "core.engines.cg.runner": ["build_problem", "mondrian_seed", "run_search", "build_release"],
        "core.engines.cg.release": ["class_labels", "label_classes", "summarize", "frequency_stats", "achieved"],
        "core.engines.cg.search": ["kd_order", "make_state", "class_order"]}
    for module, names in targets.items():
        for name in names:
            st.wrap(importlib.import_module(module), name)
    rel, state = importlib.import_module("stream.worker.release"), importlib.import_module("core.engines.cg.state")
    st.wrap(ReleaseRepository, "candidates", "candidates (ledger read)")
    st.wrap(ReleaseRepository, "store", "ledger write")
    st.wrap(rel.Orchestrator, "_store", "store (records, manifest, ledger)")
    for module in ("core.engines.cg.diverse", "core.engines.cg.kanon"):
        st.wrap(importlib.import_module(module), "anonymize_cg", "engine run")
    st.wrap(state.Segmenter, "__call__", "segment (DP)")
    st.wrap(state.State, "sweep")


def make_settings(tmp: Path, engine: str, seed: int, per_station: int) -> Any:
    return Settings(database_url=f"sqlite:///{tmp / 'ledger.db'}", data_dir=tmp, spec="crime", engine=engine,
                    privacy=StreamPrivacy(k=5, l=ENGINE_L[engine]),
                    windows=WindowPolicy(cap=per_station, idle_timeout_s=1.0),
                    fingerprint_key=SecretStr(KEY), signing_key=SecretStr(SIGNING), sample_seed=seed)


def ingested_ledger(tmp: Path, settings: Any, reports: list[dict[str, Any]]) -> Any:
    """A fresh ledger of one deployment holding ``reports`` in the pending pool; returns the ingest time."""
    migrations.upgrade(settings.db_url())
    now = DAY + timedelta(days=2)
    db = Database(settings.db_url())
    try:
        with db.unit() as s:
            s.add(DeploymentRow(id=1, deployment_id=DEPLOYMENT, created_at=now))
        ingest_reports(settings, PoolRepository(db, window_policy(settings)), reports, now, KEY.encode())
    finally:
        db.dispose()
    return now


def release_once(settings: Any, now: Any) -> tuple[str, tuple[bytes, list[bytes]]]:
    """Close the window of a ledger copy like a worker; returns the release id and its encoded messages."""
    db = Database(settings.db_url())
    try:
        orch = Orchestrator(settings, db, load_schema(settings.spec), "bench-worker", keep_encoded=True)
        (rid,) = orch.close_due(now + timedelta(minutes=5))
        encoded = orch.take_encoded(rid)
        assert encoded is not None
        return rid, encoded
    finally:
        db.dispose()


def content_digest(encoded: tuple[bytes, list[bytes]]) -> str:
    """SHA-256 of the record messages and the manifest without its signature and the fresh DP noise."""
    manifest = json.loads(encoded[0])
    manifest.pop("signature", None)
    for table in (manifest.get("dp") or {}).get("tables", []):
        table.pop("counts", None)
    (manifest.get("files") or {}).pop("counts", None)
    h = hashlib.sha256(json.dumps(manifest, sort_keys=True).encode())
    for record in encoded[1]:
        h.update(record)
    return h.hexdigest()


def window_reports(seed: int, per_station: int, station: str) -> list[dict[str, Any]]:
    return generate_day(5, per_station, seed=seed, day=DAY)[station]


def engine_digest(release: Any) -> str:
    """SHA-256 of what the engine returned: rows, class ids, suppressed rows, metrics, reproducible diagnostics."""
    h = hashlib.sha256(release.rows.to_csv().encode())
    h.update(json.dumps([[int(c) for c in release.class_ids], [int(i) for i in release.suppressed]]).encode())
    h.update(json.dumps([release.metrics, reproducible_diagnostics(release.diagnostics)], sort_keys=True,
                        default=str).encode())
    return h.hexdigest()


def run_digests(args: argparse.Namespace) -> dict[str, Any]:
    """Content and engine digests per engine and seed (the engine's release is kept as the verifier gets it)."""
    import stream.worker.release as rel

    seen: list[Any] = []
    verify = rel.verify_release

    def keep(frame: Any, release: Any, *a: Any, **kw: Any) -> Any:
        seen.append(release)
        return verify(frame, release, *a, **kw)

    rel.verify_release = keep  # type: ignore[assignment]
    out: dict[str, Any] = {}
    for engine in args.engines:
        for seed in args.seeds:
            with tempfile.TemporaryDirectory(prefix="release-digest-") as d:
                tmp = Path(d)
                settings = make_settings(tmp, engine, seed, args.per_station).with_updates(
                    engine_params={"time_limit": 0})  # the work budget alone: no wall-clock cap
                now = ingested_ledger(tmp, settings, window_reports(seed, args.per_station, args.station))
                rid, encoded = release_once(settings, now)
                digest, engine_sha = content_digest(encoded), engine_digest(seen.pop())
                out[f"{engine}/seed{seed}"] = {"release_id": rid, "records": len(encoded[1]), "sha256": digest,
                                               "engine_sha256": engine_sha}
                print(f"{engine:<11} seed {seed:<3} {len(encoded[1]):>6} records  release {digest[:16]}  "
                      f"engine {engine_sha[:16]}", flush=True)
    return out


def ledger_copy(base: Path, run_dir: Path, settings: Any) -> Any:
    """Settings of a copy of the ingested ledger in ``run_dir`` (each release needs the window unreleased)."""
    shutil.copytree(base, run_dir)
    return settings.with_updates(database_url=f"sqlite:///{run_dir / 'ledger.db'}", data_dir=run_dir)


def run_timings(args: argparse.Namespace) -> dict[str, Any]:
    st = Stages()
    instrument(st)
    reports = window_reports(args.seed, args.per_station, args.station)
    totals: list[tuple[float, float]] = []
    digests = set()
    profile = cProfile.Profile() if args.profile else None
    with tempfile.TemporaryDirectory(prefix="release-window-") as d:
        base = Path(d) / "base"
        base.mkdir()
        settings = make_settings(base, args.engine, args.seed, args.per_station)
        now = ingested_ledger(base, settings, reports)
        release_once(ledger_copy(base, Path(d) / "warm", settings), now)  # the worker's warm-up: not timed
        for i in range(args.repeat):
            s = ledger_copy(base, Path(d) / f"run{i}", settings)
            st.start_run()
            w0, c0 = time.perf_counter(), cpu_now()
            if profile:
                profile.enable()
            _, encoded = release_once(s, now)
            if profile:
                profile.disable()
            totals.append((time.perf_counter() - w0, cpu_now() - c0))
            digests.add(content_digest(encoded))
            print(f"run {i + 1}/{args.repeat}: {totals[-1][0]:.2f} s wall, {totals[-1][1]:.2f} s CPU", flush=True)
    rows = st.table()
    print(f"\n{args.engine}, one {len(reports):,}-report window, median of {args.repeat} (s):")
    print(f"{'stage':<44}{'wall':>8}{'cpu':>8}{'calls':>7}")
    for r in rows:
        print(f"{r['stage']:<44}{r['wall_s']:>8.3f}{r['cpu_s']:>8.3f}{r['calls']:>7}")
    wall, cpu = statistics.median(t[0] for t in totals), statistics.median(t[1] for t in totals)
    print(f"{'total (close_due)':<44}{wall:>8.3f}{cpu:>8.3f}")
    if profile:
        pstats.Stats(profile).sort_stats("tottime").print_stats(40).sort_stats("cumulative").print_stats(40)
    return {"engine": args.engine, "threads": args.threads, "seed": args.seed, "station": args.station,
            "reports": len(reports),
            "repeat": args.repeat, "total_wall_s": round(wall, 3), "total_cpu_s": round(cpu, 3),
            "runs": [[round(a, 3), round(b, 3)] for a, b in totals], "same_content_every_run": len(digests) == 1,
            "stages": rows}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--engine", default="cg-diverse", choices=sorted(ENGINE_L))
    parser.add_argument("--seed", type=int, default=1, help="generate_day seed (the pipeline bench uses 1)")
    parser.add_argument("--station", default="S1")
    parser.add_argument("--per-station", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--profile", action="store_true", help="also print the hottest functions")
    parser.add_argument("--digest", action="store_true", help="print the content digests instead of timing")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--engines", nargs="+", default=["cg-diverse", "cg-kanon"])
    parser.add_argument("--out", default="release_digests", help="results file name (--digest)")
    parser.add_argument("--threads", choices=("1", "2", "spare"), default="spare",
                        help="core's second thread (core/parallel.py): never, always, or while a core is spare "
                             "(what a worker's release processes do; the default)")
    args = parser.parse_args(argv)
    from core import parallel
    from stream.ops.cores import use_spare_cores

    if args.threads == "spare":
        use_spare_cores()
    else:
        parallel.configure(int(args.threads), lambda: True)
    from stream.ops.runtime import quiet_clients

    quiet_clients()
    if args.digest:
        path = write_results(args.out, {"per_station": args.per_station, "station": args.station,
                                        "digests": run_digests(args)})
    else:
        path = write_results("release_window", run_timings(args))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
