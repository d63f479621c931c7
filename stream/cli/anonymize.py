"""Batch command: ``anonstream anonymize`` (CSV in, CSV out). Heavy imports stay inside the command."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from core.engines.registry import engine_names
from stream.cli import _exit_codes as exit_codes

if TYPE_CHECKING:
    from core.encoding import Schema
    from core.engines.base import Engine
    from stream.batch.run import BatchResult
    from stream.batch.stages import StageClock

ANONYMIZE_HELP = """\
Anonymize a CSV, JSON-lines or Parquet file with one engine and verify the result independently.

The spec names identifiers (dropped), quasi-identifiers with their hierarchies, the sensitive
attribute and pass-through columns. Bundled specs: adult, adult-uci, nypd, crime.

Examples:
  anonstream anonymize ../shared/data/adult/adult.csv --spec adult --engine optimal -k 5 \\
      --max-suppression 0.04 --out adult-k5.csv --report adult-k5.json
  anonstream anonymize reports.csv --spec crime --engine mondrian -k 10 -l 3 --out out.csv

The output has each quasi-identifier's label followed by typed columns (age_lo/age_hi bounds,
suburb_level and suburb_region ..., a boolean 'suppressed') and, when the file has the spec's time
column, event_date_lo/event_date_hi: the first and last event day of the row's equivalence class (or
its date QI's period); the --report JSON carries the codebook
that explains every column (docs/stream.md, "Release columns") and the utility report: per QI level
and for the sensitive attribute the original and released counts and their distance, and the largest
cell error of the spec's two-way table (docs/risk.md, "Utility").

Extra engine parameters go in --param NAME=VALUE (see 'anonstream engines'), e.g. a bound on the
re-identification risk: --param max_risk=0.1 (every class >= 10 rows) or --param avg_risk=0.05;
engines that cannot guarantee them refuse. The report carries the release's risk profile
(privacy.risk, docs/risk.md).

Local-recoding engines (mondrian, cg-kanon, cg-diverse, kmember, lgreedy, ils) release nested bands:
each class's label is the smallest node of the spec's hierarchy covering it, so released bands never
overlap and counts per band add up. --bands free releases each class's own range instead. Full-domain
engines (optimal, kgen, ...) and local-recode always release nested hierarchy nodes.

{history}"""


HISTORY_HELP = """\
History: rows are written in a random order (canonical, then a private seeded permutation), never the
input's. With --ledger FILE|URL, reports already released (by the stream or an earlier run) are
excluded and counted, and the release is recorded; without it the CLI warns, because two separately
anonymized overlapping files can be intersected (docs/privacy.md):
  anonstream anonymize day2.csv --spec crime --engine kmember --ledger var/ledger.db --out day2-k5.csv
"""


def _history_arguments(p: argparse.ArgumentParser) -> None:
    """--ledger, --order-seed and --keep-order (docs/privacy.md)."""
    p.add_argument("--ledger", metavar="URL", help="remember releases: a SQLite file (created and migrated) or a "
                   "migrated PostgreSQL URL; reports it already released (same report id, or the same content "
                   "under any id: ANONSTREAM_LINK_GUARD) are excluded and counted, and this release is "
                   "recorded. Without it, separately anonymized overlapping files can be intersected")
    p.add_argument("--order-seed", type=int, default=None, help="seed of the published row order (default: a "
                   "private one: from the ledger's key with --ledger, else random; written to --report only)")
    p.add_argument("--keep-order", action="store_true", help="INTERNAL DIAGNOSTICS ONLY: write rows in input "
                   "order (tells anyone who knows the input order which released row is whose)")


def _has_bands(name: str) -> bool:
    from core.engines.registry import get_engine

    return "bands" in get_engine(name).Params.model_fields


def _value(text: str) -> object:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def cmd_anonymize(args: argparse.Namespace) -> int:
    """Parse the options, run :func:`stream.batch.run.anonymize_table` on the file, write and print the result."""
    from core.engines.registry import get_engine, make_params
    from stream.batch.run import BatchOptions, anonymize_table
    from stream.batch.stages import StageClock
    from stream.cli._paths import check_paths
    from stream.cli._progress import ProgressPrinter
    from stream.io.header import check_file_header
    from stream.io.specs import load_schema
    from stream.io.tables import read_for_spec

    clock = StageClock()
    schema = load_schema(args.spec)
    check_paths((args.input,), {"--out": args.out, "--report": args.report}, schema.spec.input.encoding)
    check_file_header(args.input, args.spec, schema.spec)  # a file of another spec: one line, before any row
    engine = get_engine(args.engine)
    params = make_params(engine, _engine_values(args, engine), requirement=_requirement(args))
    options = BatchOptions(source=Path(args.input).name, seed=args.seed, order_seed=args.order_seed,
                           keep_order=args.keep_order, threshold=args.threshold)
    result = anonymize_table(read_for_spec(args.input, schema.spec, schema), schema, engine, params, args.ledger,
                             options=options, progress=ProgressPrinter(engine.name), notify=_to_stderr, clock=clock)
    _write(args, result, clock)
    _print(args, schema, result)
    return exit_codes.OK if result.ok else exit_codes.CHECK_FAILED


def _requirement(args: argparse.Namespace) -> dict[str, object]:
    """The privacy options -k, -l and --max-suppression (None: the engine's default)."""
    return {"k": args.k, "l": args.l, "max_suppression": args.max_suppression}


def _engine_values(args: argparse.Namespace, engine: Engine) -> dict[str, object]:
    """--param NAME=VALUE (JSON values, else text) and --bands, as engine parameters."""
    from core.errors import ParamsError

    values: dict[str, object] = {}
    for item in args.param or []:
        name, _, raw = item.partition("=")
        values[name.strip().replace("-", "_")] = _value(raw)
    if args.bands is not None and "bands" in engine.Params.model_fields:  # as --param bands=...
        values.setdefault("bands", args.bands)
    elif args.bands == "free":  # full-domain engines (and local-recode) release hierarchy nodes only
        raise ParamsError(f"engine '{engine.name}' releases hierarchy nodes only (always nested); --bands free "
                          f"applies to {', '.join(n for n in engine_names() if _has_bands(n))}")
    return values


def _to_stderr(text: str) -> None:
    print(text, file=sys.stderr)


def _write(args: argparse.Namespace, result: BatchResult, clock: StageClock) -> None:
    """--out (whole or not at all), then the --report JSON with the run's timings and input facts."""
    if args.out:
        from stream.io.atomic import write_atomic
        from stream.io.csvout import write_csv
        from stream.io.csvsafe import neutralize_frame

        raw = [c.strip() for c in (args.raw_columns or "").split(",") if c.strip()]
        write_atomic(args.out, lambda tmp: write_csv(result.table, tmp, result.ids,
                                                     lambda distinct: neutralize_frame(distinct, raw),
                                                     result.positions), option="--out")
    summary = result.summary
    clock.lap("write")
    total = clock.total()
    summary.update({"runtime_s": round(result.runtime_s, 4), "warm_up_s": round(result.warm_up_s, 4),
                    "total_s": round(total, 4), "stages": clock.report(total), "peak_rss_mib": clock.peaks,
                    "input": str(args.input), "rows": result.rows, "dropped_missing": result.dropped,
                    "verification": result.report.as_dict()})
    if args.report:
        from stream.io.atomic import write_text_atomic

        write_text_atomic(Path(args.report), json.dumps(summary, indent=2, default=_jsonable), option="--report")


def _print(args: argparse.Namespace, schema: Schema, result: BatchResult) -> None:
    release, report, risk, single = result.release, result.report, result.risk, result.single
    print(f"{release.engine}: released {release.released} rows, suppressed {len(release.suppressed)}, "
          f"k={report.k}" + (f", l={report.l_distinct}" if report.l_distinct is not None else "")
          + f", loss={release.metrics.get('loss_metric', float('nan')):.4f}, {result.runtime_s:.2f}s"
          + (f", {result.dropped} row(s) with missing values dropped" if result.dropped else "")
          + ("" if report.ok else "  VERIFICATION FAILED: " + "; ".join(report.failures)))
    p = risk["prosecutor"]
    print(f"risk: prosecutor highest {p['highest']:.4f}, average {p['average']:.4f}, "
          f"{100 * p['records_at_risk']:.2f}% of records above {args.threshold:g}")
    for warning in risk.get("warnings") or []:
        print(f"warning: {warning}")
    if single and single["classes"]:
        print(f"warning: {single['classes']} class(es) ({single['rows']} rows) hold a single value of "
              f"'{schema.sensitive}': whoever knows a person's {', '.join(schema.qi_names)} learns it. No l was "
              "asked; -l 2 (or --engine cg-diverse) releases none (listed in the report's single_offence_classes)",
              file=sys.stderr)


def _jsonable(obj: object) -> object:
    if hasattr(obj, "tolist"):
        return obj.tolist()
    if hasattr(obj, "item"):
        return obj.item()
    if hasattr(obj, "to_dict"):
        return obj.to_dict(orient="records")
    return str(obj)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("anonymize", help="anonymize a CSV, JSON-lines or Parquet file with one engine",
                       description=ANONYMIZE_HELP.replace("{history}", HISTORY_HELP),
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("input", help="input file: CSV, JSON lines (.jsonl) or Parquet (.parquet)")
    p.add_argument("--spec", required=True, help="spec file or bundled spec name")
    p.add_argument("--engine", default="optimal", help=f"one of: {', '.join(engine_names())}")
    p.add_argument("-k", type=int, default=None, help="minimum class size (default: the engine's, 5)")
    p.add_argument("-l", type=int, default=None, help="distinct l-diversity of the sensitive attribute")
    p.add_argument("--max-suppression", type=float, default=None,
                   help="fraction of rows that may be suppressed (default: the engine's, see 'anonstream engines')")
    p.add_argument("--param", action="append", metavar="NAME=VALUE", help="extra engine parameter (repeatable)")
    p.add_argument("--bands", choices=("nested", "free"), default=None,
                   help="local-recoding engines: nested (default) releases hierarchy nodes that never overlap, "
                   "so counts per band add up; free releases each class's own range (less loss, overlapping "
                   "bands); see docs/stream.md 'Nested bands'")
    p.add_argument("--seed", type=int, default=0, help="random seed (engines are deterministic per seed)")
    p.add_argument("--out", help="write the anonymized rows here (CSV; text cells starting with = + - @ are "
                   "prefixed with ' so spreadsheets never run them as formulas; numbers are unchanged)")
    p.add_argument("--raw-columns", help="comma-separated text columns written without that prefix")
    p.add_argument("--report", help="write levels, metrics, risk profile, solution, runtime and the codebook of the "
                   "output columns here (JSON)")
    from core.risk.reidentification import DEFAULT_THRESHOLD

    p.add_argument("--threshold", type=float, default=DEFAULT_THRESHOLD,
                   help=f"prosecutor risk above which a record counts as at risk (default {DEFAULT_THRESHOLD})")
    _history_arguments(p)
    p.set_defaults(func=cmd_anonymize)
