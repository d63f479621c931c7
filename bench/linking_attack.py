"""Benchmark: the intersection attack (core/attacks/linking.py) on every engine and every release path.

    .venv/bin/python bench/linking_attack.py [--per-day 600] [--overlap 0.08] [--engines a,b] [--k 5]

Two generated days of crime reports (core.generators.crime): day 1 from station S1; day 2 from S2
plus ``overlap`` of day 1's reports again, pushed under S2 with new report ids (same content, new
keys: what two overlapping extracts of one department look like). The adversary knows each shared
report's QI values (age, sex, suburb, postcode, reporter) and exactly which releases hold it, takes
the rows of each release whose labels cover it and intersects the offences.

Paths per engine:

* ``batch``: ``anonstream anonymize`` run on each file separately (no ledger; the CLI warns);
* ``batch-ledger``: the same two runs with ``--ledger FILE`` (default guard ``content``);
* ``stream``: the stream's release path (pool, windows per station, default link guard ``content``),
  in process on SQLite;
* ``stream-report`` (with ``--report-guard``): the stream with ``link_guard=report`` (the old rule).

Columns: ``shared`` reports, ``linked`` (in two releases), ``disclosed`` (the intersection leaves
only the true offence though no single release did), ``narrowed`` (fewer than k consistent
candidates), ``homogeneous`` (a single release already shows one offence: not linking; ``-l 2``).
Writes bench/results/linking_attack.json and prints the table.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


from bench._common import print_table, write_results
from core.attacks import intersection_attack
from core.engines.registry import engine_names
from stream.testing.linking import KEY, SCHEMA, overlapping_days, run_batch, run_stream


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--per-day", type=int, default=600)
    ap.add_argument("--overlap", type=float, default=0.08)
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--engines", default=",".join(engine_names()))
    ap.add_argument("--paths", default="batch,batch-ledger,stream")
    ap.add_argument("--report-guard", action="store_true", help="also run the stream with link_guard=report")
    args = ap.parse_args()
    os.environ["ANONSTREAM_FINGERPRINT_KEY"] = KEY  # the batch CLI's key (the stream gets it in Settings)
    day1, day2, shared = overlapping_days(args.per_day, args.overlap, args.seed)
    paths = args.paths.split(",") + (["stream-report"] if args.report_guard else [])
    rows: list[dict[str, Any]] = []
    for engine in args.engines.split(","):
        for path in paths:
            t0 = time.perf_counter()
            with tempfile.TemporaryDirectory() as tmp:
                if path.startswith("batch"):
                    rels, member = run_batch(Path(tmp), engine, args.k, (day1, day2), shared, path == "batch-ledger")
                else:
                    guard = "report" if path == "stream-report" else "content"
                    rels, member = run_stream(Path(tmp), engine, args.k, (day1, day2), shared, guard)
            res = intersection_attack(rels, shared, SCHEMA, args.k, membership=member)
            row = {"engine": engine, "path": path, "releases": len(rels), "shared": len(shared),
                   **{k: v for k, v in res.as_dict().items() if k not in ("k", "persons")},
                   "seconds": round(time.perf_counter() - t0, 1)}
            rows.append(row)
            print(json.dumps(row), file=sys.stderr)
    cols = ["engine", "path", "releases", "shared", "linked", "disclosed", "narrowed", "homogeneous",
            "inconsistent", "seconds"]
    path = write_results("linking_attack", {"per_day": args.per_day, "overlap": args.overlap, "k": args.k,
                                            "seed": args.seed, "rows": rows})
    print_table(rows, cols)
    print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
