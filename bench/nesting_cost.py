"""Benchmark: the information-loss cost of nested bands (issues 26 and 39), per table and local-recoding engine.

Every local-recoding engine runs twice on the same rows, seed and parameters: ``bands = "nested"``
(the default: each class's label per QI is the smallest node of the QI's hierarchy covering its
values, so released labels never overlap) and ``bands = "free"`` (each class's own range or set).
``local-recode`` releases full-domain nodes and has no free variant: it appears once, for scale.

Tables (``bench/nesting_tables.py``): every bundled spec with data (``adult``, ``adult-uci``,
``nypd``, ``crime``), generated reports with skewed ages and heavy categorical skew
(``crime-skewed``) and the same with age and sex alone (``skewed-age-sex``). k = 5; cg-diverse with
l = 2. Default: a sample of ``--rows`` rows per table (2,000, about two minutes on 2 cores);
``--full`` runs the whole tables (10,000 generated rows; ILS and CG take much longer).

Loss: one measure for both variants, read from the released labels alone (``label_loss``): per
row and QI the share of the QI's domain the label covers, (hi - lo) / domain span for numbers and
days, (values covered - 1) / (values - 1) for categories (a set's members or a node's leaves), 1 for
``*`` and for suppressed rows; averaged over rows and QIs (GCP). Ratio = nested / free; the target is
at most 1.25. Where a pair misses it, the report names the QI whose nested labels lose most over its
free ones (where), with the rows labelled ``*`` on it both ways and Mondrian's peeled cuts (why).
"fallback" lists the engine's own per-QI report (``diagnostics["nesting_fallback"]``, issue 39): each QI
whose nested loss went over 1.25x its free loss, with that ratio, released as free ranges / sets unless
marked "kept nested" (categorical QIs of Mondrian and the CG engines, whose free labels are nodes too).

    .venv/bin/python bench/nesting_cost.py [--rows 2000 | --full] [--tables adult,nypd] [--engines mondrian]

Writes bench/results/nesting_cost.json.
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

from bench._common import print_table, write_results
from bench.nesting_tables import TABLES
from core.encoding import EncodedBatch, Schema, encode
from core.engines.base import Release
from core.engines.nesting import label_qi_loss
from core.engines.registry import get_engine, make_params
from core.hierarchies import TOP
from core.hierarchies.intervals import parse_interval
from core.verify import verify_release

ENGINES = ["mondrian", "cg-kanon", "cg-diverse", "kmember", "lgreedy", "ils", "local-recode"]
TARGET = 1.25
DEFAULT_ROWS = 2000


def qi_loss(batch: EncodedBatch, rel: Release) -> dict[str, float]:
    """Per QI, the mean over rows (suppressed rows cost 1) of the share of its domain each label covers."""
    return label_qi_loss(batch, rel.rows, len(rel.suppressed))


def label_loss(batch: EncodedBatch, rel: Release) -> float:
    """GCP of the released labels, the same measure for nested and free labels (module docstring)."""
    per = qi_loss(batch, rel)
    return sum(per.values()) / len(per) if per else 0.0


def overlapping_pairs(labels: pd.Series) -> int:
    """Pairs of distinct released numeric ranges that overlap without one containing the other."""
    spans = [parse_interval(x) for x in labels.astype(str).unique() if x != TOP]
    ranges = sorted(((p[0], p[1] if p[2] else float(np.nextafter(p[1], -np.inf))) for p in spans if p),
                    key=lambda r: (r[0], -r[1]))  # a range comes before those it contains
    bad = 0
    for i, (_, hi) in enumerate(ranges):
        for lo2, hi2 in ranges[i + 1:]:
            if lo2 > hi:
                break
            bad += hi2 > hi  # starts inside, ends outside
    return bad


def params_for(engine: str, bands: str | None) -> dict[str, Any]:
    values: dict[str, Any] = {"k": 5}
    if engine == "cg-diverse":
        values["l"] = 2
    if bands is not None:
        values["bands"] = bands
    return values


def run(engine: str, bands: str | None, frame: pd.DataFrame, schema: Schema) -> dict[str, Any]:
    eng = get_engine(engine)
    batch = encode(frame, schema)
    cpu = time.process_time()
    rel = eng.anonymize(batch, make_params(eng, params_for(engine, bands)), np.random.default_rng(0))
    cpu = time.process_time() - cpu
    per = qi_loss(batch, rel)
    return {"label_loss": round(sum(per.values()) / len(per), 5), "qi_loss": {k: round(v, 5) for k, v in per.items()},
            "top_rows": {q: int((rel.rows[q].astype(str) == TOP).sum()) for q in schema.qi_names},
            "engine_loss": round(float(rel.metrics["loss_metric"]), 5),
            "overlaps": {q: overlapping_pairs(rel.rows[q]) for q in schema.qi_names},
            "peeled_cuts": rel.diagnostics.get("peeled_cuts"),
            "nesting_fallback": rel.diagnostics.get("nesting_fallback"),
            "suppressed": len(rel.suppressed), "cpu_s": round(cpu, 2),
            "verified": verify_release(frame, rel, schema).ok}


def why(free: dict[str, Any], nested: dict[str, Any]) -> str:
    """Where nested labels lose most over free ones: the QI, its loss both ways and its rows at ``*``."""
    excess = {q: nested["qi_loss"][q] - free["qi_loss"][q] for q in nested["qi_loss"]}
    q = max(excess, key=lambda x: excess[x])
    text = (f"{q}: {free['qi_loss'][q]:.4f} -> {nested['qi_loss'][q]:.4f}, "
            f"rows at * {free['top_rows'][q]} -> {nested['top_rows'][q]}")
    if nested.get("peeled_cuts"):
        text += f"; peeled {nested['peeled_cuts']}"
    return text


def compare(name: str, frame: pd.DataFrame, schema: Schema, engine: str) -> dict[str, Any]:
    free = run(engine, "free", frame, schema) if engine != "local-recode" else None
    nested = run(engine, None if engine == "local-recode" else "nested", frame, schema)
    ratio = nested["label_loss"] / free["label_loss"] if free and free["label_loss"] > 0 else None
    return {"data": name, "rows": len(frame), "engine": engine, "free": free, "nested": nested, "ratio": ratio,
            "within_target": None if ratio is None else ratio <= TARGET,
            "why": why(free, nested) if free and ratio is not None and ratio > TARGET else None}


def _fallback(nested: dict[str, Any]) -> str:
    """The QIs the engine released free (its per-QI fallback), each with its nested / free loss ratio."""
    fb = nested.get("nesting_fallback") or {}
    return ", ".join((f"{q} {e['ratio']}x" if e["ratio"] is not None else f"{q} (free loss 0)")
                     + (" kept nested" if e.get("released_as") == "nested" else "") for q, e in fb.items()) or "-"


def row(r: dict[str, Any]) -> dict[str, Any]:
    free, nested, ratio = r["free"], r["nested"], r["ratio"]
    return {"data": r["data"], "rows": r["rows"], "engine": r["engine"], "free loss": free and free["label_loss"],
            "nested loss": nested["label_loss"], "ratio": ratio and round(ratio, 3),
            "<= 1.25": r["within_target"], "fallback": _fallback(nested),
            "verified": nested["verified"] and (free is None or free["verified"]),
            "cpu s free/nested": f"{free and free['cpu_s']}/{nested['cpu_s']}",
            "where and why (ratio > 1.25)": r["why"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=DEFAULT_ROWS, help=f"rows per table (default {DEFAULT_ROWS})")
    ap.add_argument("--full", action="store_true", help="whole tables (generated: 10,000 rows)")
    ap.add_argument("--tables", default=",".join(TABLES), help="comma-separated tables")
    ap.add_argument("--engines", default=",".join(ENGINES), help="comma-separated engines")
    args = ap.parse_args()
    rows = None if args.full else args.rows
    engines = [e for e in args.engines.split(",") if e]
    results = []
    for name in [t for t in args.tables.split(",") if t]:
        frame, schema = TABLES[name](rows)
        for engine in engines:
            results.append(compare(name, frame, schema, engine))
            print(f"{name} {engine}: ratio {results[-1]['ratio']}", flush=True)
    print()
    table = [row(r) for r in results]
    print_table(table, list(table[0]))
    missed = [r for r in results if r["within_target"] is False]
    print(f"\n{len(missed)} of {sum(r['ratio'] is not None for r in results)} pairs above {TARGET}x")
    path = write_results("nesting_cost", {"rows": rows or "full", "k": 5, "target_ratio": TARGET,
                                          "missed": len(missed), "results": results})
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
