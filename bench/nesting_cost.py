"""Benchmark: the information-loss cost of nested bands (issue 26 item 1), per local-recoding engine.

Every local-recoding engine runs twice on the same rows, seed and parameters: ``bands = "nested"``
(the default: each class's label per QI is the smallest node of the QI's hierarchy covering its
values, so released labels never overlap) and ``bands = "free"`` (each class's own range or set).
``local-recode`` releases full-domain nodes and has no free variant: it appears once, for scale.

Data (k = 5; cg-diverse with l = 2):

* ``adult``: raw UCI Adult (``../shared/data/adult-uci/adult.data``, complete cases) read with the
  ``adult-uci`` spec (age and hours-per-week numeric on 5/10/20/40 bands, ARX's hierarchies for
  sex, race, marital status, education and workclass; occupation sensitive, every occupation
  severity 1 so the CG engines run), a random sample of ``--rows`` rows (seed 0);
* ``crime``: ``--rows`` generated reports (``core.generators``, seed 1) with the ``crime`` spec
  (age on 5/10/20/40 bands, sex, suburb tree, postcode mask, reporter tree; offence sensitive).

Loss: one measure for both variants, read from the released labels alone (``label_loss``): per
row and QI the share of the QI's domain the label covers, (hi - lo) / domain span for numbers and
days, (values covered - 1) / (values - 1) for categories (a set's members or a node's leaves), 1 for
``*`` and for suppressed rows; averaged over rows and QIs (GCP). The engines' own ``loss_metric``
(weighted, each variant on its own cost) is reported beside it. Ratio = nested / free.

    .venv/bin/python bench/nesting_cost.py [--rows 4000] [--engines mondrian,cg-kanon]

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

from bench._common import DATA, print_table, write_results
from core.encoding import EncodedBatch, Schema, encode
from core.engines.base import Release
from core.engines.registry import get_engine, make_params
from core.generators import generate_crime_reports
from core.hierarchies import TOP
from core.hierarchies.intervals import parse_interval, split_interval
from core.schema import parse_spec
from core.verify import verify_release
from stream.io.specs import load_schema
from stream.io.tables import read_for_spec

ENGINES = ["mondrian", "cg-kanon", "cg-diverse", "kmember", "lgreedy", "ils", "local-recode"]
TARGET = 1.25


def datasets(rows: int) -> dict[str, tuple[pd.DataFrame, Schema]]:
    schema = load_schema("adult-uci")
    adult = read_for_spec(DATA / "adult-uci" / "adult.data", schema.spec, schema)
    adult = adult.sample(min(rows, len(adult)), random_state=0).reset_index(drop=True)
    spec = schema.spec.model_dump()
    spec["sensitive"]["severity"] = dict.fromkeys(sorted(adult[spec["sensitive"]["name"]].astype(str).unique()), 1)
    crime = generate_crime_reports(np.random.default_rng(1), per_day=rows)
    return {"adult": (adult, Schema.from_spec(parse_spec(spec))), "crime": (crime, load_schema("crime"))}


def _days(text: str) -> float:
    return float(pd.Timestamp(text).value / 86400e9)


def _ordered_width(label: str, kind: str) -> float:
    """Width of an ordered label (numbers, or days for dates): hi - lo of its interval."""
    if kind == "date":
        parts = split_interval(label)
        if parts is not None:
            return _days(parts[1]) - _days(parts[0]) + (0 if parts[2] else -1)
        if len(label) == 10:
            return 0.0
        start = pd.Timestamp(label + ("-01-01" if len(label) == 4 else "-01"))
        end = start + (pd.DateOffset(years=1) if len(label) == 4 else pd.DateOffset(months=1))
        return (end - start).days - 1.0
    parsed = parse_interval(label)
    assert parsed is not None, label
    return parsed[1] - parsed[0]


def label_loss(batch: EncodedBatch, rel: Release) -> float:
    """GCP of the released labels, the same measure for nested and free labels (module docstring)."""
    n = len(rel.rows) + len(rel.suppressed)
    total = float(len(rel.suppressed) * batch.d)
    for q in batch.qis:
        counts = rel.rows[q.name].astype(str).value_counts()
        if q.kind in ("numeric", "date") and q.domain is not None:
            span = max(q.domain[1] - q.domain[0], 1e-12)
            cost = {lab: 1.0 if lab == TOP else min(_ordered_width(lab, q.kind) / span, 1.0) for lab in counts.index}
        else:
            under: dict[str, int] = {}
            for lvl in range(q.height + 1):
                for lab, u in zip(q.labels[lvl], q.leaves_under[lvl], strict=True):
                    under[str(lab)] = min(under.get(str(lab), q.n_leaves), int(u))
            den = max(q.n_leaves - 1, 1)

            def members(lab: str, under: dict[str, int] = under) -> int:
                if lab.startswith("{") and lab.endswith("}"):
                    return len(lab[1:-1].split(","))
                return under.get(lab, 1)

            cost = {lab: 1.0 if lab == TOP else (members(lab) - 1) / den for lab in counts.index}
        total += float(sum(cost[lab] * c for lab, c in counts.items()))
    return total / (n * batch.d) if n else 0.0


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
    first = schema.qi_names[0]
    return {"label_loss": round(label_loss(batch, rel), 5), "engine_loss": round(float(rel.metrics["loss_metric"]), 5),
            f"{first}_labels": int(rel.rows[first].nunique()),
            f"{first}_overlaps": overlapping_pairs(rel.rows[first]),
            "suppressed": len(rel.suppressed), "cpu_s": round(cpu, 2),
            "verified": verify_release(frame, rel, schema).ok}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=4000, help="rows per data set (default 4000)")
    ap.add_argument("--engines", default=",".join(ENGINES), help="comma-separated engines")
    args = ap.parse_args()
    engines = [e for e in args.engines.split(",") if e]
    table, results = [], []
    for name, (frame, schema) in datasets(args.rows).items():
        first = schema.qi_names[0]
        for engine in engines:
            free = run(engine, "free", frame, schema) if engine != "local-recode" else None
            nested = run(engine, None if engine == "local-recode" else "nested", frame, schema)
            ratio = nested["label_loss"] / free["label_loss"] if free and free["label_loss"] > 0 else None
            results.append({"data": name, "rows": len(frame), "engine": engine, "free": free, "nested": nested,
                            "ratio": ratio})
            table.append({"data": name, "engine": engine, "free loss": free and free["label_loss"],
                          "nested loss": nested["label_loss"], "ratio": ratio and round(ratio, 3),
                          "<= 1.25": None if ratio is None else ratio <= TARGET,
                          f"{first} labels free/nested": f"{free and free[f'{first}_labels']}/"
                                                        f"{nested[f'{first}_labels']}",
                          "overlaps free/nested": f"{free and free[f'{first}_overlaps']}/"
                                                  f"{nested[f'{first}_overlaps']}",
                          "engine loss free/nested": f"{free and free['engine_loss']}/{nested['engine_loss']}",
                          "verified": nested["verified"] and (free is None or free["verified"]),
                          "cpu s free/nested": f"{free and free['cpu_s']}/{nested['cpu_s']}"})
            print(f"{name} {engine}: ratio {ratio}", flush=True)
    print()
    print_table(table, list(table[0]))
    path = write_results("nesting_cost", {"rows": args.rows, "k": 5, "target_ratio": TARGET, "results": results})
    print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
