"""Benchmark: the ``castle`` engine on Prink's grid over Adult replayed as a stream.

Adult (../shared/data/adult/adult.csv, 30,162 rows, read in place) in file order, one person per line,
with the bundled ``adult`` spec's hierarchies. The spec has no sensitive attribute, so for the l axis
``occupation`` is taken out of the QIs and made the sensitive attribute (8 QIs, 14 occupations) in every
cell, l = 0 included, so that all cells and references release the same columns.

Grid (Prink, ARES 2025): k in {5, 10, 20, 40, 80}, delta in {1250, 5000, 20000} tuples, l in {0, 2, 4, 8},
mu = 100, beta unbounded: 60 cells. Per cell: NCP (GCP: mean over rows and QIs of the released node's
normalised certainty penalty, a suppressed row costs 1), suppressed rows, rows published later than
delta (must be 0), latency p50 / p99 in tuples, and throughput (rows per CPU second of the engine,
``time.process_time``, on one pinned core: the machine's other load does not count).
References: batch Mondrian (nested bands) over the whole table with the same k and l (the
delay-free loss), and CASTLE without reuse (``reuse = false``) at delta = 5000. Every release is checked
by the independent verifier.

    .venv/bin/python bench/castle_grid.py [--quick]

``--quick`` runs three cells. Writes bench/results/castle_grid.json (castle_grid_quick.json) and prints a
table. Targets: NCP within 1.5x Mondrian's at delta = 5000, k = 5; >= 2,000 rows/s per core; 0 late.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

import numpy as np
import pandas as pd

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent.parent))

from bench._common import DATA, pin_one_core, print_table, write_results
from core.encoding import EncodedBatch, Schema, encode
from core.engines.registry import get_engine, make_params
from core.schema import SensitiveSpec
from core.verify import verify_release
from stream.io.specs import load_schema

KS, DELTAS, LS = (5, 10, 20, 40, 80), (1250, 5000, 20000), (0, 2, 4, 8)
QUICK = [(5, 5000, 0), (10, 1250, 2), (5, 20000, 4)]


def adult() -> tuple[pd.DataFrame, Schema]:
    base = load_schema("adult")
    qis = base.restrict([n for n in base.qi_names if n != "occupation"])
    schema = Schema(spec=qis.spec.model_copy(update={"sensitive": SensitiveSpec(name="occupation")}),
                    hierarchies=qis.hierarchies)
    return pd.read_csv(DATA / "adult" / "adult.csv", sep=";"), schema


def run(engine: str, frame: pd.DataFrame, schema: Schema, batch: EncodedBatch, values: dict[str, Any]) -> dict:
    eng = get_engine(engine)
    params = make_params(eng, values)
    started, cpu = time.perf_counter(), time.process_time()
    rel = eng.anonymize(batch, params, np.random.default_rng(0))
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    report = verify_release(frame, rel, schema)
    d = rel.diagnostics
    return {"ncp": rel.metrics["gcp"], "suppressed": len(rel.suppressed), "late": d.get("late"),
            "p50": d.get("latency_p50"), "p99": d.get("latency_p99"), "rows_per_s": batch.n / cpu,
            "cpu_seconds": cpu, "seconds": elapsed, "verified": report.ok, "failures": report.failures[:2],
            "departures": d.get("departures")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="three cells only (a smoke check)")
    args = ap.parse_args()
    pin_one_core()
    frame, schema = adult()
    batch = encode(frame, schema)
    cells = QUICK if args.quick else [(k, dl, ll) for ll in LS for dl in DELTAS for k in KS]
    load_before = os.getloadavg()
    get_engine("castle").anonymize(batch.take(np.arange(300)), make_params("castle", {"k": 5}),
                                   np.random.default_rng(0))  # load the numba kernels outside the clock
    mondrian: dict[tuple[int, int], dict] = {}
    rows = []
    for k, delta, ell in cells:
        lv = {"l": ell} if ell > 1 else {}
        if (k, ell) not in mondrian:
            mondrian[(k, ell)] = run("mondrian", frame, schema, batch, {"k": k, **lv})
        values = {"k": k, "delta_tuples": delta, "mu": 100, "max_suppression": 1.0, **lv}  # count, never refuse
        cell = run("castle", frame, schema, batch, values)
        row = {"k": k, "delta": delta, "l": ell, **cell, "mondrian_ncp": mondrian[(k, ell)]["ncp"]}
        row["vs_mondrian"] = row["ncp"] / row["mondrian_ncp"]
        if delta == 5000:
            row["no_reuse_ncp"] = run("castle", frame, schema, batch, {**values, "reuse": False})["ncp"]
        rows.append(row)
        write_results("castle_grid_quick" if args.quick else "castle_grid", {"rows": len(frame), "cells": rows})
        print(f"k={k} delta={delta} l={ell}: ncp {row['ncp']:.4f} (mondrian {row['mondrian_ncp']:.4f}), "
              f"{row['rows_per_s']:.0f} rows per CPU second", flush=True)
    load_after = os.getloadavg()
    cols = ["k", "delta", "l", "ncp", "mondrian_ncp", "vs_mondrian", "no_reuse_ncp", "suppressed", "late", "p50",
            "p99", "rows_per_s", "verified"]
    print_table(rows, cols)
    print(f"load average (1, 5, 15 min) before {load_before}, after {load_after}; {os.cpu_count()} cpus")
    path = write_results("castle_grid_quick" if args.quick else "castle_grid",
                         {"rows": len(frame), "cells": rows, "load_before": load_before, "load_after": load_after,
                          "mondrian": {f"k={k},l={ell}": v for (k, ell), v in mondrian.items()}})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
