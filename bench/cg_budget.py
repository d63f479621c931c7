"""Benchmark: cg-kanon's deterministic work budget against the old 2 s wall-clock budget.

The stream's default job: ``cg-kanon`` k = 5 on a window of 10,000 generated crime reports
(``core.generators``, seed 2, all five crime QIs of ``stream/specs/crime.toml``). Two budgets:

* ``work`` (today's default): at most ``max_iterations`` = 100 sweeps, stop at convergence; the
  wall-clock ``time_limit`` (60 s) is only a safety cap;
* ``wall-2s`` (the old default): ``time_limit`` = 2 s, ``max_iterations`` = 100.

Each runs ``--repeats`` times on a quiet core and as many times with the other core busy (a
spinning ``python -c 'while 1: pass'`` process, killed after). Reported per run: information loss
(LM, normalised), wall and CPU seconds, sweeps, why it stopped, whether the cap bound, and the
release digest, so the table shows whether a budget gives one content or several. The numba
kernels are warmed up first, outside every budget.

    .venv/bin/python bench/cg_budget.py [--repeats 3] [--rows 10000]

Writes bench/results/cg_budget.json.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import print_table, write_results
from core.encoding import EncodedBatch, encode
from core.engines.registry import get_engine, make_params
from core.engines.warmup import warm_up_all
from core.generators import generate_crime_reports
from stream.io.specs import load_schema

BUDGETS: dict[str, dict[str, Any]] = {"work": {"k": 5}, "wall-2s": {"k": 5, "time_limit": 2.0, "max_iterations": 100}}


def one_run(batch: EncodedBatch, budget: str, load: str) -> dict[str, Any]:
    eng = get_engine("cg-kanon")
    params = make_params(eng, BUDGETS[budget])
    wall, cpu = time.perf_counter(), time.process_time()
    rel = eng.anonymize(batch, params, np.random.default_rng(0))
    d = rel.diagnostics
    return {"budget": budget, "load": load, "loss": round(float(rel.metrics["loss_metric"]), 5),
            "wall_s": round(time.perf_counter() - wall, 3), "cpu_s": round(time.process_time() - cpu, 3),
            "sweeps": d["sweeps"], "stop": d["stop"], "cap_hit": d["budget_cap_hit"], "digest": rel.digest()[:12]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=3, help="runs per budget and load (default 3)")
    ap.add_argument("--rows", type=int, default=10_000, help="reports in the window (default 10,000)")
    args = ap.parse_args()
    warm = sum(warm_up_all(["cg-kanon", "cg-diverse"]).values())
    batch = encode(generate_crime_reports(np.random.default_rng(2), per_day=args.rows), load_schema("crime"))
    runs = []
    for load in ("no-spinner", "spinner"):
        spinner = subprocess.Popen([sys.executable, "-c", "while 1: pass"]) if load == "spinner" else None
        try:
            for _ in range(args.repeats):
                for budget in BUDGETS:
                    runs.append(one_run(batch, budget, load))
        finally:
            if spinner is not None:
                spinner.kill()
                spinner.wait()
    summary = []
    for budget in BUDGETS:
        mine = [r for r in runs if r["budget"] == budget]
        losses = [r["loss"] for r in mine]
        summary.append({"budget": budget, "runs": len(mine), "loss_mean": float(np.mean(losses)),
                        "loss_worst": max(losses), "wall_mean_s": float(np.mean([r["wall_s"] for r in mine])),
                        "cpu_mean_s": float(np.mean([r["cpu_s"] for r in mine])),
                        "distinct_contents": len({r["digest"] for r in mine}),
                        "cap_hits": sum(r["cap_hit"] for r in mine)})
    print_table(runs, ["budget", "load", "loss", "wall_s", "cpu_s", "sweeps", "stop", "cap_hit", "digest"])
    print()
    print_table(summary, ["budget", "runs", "loss_mean", "loss_worst", "wall_mean_s", "cpu_mean_s",
                          "distinct_contents", "cap_hits"])
    with open("/proc/loadavg") as fh:
        load_avg = fh.read().split()[:3]
    path = write_results("cg_budget", {"rows": args.rows, "repeats": args.repeats, "warm_up_s": round(warm, 3),
                                       "load_average": load_avg, "runs": runs, "summary": summary})
    print(f"\nwarm-up {warm:.2f} s (outside the budgets); load average {' '.join(load_avg)}; wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
