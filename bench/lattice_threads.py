"""Benchmark: the lattice's roll-ups on one thread and on two (core/lattice/threads.py, issue 45 item 3).

Two sections, each timed as the median of ``--repeat`` interleaved runs, wall time and CPU time
(user + system of the whole process, both threads), with the machine load before and after:

* **roll-up break-even**: one synthetic table per size (6 QIs of 64 codes, three of them halved by the
  roll-up), rolled up in one pass (``rollup``), split in two parts on the calling thread, and split on
  two threads. The split pays from the size where its wall time drops below the one pass's; that is
  what :data:`core.lattice.threads.PARALLEL_ROWS` should be on an idle machine.
* **searches**: warm ``optimal`` on Adult (k = 5 at 0 % and <= 4 %; distinct 2-diversity on
  occupation at <= 4 %) with roll-ups on one thread and on two, checking that both find the same node
  with the same counters. ``--force`` splits from ``--rows`` rows whatever the load (the default
  leaves the rule as it is: split only from PARALLEL_ROWS rows and while a core is spare).

    .venv/bin/python bench/lattice_threads.py [--repeat 7] [--force] [--rows 8192] [--sizes 4096,65536]

On a machine shared at equal priority a process gets about one core's worth whatever its threads (the
kernel's scheduling groups), so two threads cannot show what they do on an idle machine. To measure
that, run the benchmark in its own scheduling group at a high priority (as root; Linux autogroups):

    setsid sh -c 'echo -19 > /proc/self/autogroup && exec .venv/bin/python bench/lattice_threads.py --force'
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import DATA, print_table, write_results
from bench.vs_arx import adult_with_sensitive
from core import parallel
from core.encoding import encode
from core.engines.registry import get_engine, make_params
from core.engines.warmup import warm_lattice_kernels
from core.lattice import threads
from stream.io.specs import load_schema


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def timed(fns: dict[str, Callable[[], Any]], repeat: int) -> dict[str, tuple[float, float]]:
    """Median (wall, CPU) seconds of each function, run interleaved ``repeat`` times after one untimed call."""
    for fn in fns.values():
        fn()
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            wall, cpu = time.perf_counter(), time.process_time()
            fn()
            runs[name].append((time.perf_counter() - wall, time.process_time() - cpu))
    return {name: (statistics.median(r[0] for r in rs), statistics.median(r[1] for r in rs))
            for name, rs in runs.items()}


def synthetic(rows: int, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """A table of about ``rows`` distinct rows and the arguments of a roll-up of three of its six QIs."""
    d, levels, codes = 6, 3, 64
    up = np.zeros((d, levels, levels, codes), np.int32)
    for s in range(levels):
        for t in range(s, levels):
            up[:, s, t] = np.arange(codes) >> (t - s)
    tab = np.unique(rng.integers(0, codes, (rows, d)).astype(np.int32), axis=0)
    rng.shuffle(tab)
    radix = np.cumprod([1] + [codes] * (d - 1)).astype(np.int64)
    return (tab, rng.integers(1, 5, len(tab)).astype(np.int64), up, np.zeros(d, np.int64),
            np.array([1, 0, 1, 0, 1, 0], np.int64), radix)


def repeated(fn: Callable[..., Any], args: tuple[Any, ...], calls: int) -> Callable[[], Any]:
    """``fn(*args)`` ``calls`` times."""
    return lambda: [fn(*args) for _ in range(calls)]


def break_even(sizes: list[int], repeat: int) -> list[dict[str, Any]]:
    from core.lattice.kernels import rollup

    pool, rng, out = ThreadPoolExecutor(1), np.random.default_rng(0), []
    for size in sizes:
        args = synthetic(size, rng)
        calls = max(1, 2_000_000 // size)  # about 2 M rows per timing
        fns = {"one pass": repeated(rollup, args, calls),
               "split, 1 thread": repeated(threads.split_roll_up, args, calls),
               "split, 2 threads": repeated(threads.split_roll_up, (*args, pool), calls)}
        times = timed(fns, repeat)
        row: dict[str, Any] = {"rows": len(args[0]), "load": load()[0]}
        for name, (wall, cpu) in times.items():
            row[f"{name} wall_us"], row[f"{name} cpu_us"] = round(wall / calls * 1e6), round(cpu / calls * 1e6)
        row["2 threads / one pass (wall)"] = round(times["split, 2 threads"][0] / times["one pass"][0], 2)
        out.append(row)
        print(row, flush=True)
    pool.shutdown()
    return out


def searches(repeat: int) -> list[dict[str, Any]]:
    adult = pd.read_csv(DATA / "adult" / "adult.csv", sep=";", dtype=str)
    schema = load_schema("adult")
    sens_frame, sens_schema = adult_with_sensitive(adult)
    cases = [("k=5, 0 %", adult, schema, {"k": 5, "max_suppression": 0.0}),
             ("k=5, <= 4 %", adult, schema, {"k": 5, "max_suppression": 0.04}),
             ("k=5, distinct 2-diversity, <= 4 %", sens_frame, sens_schema, {"k": 5, "l": 2, "max_suppression": 0.04})]
    eng, out = get_engine("optimal"), []
    for name, frame, sch, values in cases:
        batch, params = encode(frame, sch), make_params(eng, values)
        found: dict[int, Any] = {}

        def run(count: int, batch: Any = batch, params: Any = params, found: dict[int, Any] = found) -> None:
            parallel.set_threads(count)
            rel = eng.anonymize(batch, params, np.random.default_rng(0))
            found[count] = (rel.diagnostics["levels"], rel.diagnostics["nodes_evaluated"], rel.diagnostics["search"],
                            rel.diagnostics["objective_value"], rel.suppressed.tolist())

        times = timed({"1 thread": lambda: run(1), "2 threads": lambda: run(2)}, repeat)
        row = {"case": name, "load": load()[0], "same release": found[1] == found[2], "nodes": found[2][1]}
        for key, (wall, cpu) in times.items():
            row[f"{key} wall_s"], row[f"{key} cpu_s"] = round(wall, 3), round(cpu, 3)
        out.append(row)
        print(row, flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--force", action="store_true", help="split from --rows rows whatever the load")
    ap.add_argument("--rows", type=int, default=threads.PARALLEL_ROWS, help="with --force: split from this many rows")
    ap.add_argument("--sizes", default="2048,4096,8192,16384,32768,65536,131072,262144,524288")
    ap.add_argument("--skip-searches", action="store_true")
    args = ap.parse_args()
    before = load()
    warm_lattice_kernels()
    if args.force:
        threads.PARALLEL_ROWS = args.rows
        parallel.spare_core = lambda: True
    rollups = break_even([int(s) for s in args.sizes.split(",")], args.repeat)
    found = [] if args.skip_searches else searches(args.repeat)
    after = load()
    print(f"\nmachine load (1, 5, 15 min) before {before}, after {after}; {os.cpu_count()} CPUs; "
          f"split from {threads.PARALLEL_ROWS} rows{' whatever the load' if args.force else ' while a core is spare'}")
    print("\nRoll-up of one table (per call, medians):")
    print_table(rollups, list(rollups[0]))
    if found:
        print("\nWarm optimal on Adult, roll-ups on 1 thread vs 2 (medians):")
        print_table(found, list(found[0]))
    path = write_results("lattice_threads", {"load_before": before, "load_after": after, "force": args.force,
                                             "parallel_rows": threads.PARALLEL_ROWS, "rollups": rollups,
                                             "searches": found})
    print(f"\nresults: {path}")


if __name__ == "__main__":
    main()
