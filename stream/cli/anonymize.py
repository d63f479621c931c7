"""Batch command: ``anonstream anonymize`` (CSV in, CSV out). Heavy imports stay inside the command."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from core.engines.registry import engine_names
from stream.batch import order as batch_history
from stream.cli import _exit_codes as exit_codes

if TYPE_CHECKING:
    import pandas as pd

    from core.encoding import Schema
    from core.engines.base import Release

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


def _has_bands(name: str) -> bool:
    from core.engines.registry import get_engine

    return "bands" in get_engine(name).Params.model_fields


def _value(text: str) -> object:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def cmd_anonymize(args: argparse.Namespace) -> int:
    import dataclasses

    import numpy as np

    from core.columns import build_codebook, typed_columns
    from core.encoding import encode
    from core.engines.nesting import utility_with_nesting
    from core.engines.registry import get_engine, make_params
    from core.engines.warmup import warm_up
    from core.errors import ParamsError
    from core.metrics.utility import utility_paragraph, utility_report
    from core.verify import verify_release
    from stream.batch.dates import batch_event_dates
    from stream.cli._paths import check_paths
    from stream.cli._progress import ProgressPrinter
    from stream.io.specs import load_schema
    from stream.io.tables import read_for_spec

    t0 = time.perf_counter()
    stages: dict[str, float] = {"startup_s": _process_age()}
    peaks: dict[str, float] = {"startup": _peak_mib()}
    schema = load_schema(args.spec)
    check_paths((args.input,), {"--out": args.out, "--report": args.report}, schema.spec.input.encoding)
    from stream.io.header import check_file_header  # a file of another spec: one line, before any row is read

    check_file_header(args.input, args.spec, schema.spec)
    frame = read_for_spec(args.input, schema.spec, schema)
    dropped = int(frame.attrs.get("dropped_missing", 0))
    engine = get_engine(args.engine)
    values: dict[str, object] = {}
    for item in args.param or []:
        name, _, raw = item.partition("=")
        values[name.strip().replace("-", "_")] = _value(raw)
    if args.bands is not None and "bands" in engine.Params.model_fields:  # as --param bands=...
        values.setdefault("bands", args.bands)
    elif args.bands == "free":  # full-domain engines (and local-recode) release hierarchy nodes only
        raise ParamsError(f"engine '{engine.name}' releases hierarchy nodes only (always nested); --bands free "
                          f"applies to {', '.join(n for n in engine_names() if _has_bands(n))}")
    params = make_params(engine, values, requirement=args)  # -k, -l, --max-suppression; --param wins
    history = batch_history.history_before(args, schema, frame)
    frame = batch_history.without_released(frame, history)
    batch = encode(frame, schema)
    stages["read_s"], peaks["read"] = time.perf_counter() - t0, _peak_mib()
    warm_s = warm_up(engine, batch, params)  # load or compile kernels before the engine's clock starts
    started = time.perf_counter()
    release = engine.anonymize(batch, params, np.random.default_rng(args.seed), ProgressPrinter(engine.name))
    runtime = time.perf_counter() - started
    n_rows = len(frame)
    del batch  # each stage frees what no later stage reads (docs/performance.md, "Memory")
    stages.update(warm_up_s=warm_s, engine_s=runtime)
    peaks["engine"] = _peak_mib()
    mark = time.perf_counter()
    report = verify_release(frame, release, schema)
    stages["verify_s"], mark = time.perf_counter() - mark, time.perf_counter()
    peaks["verify"] = _peak_mib()
    risk = batch_risk(schema, frame, release, args.threshold)
    single = single_offence(schema, release, params.l)  # k only: the classes that give away their offence
    # the published table: each QI label with its typed columns, as on the stream (docs/stream.md)
    dates, span = batch_event_dates(schema, frame, release)  # each class's event days, never a made-up date
    table = typed_columns(release.rows, schema, dates)
    release = dataclasses.replace(release, rows=table)  # the typed table holds the labels: drop the first copy
    utility = utility_with_nesting(utility_report(schema, frame, table), release)  # the data owner's full figures
    del frame  # the input is not needed any more
    codebook = build_codebook(schema, table, suppressed=len(release.suppressed), with_class_id=False,
                              context=list(dates), utility=utility_paragraph(utility))
    out_cols = list(table.columns)
    stages["report_s"], mark = time.perf_counter() - mark, time.perf_counter()
    peaks["report"] = _peak_mib()
    keys = [*schema.qi_names, *([schema.sensitive] if schema.sensitive else []), *schema.spec.passthrough]
    positions, order, ids = batch_history.publication(args, release, out_cols, history, keys)
    published = batch_history.published_rows(table, positions) if history is not None else None
    recorded = batch_history.record(args, history, release, report, published, out_cols)  # before --out
    del published
    if args.out:
        from stream.io.atomic import write_atomic
        from stream.io.csvout import write_csv
        from stream.wire.csvsafe import neutralize_frame

        raw = [c.strip() for c in (args.raw_columns or "").split(",") if c.strip()]
        write_atomic(args.out, lambda tmp: write_csv(table, tmp, ids, lambda distinct: neutralize_frame(distinct, raw),
                                                     positions), option="--out")  # whole or not at all
    summary = release.summary()
    summary["privacy"] = {**summary["privacy"], "risk": risk}
    summary.update(order)
    summary["codebook"] = codebook
    if dates:
        summary["event_time"] = {"first": span[0], "last": span[1]}  # days, as a stream manifest states them
    summary["utility"] = utility
    if single is not None:
        summary["single_offence_classes"] = single
    if recorded is not None:
        summary["ledger"] = recorded
    stages["write_s"], peaks["write"] = time.perf_counter() - mark, _peak_mib()
    total = time.perf_counter() - t0
    summary.update({"runtime_s": round(runtime, 4), "warm_up_s": round(warm_s, 4),
                    "total_s": round(total, 4), "stages": _stages(stages, total),
                    "peak_rss_mib": peaks,
                    "input": str(args.input), "rows": n_rows, "dropped_missing": dropped,
                    "verification": report.as_dict()})
    if args.report:
        from stream.io.atomic import write_text_atomic

        write_text_atomic(Path(args.report), json.dumps(summary, indent=2, default=_jsonable), option="--report")
    print(f"{engine.name}: released {release.released} rows, suppressed {len(release.suppressed)}, "
          f"k={report.k}" + (f", l={report.l_distinct}" if report.l_distinct is not None else "")
          + f", loss={release.metrics.get('loss_metric', float('nan')):.4f}, {runtime:.2f}s"
          + (f", {dropped} row(s) with missing values dropped" if dropped else "")
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
    return exit_codes.OK if report.ok else exit_codes.CHECK_FAILED


def single_offence(schema: Schema, release: Release, l_asked: int | None) -> dict[str, object] | None:
    """When no l >= 2 was asked: the released classes whose rows all share one sensitive value (their QI labels,
    rows and that value), for the report; None when l was asked, or there is no sensitive attribute or class."""
    if (l_asked is not None and l_asked > 1) or schema.sensitive is None or release.verification_mode == "k-regular":
        return None
    from core.verify.classes import single_value_classes

    found = single_value_classes(release.rows, schema.qi_names, schema.sensitive)
    listed = [{"labels": {q: r[q] for q in schema.qi_names}, "rows": int(r["rows"]), "value": r["value"]}
              for r in found.to_dict("records")]
    return {"sensitive": schema.sensitive, "classes": len(listed), "rows": int(found["rows"].sum()),
            "list": listed}


def batch_risk(schema: Schema, frame: pd.DataFrame, release: Release, threshold: float) -> dict[str, object]:
    """Risk profile of a batch release (the input file is taken as the whole population)."""
    if release.verification_mode == "k-regular":
        from stream.worker.risk import k_regular_risk

        return k_regular_risk(int(release.params.get("k", 1)), release.released, threshold)
    from core.risk import risk_profile

    spec = schema.spec
    return risk_profile(release.rows, schema.qi_names, original=frame, sensitive=schema.sensitive,
                        severity=spec.sensitive.severity if spec.sensitive else None, threshold=threshold).summary()


def _process_age() -> float:
    """Seconds since this process started (interpreter start-up and imports); 0.0 where unknown."""
    try:
        with open("/proc/self/stat") as fh:
            started = int(fh.read().rpartition(")")[2].split()[19])
        with open("/proc/uptime") as fh:
            now = float(fh.read().split()[0])
        import os

        return max(0.0, now - started / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return 0.0


def _peak_mib() -> float:
    """This process's peak resident memory so far, in MiB (the high-water mark after each stage)."""
    import resource

    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def _stages(stages: dict[str, float], total: float) -> dict[str, float]:
    """Where the process's time went (docs/performance.md): start-up before the command, then read
    (spec, file, input contract, encoding), warm-up, engine, verify, report (risk profile, typed
    columns, codebook) and write (publication order, --out, ledger); ``total_s`` excludes start-up."""
    out = {name: round(value, 4) for name, value in stages.items()}
    out["other_s"] = round(max(0.0, total - sum(v for k, v in stages.items() if k != "startup_s")), 4)
    out["process_s"] = round(stages["startup_s"] + total, 4)
    return out


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
                       description=ANONYMIZE_HELP.replace("{history}", batch_history.HELP),
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
    batch_history.add_arguments(p)
    p.set_defaults(func=cmd_anonymize)
