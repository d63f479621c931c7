"""``anonstream spec draft`` and ``anonstream spec check``: bring your own data."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

SPEC_HELP = """\
Write a spec for your own export, then check your data against it.

  anonstream spec draft arrests.csv --out arrests.toml     # review the comments, edit if needed
  anonstream spec check arrests.csv --spec arrests.toml -k 5 --engine cg-kanon
  anonstream anonymize arrests.csv --spec arrests.toml --engine cg-kanon -k 5 --out released.csv
"""

DRAFT_HELP = """\
Read a CSV, JSON-lines or Parquet sample and write a spec a person can review: direct identifiers
(by name and by near-uniqueness), quasi-identifiers with their type and hierarchy (numbers ->
nested bands from the range and quartiles, dates and date-times -> day -> month -> year with a
declared format that reads every value, US states -> Census division -> region, postal codes ->
masking, precinct or beat numbers -> blocks of consecutive codes, categories -> a taxonomy when
another column groups them, else rare values grouped, then *), the sensitive attribute found by
name or by content (the offence, charge or outcome of the event) with a severity table (derived
from a felony/misdemeanour or Part 1/Part 2 column when there is one, else a default ranking to
review), the stream keys (never routing by a sensitive or outcome column; id_scope = "global" for a key
unique in the file; a station_map when station names are not station ids), and every other column
withheld (outcome-like columns: charges, dispositions, recidivism, arrest type, juvenile flags are
never QIs; nothing is a pass-through unless --passthrough names it). The spec opens with a table of
every column's fate and the one-line reason, and names the engine it runs with as drafted (cg-diverse
-l 2 with a severity table, else mondrian). docs/spec.md lists the rules.

The draft is checked on the same rows before it is written, as `spec check` would check it; what
the check refuses is repaired and listed at the top of the spec (or nothing is written: exit 2).
So the draft is usable as is: anonymize the same file with it, no edits needed (the CG engines also
need a sensitive attribute: the draft says when it found none).

Example:
  anonstream spec draft ../shared/data/nypd-arrests-queens-2021/nypd_arrests_queens_2021.csv --out nypd.toml
"""

CHECK_HELP = """\
Check a file against a spec before anything runs, with one summary table: per column, missing
values, values that do not parse (numbers, whole numbers, dates in the declared format, ambiguous
dates), values outside the hierarchy and unknown offences (with examples); identifiers that would
be released; and a feasibility estimate: rows the optimal engine suppresses at the requested k.
First, every column of the file with its fate under the spec and why. With --engine, also what that
engine needs of the spec and the spec lacks (cg-kanon and cg-diverse: a sensitive attribute with a
severity table); then that engine (else the one a drafted spec names) runs on 300 sampled rows and
the check says whether it releases. Every row also goes through push's own checks (station ids,
times, duplicate ids, every intake rule; --station as push takes it), so what the check passes, push
accepts.

Exit 0 when the data fits the spec, 1 when it does not, 2 on bad usage.

Example:
  anonstream spec check arrests.csv --spec nypd.toml -k 5 --max-suppression 0.05 --engine cg-kanon
"""


def _check_defaults(args: argparse.Namespace) -> tuple[int, float]:
    """k and the suppression limit of a check: the options, else the stream's defaults."""
    from stream.config.privacy import StreamPrivacy

    k = StreamPrivacy.default_of("k") if getattr(args, "k", None) is None else args.k
    limit = getattr(args, "max_suppression", None)
    return k, StreamPrivacy.default_of("max_suppression") if limit is None else limit


def cmd_draft(args: argparse.Namespace) -> int:
    import pandas as pd

    from core.errors import SpecError
    from stream.cli._paths import check_output, check_paths
    from stream.io.atomic import is_stdout, write_text_atomic
    from stream.io.tables import read_table
    from stream.specdraft.draft import make_draft
    from stream.specdraft.fit import fit

    check_paths((args.input,))
    check_output("--out", args.out, stdout_ok=True)  # "-": print it
    columns, headerless = _columns(args)
    frame = read_table(args.input, columns=columns)
    sampled = args.sample is not None and len(frame) > args.sample
    if sampled:
        frame = frame.iloc[: args.sample]
    name = args.name or Path(args.input).stem
    draft = make_draft(frame.astype(object).where(frame.notna(), pd.NA), name, max_qi=args.max_qi,
                       passthrough=tuple(args.passthrough or ()))
    draft.input_columns = columns
    if headerless:
        draft.review.insert(0, f"The file has no header row ({headerless}): its columns are named column_1 ... "
                               f"column_{len(columns or ())} in [input] columns. Name them: draft again with "
                               "--columns NAME,NAME,... (the roles then follow the names), or add a header row.")
    if not draft.role("qi"):
        raise SpecError("no quasi-identifier found by name or type; write the [[qi]] entries by hand (docs/spec.md)")
    k, max_suppression = _check_defaults(args)
    text = fit(draft, frame, Path(args.input).name, sampled, k, max_suppression)  # spec check on the same rows
    if args.out and not is_stdout(args.out):
        out = Path(args.out)
        write_text_atomic(out, text, option="--out")
        roles = {r: len(draft.role(r)) for r in ("identifier", "qi", "sensitive", "passthrough", "withheld")}
        print(f"spec draft: wrote {out}: " + ", ".join(f"{n} {r}" for r, n in roles.items())
              + f"; engine {draft.engine}; spec check on the {len(frame)} drafted rows: "
              + ("fits for anonymize, but push would reject rows (said at the top)" if draft.push_notes else "fits")
              + (f" after {len(draft.notes)} change(s) listed at the top" if draft.notes else ""))
        print(f"spec draft: as drafted: anonstream anonymize {args.input} --spec {out} --engine {draft.engine} "
              f"{draft.engine_args}")
        if not draft.role("sensitive"):
            print("spec draft: no sensitive attribute found: cg-kanon and cg-diverse need one "
                  "(see the spec's comments)")
    else:
        sys.stdout.write(text)
    return 0


def _columns(args: argparse.Namespace) -> tuple[tuple[str, ...] | None, str]:
    """The column names of a file without a header row: ``--columns``, else ``column_1`` ... when its first
    row reads as data (and why), else None (the first row is the header)."""
    from core.errors import InputDataError, ParamsError
    from stream.specdraft.headerless import first_row_is_data, generic_names, title_line

    if said := title_line(args.input):
        raise InputDataError(said, reason="invalid-input")

    if args.columns:
        names = tuple(n.strip() for n in args.columns.split(","))
        if not all(names) or len(set(names)) < len(names):
            raise ParamsError(f"--columns: {args.columns!r} must name each column once, separated by commas",
                              reason="invalid-option")
        cells = len(generic_names(args.input))
        if len(names) != cells:
            raise ParamsError(f"--columns names {len(names)} column(s); the file's rows have {cells}",
                              reason="invalid-option")
        return names, ""
    why = first_row_is_data(args.input)
    return (generic_names(args.input), why) if why else (None, "")


def cmd_check(args: argparse.Namespace) -> int:
    from core.errors import InputDataError
    from stream.cli._paths import check_paths
    from stream.io.header import check_file_header
    from stream.io.rows import rows_for_spec
    from stream.io.specs import load_schema, resolve_spec_path
    from stream.io.tables import read_table
    from stream.specdraft.check import check_frame
    from stream.specdraft.engine import drafted_engine
    from stream.specdraft.fates import table

    if args.engine is not None:
        from core.engines.registry import get_engine

        get_engine(args.engine)  # an unknown engine is bad usage, before any work
    schema = load_schema(args.spec)
    fmt = schema.spec.input
    check_paths((args.input,), encoding=fmt.encoding)
    text = resolve_spec_path(args.spec).read_text(encoding="utf-8")
    engine = args.engine or drafted_engine(text)
    frame = read_table(args.input, fmt.separator, fmt.columns, fmt.encoding)
    k, max_suppression = _check_defaults(args)  # the stream's defaults
    station = args.station
    report = check_frame(frame, schema, k, max_suppression, engine, rows_for_spec(args.input, fmt), station)
    try:  # a file of another spec: the spec it looks like
        check_file_header(args.input, args.spec, schema.spec)
    except InputDataError as exc:
        report.issues[:] = [i for i in report.issues if i.kind != "absent"]
        report.add("absent", exc.message)
    fates = table(schema.spec, list(frame.columns), text)
    width = min(max((len(c) for c, _, _ in fates), default=6), 28)
    print(f"{'column':<{width}} {'fate':<11} why")
    for name, fate, why in fates:
        print(f"{name[:width]:<{width}} {fate:<11} {why}")
    print()
    head = (f"{'column':<24} {'role':<11} {'type':<11} {'missing':>8} {'unparseable':>11} {'outside':>8}  "
            "examples / note")
    print(head)
    print("-" * len(head))
    for c in report.columns:
        extra = ", ".join(c.examples) + ("; " if c.examples and c.note else "") + c.note
        print(f"{c.name[:24]:<24} {c.role:<11} {c.kind:<11} {c.missing:>8} {c.unparseable:>11} {c.outside:>8}  {extra}")
    print("-" * len(head))
    print(f"{report.rows} rows; {report.bad_rows} with a value the spec refuses; missing values: "
          f"on_missing = {fmt.missing_policy}" + (f" ({report.dropped_missing} rows dropped)"
                                                  if report.dropped_missing else ""))
    print(f"feasibility: {report.feasibility}")
    if report.intake is not None and not report.intake.skipped:
        print(f"push: {report.intake.accepted} of {report.intake.checked} rows pass push's checks"
              + (f" (--station {station})" if station else ""))
    if report.trial is not None:
        print(f"engine: {report.trial.text}")
    for line in report.warnings:
        print(f"warning: {line}")
    if report.fits:
        print("spec check: the data fits the spec")
        return 0
    print("spec check: the data does not fit the spec:")
    for p in report.problems:
        print(f"  - {p}")
    return 1


def register(sub: argparse._SubParsersAction) -> None:
    fmt = argparse.RawDescriptionHelpFormatter
    s = sub.add_parser("spec", help="draft a spec from your own file, check a file against a spec",
                       description=SPEC_HELP, formatter_class=fmt)
    ssub = s.add_subparsers(dest="spec_command", metavar="SUBCOMMAND")
    d = ssub.add_parser("draft", help="write a reviewable spec from a CSV/JSONL/Parquet sample",
                        description=DRAFT_HELP, formatter_class=fmt)
    d.add_argument("input", help="sample file (.csv with a header row, .jsonl or .parquet)")
    d.add_argument("--out", help="write the spec here (default, or -: print it)")
    d.add_argument("--name", help="dataset name (default: the file name)")
    d.add_argument("--max-qi", type=int, default=8, help="propose at most this many quasi-identifiers (default 8)")
    d.add_argument("--sample", type=int, default=None, help="use only the first N rows")
    d.add_argument("--columns", metavar="NAME,NAME,...",
                   help="the column names of a file without a header row (one found is drafted as column_1 ...)")
    d.add_argument("--passthrough", action="append", metavar="COLUMN",
                   help="release this column unchanged (repeatable); nothing else is ever drafted as pass-through")
    d.set_defaults(func=cmd_draft)
    c = ssub.add_parser("check", help="check a file against a spec (exit 0 fits, 1 does not)",
                        description=CHECK_HELP, formatter_class=fmt)
    c.add_argument("input", help="data file (.csv, .jsonl or .parquet)")
    c.add_argument("--spec", required=True, help="spec file or bundled spec name")
    c.add_argument("-k", type=int, default=None, help="k for the feasibility estimate (default: the stream's, 5)")
    c.add_argument("--max-suppression", type=float, default=None,
                   help="suppression limit for the feasibility estimate (default: the stream's, 0.05)")
    c.add_argument("--engine", default=None,
                   help="the engine to check and run on a sample (default: the one a drafted spec names)")
    c.add_argument("--station", help="station id, as push --station fills or checks the station column")
    c.set_defaults(func=cmd_check)
    s.set_defaults(func=lambda args: (s.print_help(), 2)[1])
