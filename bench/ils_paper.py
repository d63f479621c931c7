"""Reproduce the ILS paper's evaluation: k-member, l-greedy, and ILS started from each.

Data (read from ../shared/data, never copied):

* Adult (``adult-uci/adult.data``), the 14 attributes (the income class is dropped), read with
  ``skipinitialspace=True``; rows with a missing value (``?``) are dropped (30,162 of 32,561 remain).
  Numeric QIs: age, fnlwgt, education-num, capital-gain, capital-loss, hours-per-week; the other 8
  are categorical (sets).
* Census (``ipums-cps/cps_00421_persons.csv``): AGE numeric; SEX, RACE, STATEFIP categorical codes,
  standing in for the paper's IPUMS table (FAMUNIT, FAMSIZE, ELDCH, YNGCH are not in this extract).

Grid: for each dataset, sizes 1k, 5k, 10k (+20k, 40k for census) at k = 5, and k = 3, 10, 20 at
10k (the paper's Fig. 6-9 axes); samples drawn without replacement with a fixed seed. For each
configuration: k-member and l-greedy (GCP, SIL, time), then ILS with objective GCP and SIL started
from each, with a time budget of 10 s (1k), 30 s (5k) or 60 s (>= 10k) for the whole engine call,
and RPI = 100 (heuristic - ILS) / heuristic (eq. 9). One seed per configuration (the paper averages
five). Every release is checked by the independent verifier. Also measured: the numba move loop
against a numpy version (``bench/_ils_numpy.py``) on the same start, and the time-vs-quality curve
(Fig. 5) written as a PNG.

Usage: ``.venv/bin/python bench/ils_paper.py [--quick] [--budget-scale X] [--only DATASET,N,K ...]``;
``--only`` runs just the given configurations (repeatable) and writes ``ils_paper_only.json``.
Timings are wall-clock on a shared, loaded 2-core machine: treat them as upper bounds.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import DATA, RESULTS, print_table, write_results
from bench._ils_numpy import numpy_descent
from core.encoding import Schema, encode
from core.engines.hetero.data import hetero_data
from core.engines.hetero.graph import candidates, regular_from_clusters
from core.engines.hetero.kmember import kmember_cls
from core.engines.hetero.runner import Searcher
from core.engines.registry import get_engine, make_params
from core.schema import parse_spec
from core.verify import verify_release

ADULT_COLUMNS = ["age", "workclass", "fnlwgt", "education", "education-num", "marital-status", "occupation",
                 "relationship", "race", "sex", "capital-gain", "capital-loss", "hours-per-week", "native-country",
                 "income"]
ADULT_NUMERIC = ["age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week"]
CENSUS_COLUMNS = ["AGE", "SEX", "RACE", "STATEFIP"]


def load_adult() -> tuple[pd.DataFrame, list[str]]:
    df = pd.read_csv(DATA / "adult-uci" / "adult.data", header=None, names=ADULT_COLUMNS, skipinitialspace=True,
                     na_values="?")
    return df.dropna().drop(columns="income").reset_index(drop=True), ADULT_NUMERIC


def load_census() -> tuple[pd.DataFrame, list[str]]:
    df = pd.read_csv(DATA / "ipums-cps" / "cps_00421_persons.csv", usecols=CENSUS_COLUMNS)[CENSUS_COLUMNS]
    for col in ("SEX", "RACE", "STATEFIP"):
        df[col] = df[col].astype(str)
    return df, ["AGE"]


def schema_for(df: pd.DataFrame, numeric: list[str], name: str) -> Schema:
    """Numeric QIs with a small automatic interval hierarchy, categorical ones flat; the engines
    here use only the value domains."""
    qis = []
    for col in df.columns:
        if col in numeric:
            qis.append({"name": col, "type": "numeric", "hierarchy": {"auto": 2}})
        else:
            qis.append({"name": col, "type": "categorical",
                        "hierarchy": {"rows": [[v, "*"] for v in sorted(df[col].astype(str).unique())]}})
    return Schema.from_spec(parse_spec({"name": name, "qi": qis}))


def budget_for(n: int, scale: float) -> float:
    return scale * (10.0 if n <= 1000 else 30.0 if n <= 5000 else 60.0)


def run_config(dataset: str, full: pd.DataFrame, numeric: list[str], n: int, k: int, budget: float,
               seed: int = 0) -> dict[str, Any]:
    df = full.sample(n, random_state=seed).reset_index(drop=True)
    schema = schema_for(df, numeric, dataset)
    batch = encode(df, schema)
    row: dict[str, Any] = {"dataset": dataset, "n": n, "k": k, "budget_s": budget}
    base: dict[str, dict[str, float]] = {}
    for name in ("kmember", "lgreedy"):
        eng = get_engine(name)
        started = time.perf_counter()
        rel = eng.anonymize(batch, make_params(eng, {"k": k}), np.random.default_rng(seed))
        elapsed = time.perf_counter() - started
        ok = verify_release(df, rel, schema).ok
        base[name] = {"gcp": rel.metrics["gcp"], "sil": rel.metrics["sil"]}
        row.update({f"{name}_gcp": rel.metrics["gcp"], f"{name}_sil": rel.metrics["sil"],
                    f"{name}_time_s": elapsed, f"{name}_verified": ok})
    traces = {}
    eng = get_engine("ils")
    runs = [(o, s, "assign") for o in ("gcp", "sil") for s in ("kmember", "lgreedy")]
    runs += [("gcp", s, "2opt") for s in ("kmember", "lgreedy")]  # the paper's search alone, for comparison
    for objective, start, search in runs:
        # the paper's experiment is a time budget: work budgets large enough that the time_limit cap binds
        params = make_params(eng, {"k": k, "objective": objective, "start": start, "time_limit": budget,
                                   "search": search, "max_iterations": 10**12, "passes": 10**9})
        started = time.perf_counter()
        rel = eng.anonymize(batch, params, np.random.default_rng(seed))
        elapsed = time.perf_counter() - started
        ok = verify_release(df, rel, schema).ok
        value = rel.metrics[objective]
        suffix = "_2opt" if search == "2opt" else ""
        key = f"ils_{start}_{objective}{suffix}"
        ref = base[start][objective]
        diag = rel.diagnostics
        row.update({key: value,
                    f"rpi_{start}_{objective}{suffix}": 100.0 * (ref - value) / ref if ref > 0 else 0.0,
                    f"{key}_time_s": elapsed, f"{key}_verified": ok, f"{key}_iterations": diag["iterations"],
                    f"{key}_descent_complete": diag["descent_complete"],
                    f"{key}_start_time_s": diag["start_time_s"] + diag["candidates_time_s"]})
        if search == "assign":
            row.update({f"{key}_construction": diag["construction_objective"],
                        f"{key}_construction_used": diag["construction_used"],
                        f"{key}_passes": diag["assign_passes"], f"{key}_after_passes": diag["assign_objective"]})
        traces[key] = diag["trace"]
    row["traces"] = traces
    print(f"  {dataset} n={n} k={k}: RPI gcp km {row['rpi_kmember_gcp']:.1f}% lg {row['rpi_lgreedy_gcp']:.1f}% "
          f"(paper's 2-opt search: km {row['rpi_kmember_gcp_2opt']:.1f}% lg {row['rpi_lgreedy_gcp_2opt']:.1f}%), "
          f"sil km {row['rpi_kmember_sil']:.1f}% lg {row['rpi_lgreedy_sil']:.1f}%", flush=True)
    return row


def backend_comparison(full: pd.DataFrame, numeric: list[str], n: int, k: int, seconds: float) -> dict[str, Any]:
    """numba kernel vs numpy-vectorized move evaluation: the same descent from the same start."""
    df = full.sample(n, random_state=0).reset_index(drop=True)
    data = hetero_data(encode(df, schema_for(df, numeric, "cmp")))
    rng = np.random.default_rng(0)
    matches = regular_from_clusters(kmember_cls(data, k, rng), k, rng)
    cand = candidates(data, 64, "gcp", rng)
    out: dict[str, Any] = {"n": n, "k": k, "seconds": seconds}
    numba = Searcher(data, matches.copy(), "gcp", cand, 1)
    start_obj = numba.objective()
    numba.run(seconds, 0)  # descent only (max_iterations=0)
    c = numba.counters
    took = c.trace[-1][0]
    out["numba"] = {"evals": c.descent_evals, "moves": c.descent_moves, "seconds": took,
                    "evals_per_s": c.descent_evals / took, "moves_per_s": c.descent_moves / took,
                    "descent_complete": c.descent_done, "gcp": numba.objective()}
    nump = Searcher(data, matches.copy(), "gcp", cand, 1)
    res = numpy_descent(nump.S, nump.C, cand, 1, seconds)
    out["numpy"] = {**res, "evals_per_s": res["evals"] / res["seconds"], "moves_per_s": res["moves"] / res["seconds"],
                    "descent_complete": res["done"], "gcp": nump.objective()}
    out["start_gcp"] = start_obj
    return out


def plot_fig5(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    picks = [r for r in rows if r["k"] == 5 and r["n"] in (1000, 10000)]
    cols = min(max(len(picks), 1), 2)
    rows_ = (len(picks) + 1) // 2 or 1
    fig, axes = plt.subplots(rows_, cols, figsize=(5.5 * cols, 4 * rows_), squeeze=False)
    for ax, r in zip(axes.ravel(), picks, strict=False):
        for start, color in (("kmember", "tab:blue"), ("lgreedy", "tab:orange")):
            tr = np.asarray(r["traces"][f"ils_{start}_gcp"])
            ax.plot(tr[:, 0], 100 * tr[:, 1], color=color, label=f"{start} + ILS (assign)")
            tr = np.asarray(r["traces"][f"ils_{start}_gcp_2opt"])
            ax.plot(tr[:, 0], 100 * tr[:, 1], color=color, ls=":", label=f"{start} + ILS (paper's 2-opt)")
            ax.axhline(100 * r[f"{start}_gcp"], color=color, ls="--", lw=1, label=f"{start}")
        ax.set_title(f"{r['dataset']} n={r['n']} k={r['k']} (GCP)")
        ax.set_xlabel("time (s)")
        ax.set_ylabel("GCP x 100")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def parse_only(spec: str, sets: dict[str, Any]) -> tuple[str, int, int]:
    """``DATASET,N,K`` of ``--only`` as a grid entry."""
    parts = spec.split(",")
    if len(parts) != 3 or parts[0] not in sets or not (parts[1].isdigit() and parts[2].isdigit()):
        raise SystemExit(f"error: --only expects DATASET,N,K with DATASET in {sorted(sets)}, got '{spec}'")
    return parts[0], int(parts[1]), int(parts[2])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="1k and 5k rows, k=5, short budgets")
    ap.add_argument("--budget-scale", type=float, default=None, help="multiply the ILS time budgets")
    ap.add_argument("--only", action="append", default=[], metavar="DATASET,N,K",
                    help="run only this configuration, e.g. census,10000,20 (repeatable)")
    args = ap.parse_args()
    scale = args.budget_scale if args.budget_scale is not None else (0.3 if args.quick else 1.0)
    sets = {"adult": load_adult(), "census": load_census()}
    if args.only:
        grid = [parse_only(spec, sets) for spec in args.only]
    elif args.quick:
        grid = [(d, n, 5) for d in sets for n in (1000, 5000)]
    else:
        grid = []
        for d, sizes in (("adult", (1000, 5000, 10000)), ("census", (1000, 5000, 10000, 20000, 40000))):
            grid += [(d, n, 5) for n in sizes] + [(d, 10000, k) for k in (3, 10, 20)]
    rows = []
    for dataset, n, k in grid:
        full, numeric = sets[dataset]
        rows.append(run_config(dataset, full, numeric, n, k, budget_for(n, scale)))
    cmp_n = 1000 if args.quick or args.only else 5000
    backends = backend_comparison(*sets["adult"], cmp_n, 5, 5.0 if args.quick or args.only else 20.0)
    name = "ils_paper_only" if args.only else "ils_paper_quick" if args.quick else "ils_paper"
    RESULTS.mkdir(parents=True, exist_ok=True)
    png = RESULTS / f"{name}_fig5.png"
    plot_fig5(rows, png)
    path = write_results(name, {"grid": rows, "backends": backends, "png": str(png), "budget_scale": scale})
    cols = ["dataset", "n", "k", "kmember_gcp", "lgreedy_gcp", "ils_kmember_gcp", "rpi_kmember_gcp", "ils_lgreedy_gcp",
            "rpi_lgreedy_gcp", "rpi_kmember_gcp_2opt", "rpi_lgreedy_gcp_2opt",
            "kmember_sil", "lgreedy_sil", "rpi_kmember_sil", "rpi_lgreedy_sil", "kmember_time_s",
            "lgreedy_time_s"]
    print()
    print_table(rows, cols)
    print()
    for b in ("numba", "numpy"):
        r = backends[b]
        print(f"{b}: {r['evals_per_s']:.3g} moves evaluated/s, {r['moves_per_s']:.3g} applied/s, "
              f"GCP {backends['start_gcp']:.5f} -> {r['gcp']:.5f} in {r['seconds']:.1f} s "
              f"(descent complete: {r['descent_complete']})")
    verified = all(v for r in rows for key, v in r.items() if key.endswith("_verified"))
    print(f"\nall releases verified: {verified}\nwrote {path} and {png}")


if __name__ == "__main__":
    main()
