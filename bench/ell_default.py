"""Benchmark: which engine gives the stream distinct l >= 2 by default (issue 39), at what loss and time.

Windows, as the stream cuts them:

* ``crime``: the bundled generator (``core.generators.crime``, seed 0), 5 stations x 1 day, one
  window per station (the embedded default), at 400 and at 2,000 reports per window; spec ``crime``;
* ``nypd``: the NYPD Queens 2021 export (``../shared/data/nypd-arrests-queens-2021``), one window
  per calendar month of ``ARREST_DATE`` (the README's 31-day global windows), with the bundled spec
  ``nypd`` and with the spec ``anonstream spec draft`` writes for the file (``--draft FILE``).

Options, each at k = 5 and the stream's ``max_suppression`` 0.05: ``cg-kanon`` (k only, the old
default); ``cg-diverse`` with l = 2 (graceful degradation on, its default); ``cg-diverse`` l = 2 with
``degrade=false`` (always chase the severity-weighted target); ``mondrian`` l = 2 (reference).

Measures, summed or row-weighted over the windows: loss (LM, each window's own domain, suppressed
rows cost 1), rows in cg-diverse's all-``*`` top class, suppressed rows, CPU seconds of the engine
(kernels warmed first), and an outside check: classes (released QI labels grouped with pandas)
holding one offence only, and their rows.

    .venv/bin/python bench/ell_default.py [--draft /tmp/nypd_draft.toml] [--quick]

Writes bench/results/ell_default.json and prints a table.
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
from core.encoding import Schema, encode
from core.engines.registry import get_engine, make_params
from core.engines.warmup import warm_up
from core.errors import InfeasibleError
from core.generators.crime import generate_crime_reports
from stream.io.specs import load_schema
from stream.io.tables import read_for_spec

NYPD = DATA / "nypd-arrests-queens-2021" / "nypd_arrests_queens_2021.csv"
SPECS = Path(__file__).resolve().parent.parent / "stream" / "specs"
OPTIONS: dict[str, tuple[str, dict[str, Any]]] = {
    "cg-kanon k5": ("cg-kanon", {}),
    "cg-diverse l2": ("cg-diverse", {"l": 2}),
    "cg-diverse l2 chase": ("cg-diverse", {"l": 2, "degrade": False}),
    "mondrian l2": ("mondrian", {"l": 2}),
}


def crime_windows(per_day: int) -> list[pd.DataFrame]:
    frame = generate_crime_reports(np.random.default_rng(0), stations=5, days=1, per_day=per_day)
    return [w.reset_index(drop=True) for _, w in frame.groupby("station_id", sort=True)]


def nypd_windows(schema: Schema) -> list[pd.DataFrame]:
    frame = read_for_spec(NYPD, schema.spec, schema)
    month = pd.to_datetime(frame["ARREST_DATE"], format="%m/%d/%Y").dt.month
    return [w.reset_index(drop=True) for _, w in frame.groupby(month, sort=True)]


def one_offence_classes(rows: pd.DataFrame, qis: list[str], sensitive: str) -> pd.Series:
    """Size of each class (rows with equal released QI labels) holding a single offence."""
    groups = rows.astype({q: str for q in qis}).groupby(qis, dropna=False)[sensitive]
    stats = groups.agg(["nunique", "size"])
    return stats.loc[stats["nunique"] < 2, "size"]


def run(schema: Schema, windows: list[pd.DataFrame], option: str) -> dict[str, Any]:
    name, extra = OPTIONS[option]
    engine = get_engine(name)
    params = make_params(engine, extra, requirement={"k": 5, "max_suppression": 0.05})
    warm_up(engine, encode(windows[0], schema), params)
    rows = loss = cpu = top = suppressed = single_classes = single_rows = failed = 0.0
    for i, window in enumerate(windows):
        batch = encode(window, schema)
        c0 = time.process_time()
        try:
            release = engine.anonymize(batch, params, np.random.default_rng([0, i]))
        except InfeasibleError:  # a window the option cannot release counts as failed
            failed += 1
            continue
        cpu += time.process_time() - c0
        n = len(window)
        rows += n
        loss += float(release.metrics["loss_metric"]) * n
        top += float(release.diagnostics.get("top_class_size", 0) or 0)
        suppressed += len(release.suppressed)
        single = one_offence_classes(release.rows, schema.qi_names, str(schema.sensitive))
        single_classes += len(single)
        single_rows += int(single.sum())
    return {"option": option, "windows": len(windows), "failed": int(failed), "rows": int(rows),
            "loss": round(loss / rows, 4) if rows else None, "top_rows": int(top), "suppressed": int(suppressed),
            "one_offence_classes": int(single_classes), "one_offence_rows": int(single_rows),
            "cpu_s": round(cpu, 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draft", help="a spec drafted by `anonstream spec draft` for the NYPD file")
    ap.add_argument("--quick", action="store_true", help="crime data only")
    args = ap.parse_args()
    crime = load_schema(SPECS / "crime.toml")
    cases: list[tuple[str, Schema, list[pd.DataFrame]]] = [
        ("crime 5x400", crime, crime_windows(400)), ("crime 5x2000", crime, crime_windows(2000))]
    if not args.quick:
        nypd = load_schema(SPECS / "nypd.toml")
        cases.append(("nypd monthly, spec nypd", nypd, nypd_windows(nypd)))
        if args.draft:
            drafted = load_schema(args.draft)
            cases.append(("nypd monthly, drafted spec", drafted, nypd_windows(drafted)))
    results = []
    for label, schema, windows in cases:
        for option in OPTIONS:
            results.append({"data": label, **run(schema, windows, option)})
            print_table(results[-1:], list(results[-1]))
    print()
    print_table(results, list(results[0]))
    path = write_results("ell_default", {"results": results})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
