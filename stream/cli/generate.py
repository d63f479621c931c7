"""``anonstream generate crime-reports``: write synthetic crime reports to a JSON-lines or CSV file."""

from __future__ import annotations

import argparse
import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import numpy as np

from core.errors import InputDataError
from core.generators import CrimeChunk, iter_crime_reports
from stream.cli._paths import check_output
from stream.cli._progress import ProgressPrinter
from stream.io.atomic import atomic_writer

GENERATE_HELP = """\
Generate realistic synthetic crime reports (core/generators/crime.py) for demos, tests and benchmarks.

Each station reports on its own suburbs; --per-day is the number of reports per station per day
(the CG paper uses 10,000 as a station's daily volume). Columns: report_id, station_id,
event_time, name, dob, age, sex, suburb, postcode, reporter, offence. The bundled spec 'crime'
describes them. The same --seed always gives the same file.

Examples:
  anonstream generate crime-reports --stations 5 --days 7 --per-day 10000 --seed 1 --out reports.jsonl
  anonstream generate crime-reports --per-day 10000 --out reports.csv
"""

FORMATS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv"}


def cmd_crime_reports(args: argparse.Namespace) -> int:
    out = Path(args.out)
    check_output("--out", out)
    fmt = FORMATS.get(out.suffix.lower())
    if fmt is None:
        raise InputDataError(f"--out must end in .jsonl, .ndjson or .csv; got '{out.name}'", reason="invalid-input")
    total_chunks = args.stations * args.days
    progress = ProgressPrinter("generate")
    chunks = iter_crime_reports(np.random.default_rng(args.seed), stations=args.stations, days=args.days,
                                per_day=args.per_day, start=args.start)
    first = next(chunks)  # validates the arguments before any file is created
    with atomic_writer(out, newline="", option="--out") as fh:  # whole or not at all (stream/io/atomic.py)
        rows = _write(fh, fmt, itertools.chain([first], chunks), total_chunks, args, progress)
    print(f"wrote {rows} reports ({args.stations} station(s) x {args.days} day(s) x {args.per_day}) "
          f"to {out}")
    return 0


def _write(fh: IO[str], fmt: str, chunks: Iterator[CrimeChunk], total_chunks: int, args: argparse.Namespace,
           progress: ProgressPrinter) -> int:
    rows = 0
    for i, chunk in enumerate(chunks):
        frame = chunk.frame
        if fmt == "csv":
            frame.to_csv(fh, index=False, header=i == 0, lineterminator="\n")
        else:
            for rec in frame.to_dict(orient="records"):
                rec["age"] = int(rec["age"])
                fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
        rows += len(frame)
        progress((i + 1) / total_chunks, f"day {chunk.day + 1}/{args.days} station {chunk.station}: {rows} rows")
    return rows


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("generate", help="generate synthetic data sets", description=GENERATE_HELP,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    kinds = p.add_subparsers(dest="kind", metavar="KIND", required=True)
    c = kinds.add_parser("crime-reports", help="synthetic crime reports (JSON lines or CSV)",
                         description=GENERATE_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    c.add_argument("--stations", type=int, default=1, help="number of police stations (default 1: all suburbs)")
    c.add_argument("--days", type=int, default=1, help="number of days (default 1)")
    c.add_argument("--per-day", type=int, default=10_000, help="reports per station per day (default 10000)")
    c.add_argument("--start", default="2024-01-01", help="first day, YYYY-MM-DD (UTC; default 2024-01-01)")
    c.add_argument("--seed", type=int, default=0, help="random seed (same seed, same file; default 0)")
    c.add_argument("--out", required=True, help="output file: .jsonl / .ndjson (one JSON report per line) or .csv")
    c.set_defaults(func=cmd_crime_reports)
