"""Benchmark: the ``optimal`` engine on Cargo 2000 at 10-12 QIs (issue 45 item 4).

Cargo 2000 (../shared/data/cargo2000/c2k_data_comma.csv, 3,942 rows) is loaded and its schema
built as in ``bench/kgen_paper.py``: the ``*_legid`` columns are identifiers, the QIs are the first
``d`` remaining columns in file order, each numeric with an ``{"auto": 4}`` hierarchy (height 5).
Requirement: k = 5 with at most 0.5 % suppression. Objectives: ``lm`` (the engine's default) and,
with ``--objectives lm,precision``, ``precision``.

Per case it records the optimum (levels, suppressed rows, loss), the nodes evaluated and popped,
the process CPU time (user + sys, ``time.process_time``) and the wall time of the engine call.
The kernels are warmed up first (a 4-QI run), so no case pays numba's loading. Results go to
``bench/results/cargo_optimal.json`` (``--out`` to change the name).

    .venv/bin/python bench/cargo_optimal.py [--qis 10,11,12] [--objectives lm] [--out cargo_optimal]

The machine is shared (2 cores): wall times depend on the load, CPU times much less.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import print_table, write_results
from bench.kgen_paper import CARGO, cargo_setup
from core.encoding import encode
from core.engines.registry import get_engine, make_params


def run_case(frame: pd.DataFrame, d: int, objective: str, k: int) -> dict[str, Any]:
    """One optimal run on Cargo's first ``d`` QIs; the optimum, counters and CPU / wall seconds."""
    batch = encode(frame, cargo_setup(frame, d))
    eng = get_engine("optimal")
    params = make_params(eng, {"k": k, "max_suppression": 0.005, "objective": objective})
    cpu0, wall0 = time.process_time(), time.perf_counter()
    rel = eng.anonymize(batch, params, np.random.default_rng(0))
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    diag = rel.diagnostics
    search = diag.get("search", {})
    return {"qis": d, "objective": objective, "levels": list(diag["levels"].values()),
            "suppressed": len(rel.suppressed), "suppressed_ids": [int(x) for x in rel.suppressed],
            "loss": float(diag["objective_value"]), "loss_hex": float(diag["objective_value"]).hex(),
            "nodes": diag["nodes_evaluated"], "popped": search.get("popped"), "cpu_s": round(cpu, 3),
            "wall_s": round(wall, 3), "search": search}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--qis", default="10,11,12", help="comma-separated QI counts")
    ap.add_argument("--objectives", default="lm", help="comma-separated: lm, precision")
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--out", default="cargo_optimal", help="results file name (without .json)")
    args = ap.parse_args()
    frame = pd.read_csv(CARGO)
    run_case(frame, 4, "lm", args.k)  # warm-up: load the kernels
    rows: list[dict[str, Any]] = []
    for objective in args.objectives.split(","):
        for d in (int(x) for x in args.qis.split(",")):
            load = os.getloadavg()[0]
            row = run_case(frame, d, objective, args.k)
            row["load_1min"] = round(load, 2)
            rows.append(row)
            print({key: v for key, v in row.items() if key not in ("suppressed_ids",)}, flush=True)
    print_table(rows, ["qis", "objective", "levels", "suppressed", "loss", "nodes", "popped", "cpu_s", "wall_s",
                       "load_1min"])
    path = write_results(args.out, {"k": args.k, "max_suppression": 0.005, "cases": rows})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
