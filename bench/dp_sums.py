"""Benchmark: what an analyst gets by adding up DP count tables, published as drawn, clamped at 0, or
through the consistent view.

Crime reports from the generator (``--stations`` × ``--days`` × ``--per-day``, seeded), one release per
station-day at the crime spec's ``[dp]`` (ε = 1 per release over its groupings, discrete Gaussian,
δ = 1e-6), as the stream counts them. Per grouping and run: the sum of that table over all releases
(the exact sum is the number of reports), the same draws with negative counts set to 0 (what was
published before issue 38), and the consistent view of each release's tables
(:func:`core.dp.consistent.consistent_view`); the share of published cells below 0; the sum's 95 %
half-width from the stated sd (1.96 · sd · √cells).

    .venv/bin/python bench/dp_sums.py [--stations 4] [--days 7] [--per-day 600] [--runs 2]

Writes bench/results/dp_sums.json and prints a table.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np

from bench._common import print_table, write_results
from core.dp.consistent import consistent_view
from core.dp.derive import grouping_columns
from core.dp.plan import count_tables
from core.generators.crime import generate_crime_reports
from stream.io.specs import load_spec_data


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stations", type=int, default=4)
    ap.add_argument("--days", type=int, default=7)
    ap.add_argument("--per-day", type=int, default=600)
    ap.add_argument("--runs", type=int, default=2)
    args = ap.parse_args()
    spec = load_spec_data("crime")
    assert spec.dp is not None
    groupings = [tuple(g) for g in spec.dp.groupings]
    frame = generate_crime_reports(np.random.default_rng(7), stations=args.stations, days=args.days,
                                   per_day=args.per_day)
    day = frame["event_time"].astype(str).str[:10]
    releases = list(frame.groupby([frame["station_id"], day]))
    rows = []
    for run in range(args.runs):
        sums = {g: {"published": 0, "clamped": 0, "consistent": 0, "negative": 0, "cells": 0, "sd": 0.0}
                for g in groupings}
        for (_station, d), part in releases:
            grouped, domains = grouping_columns(part, spec, [d])
            tables = count_tables(grouped, groupings, domains, spec.dp.rho)
            for table, view in zip(tables, consistent_view(tables), strict=True):
                s = sums[table.by]
                s["published"] += sum(table.counts)
                s["clamped"] += sum(max(c, 0) for c in table.counts)
                s["consistent"] += sum(view.counts)
                s["negative"] += sum(c < 0 for c in table.counts)
                s["cells"] += len(table.counts)
                s["sd"] = table.sd
        for by, s in sums.items():
            rows.append({"run": run + 1, "grouping": " x ".join(by), "exact": len(frame),
                         "published": s["published"], "ci95 of sum": round(1.96 * s["sd"] * math.sqrt(s["cells"])),
                         "clamped at 0": s["clamped"], "consistent view": s["consistent"],
                         "cells below 0": f"{s['negative'] / s['cells']:.1%}"})
    path = write_results("dp_sums", {"args": vars(args), "releases": len(releases), "rows": rows})
    print(f"{len(frame):,} reports, {len(releases)} releases (station-days), epsilon {spec.dp.epsilon:g} per "
          f"release over {len(groupings)} tables")
    print_table(rows, list(rows[0]))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
