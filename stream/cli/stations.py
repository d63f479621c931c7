"""Station and analyst commands: ``anonstream push`` and ``anonstream consume``."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from stream.runtime import broker_settings
from stream.settings import load_settings

PUSH_HELP = """\
Validate a station's reports locally and push the valid ones to the reports topic.

The file (CSV, JSON lines or Parquet) is read, checked and sent in chunks, so memory stays flat
whatever its size. Rejected rows are not sent; each is listed with its line as your editor shows
it (the header is line 1), the reason, the bad value and the closest allowed value ("theft": did
you mean 'Theft'?). A report id repeated within the file is rejected on its second line. With
--rejects, every rejected row is written as it was, after reject_line/reject_reason/reject_message
columns: fix the values and push that file again (the reject_ columns are ignored). The values
stay on this machine: the service's dead-letter topic never sees them.

Exit 1 if anything was rejected, 0 if everything was sent, 2 on bad usage.

Examples:
  anonstream push reports-2024-03-01.csv --station S1 --broker kafka://127.0.0.1:9092
  anonstream push reports.csv --station S1 --rejects rejects.csv   # fix rejects.csv, then:
  anonstream push rejects.csv --station S1
"""

CONSUME_HELP = """\
Follow the releases and anonymized topics and write each COMPLETE, SIGNED release (manifest signature
verifies with the service's public key, record count and checksum match) as OUT/<release id>.csv
plus its manifest; duplicates are skipped. Unsigned, forged or altered manifests, ids that are not
plain names and messages that are not JSON are refused with a logged reason, and consuming goes on.

Text cells starting with = + - @ (or a tab / carriage return) are written with a leading ' so a
spreadsheet never runs them as formulas; numbers are unchanged, --raw-columns exempts text columns.

The public key comes from the service's operator (`anonstream keys public`); on the worker's own
machine (embedded mode) it is read from its data folder.

Example:
  anonstream consume --broker kafka://127.0.0.1:9092 --public-key 3b6a27bc... --out releases/ --idle 30
"""


def _progress(label: str) -> Any:
    from stream.cli.progress import ProgressPrinter

    printer = ProgressPrinter(label)

    def show(done: int, total: int) -> None:
        printer(done / total if total else 0.0, f"{done}/{total} rows")

    return show


def cmd_push(args: argparse.Namespace) -> int:
    _quiet(args)
    from stream.io.dupes import repeated_ids
    from stream.io.rejects import Hints, RejectsWriter, describe
    from stream.io.rows import csv_header, iter_rows
    from stream.io.specs import load_schema
    from stream.locate import check_broker
    from stream.producer import make_producer, push_reports

    settings = broker_settings(load_settings(broker_url=args.broker, spec=args.spec), check=False)
    schema = load_schema(settings.spec)
    spec = schema.spec
    seen = [0]

    def counted() -> Any:
        for item in iter_rows(args.input):
            seen[0] += 1
            yield item

    # a first pass, before anything is sent: repeated report ids (and a malformed JSON line stops here)
    repeated = repeated_ids(counted(), spec.id_column or "report_id", spec.station_column or "station_id",
                            args.station)
    total = seen[0]
    if total == 0:
        from core.errors import InputDataError

        raise InputDataError(f"input is empty: {args.input} has no rows", reason="empty-input")
    header = csv_header(args.input)[0] if Path(args.input).suffix not in {".jsonl", ".ndjson", ".parquet",
                                                                          ".pq"} else None
    sink = RejectsWriter(args.rejects, header) if args.rejects else None
    check_broker(settings)  # after the input: a bad file is an input error (2) even with the broker down
    producer = make_producer(settings.bootstrap_servers())
    try:
        result = push_reports(iter_rows(args.input), schema, producer,
                              args.topic or settings.topic_reports, args.station,
                              progress=_progress(f"push {Path(args.input).name}"), total=total,
                              rejects=sink, keep=max(args.show, 0), repeated=repeated)
    finally:
        producer.close()
        if sink is not None:
            sink.close()
    print(f"push: sent {result.sent} report(s), rejected {result.rejected_count}")
    if result.rejected_count:
        for reason, n in sorted(result.reasons().items()):
            print(f"  {n:6d} x {reason}")
        hints = Hints(schema)
        for rejection in result.rejected[: args.show]:
            print(f"  {describe(rejection, hints)}", file=sys.stderr)
        if result.rejected_count > args.show:
            print(f"  ... and {result.rejected_count - args.show} more", file=sys.stderr)
        if sink is not None:
            print(f"  rejected rows written to {args.rejects}: fix them and push that file again")
        return 1
    return 0


def cmd_consume(args: argparse.Namespace) -> int:
    _quiet(args)
    from stream.consumer import follow_releases, write_release_csv
    from stream.settings import secret_value
    from stream.signing import consumer_public_key

    settings = broker_settings(load_settings(broker_url=args.broker))
    public_key = consumer_public_key(args.public_key or settings.release_public_key,
                                     secret_value(settings.signing_key), settings.data_dir)
    raw_columns = tuple(c.strip() for c in (args.raw_columns or "").split(",") if c.strip())
    out = Path(args.out)
    written: list[str] = []
    started = time.monotonic()

    def on_release(manifest: dict[str, Any], records: list[dict[str, Any]]) -> None:
        path = write_release_csv(out, manifest, records, raw_columns)
        if path is None:
            print(f"skip {manifest['release_id']} (already written)", flush=True)
            return
        written.append(manifest["release_id"])
        print(f"release {manifest['release_id']}: {len(records)} records -> {path}", flush=True)

    def stop() -> bool:
        return (args.max_releases is not None and len(written) >= args.max_releases) or (
            args.timeout is not None and time.monotonic() - started > args.timeout)

    asm = follow_releases(settings.bootstrap_servers(), settings.topic_releases, settings.topic_anonymized,
                          on_release, stop, idle_s=args.idle, public_key=public_key)
    print(f"consume: {len(written)} release(s) written to {out}; skipped {asm.duplicate_records} duplicate "
          f"record(s) and {asm.duplicate_manifests} duplicate manifest(s)")
    for reason, n in sorted(asm.refused.items()):
        print(f"  refused {n} message(s): {reason}")
    return 0


def _quiet(args: argparse.Namespace) -> None:
    from stream.runtime import quiet_clients

    quiet_clients(getattr(args, "verbose", False))


def register(sub: argparse._SubParsersAction) -> None:
    fmt = argparse.RawDescriptionHelpFormatter
    p = sub.add_parser("push", help="validate a station's CSV/JSONL reports and push them",
                       description=PUSH_HELP, formatter_class=fmt)
    p.add_argument("input", help="reports as .csv or .jsonl")
    p.add_argument("--station", help="station id (fills or must match the station column); omit it when each "
                                     "row names its station (a multi-station export)")
    p.add_argument("--broker", help="kafka://host:port (default: ANONSTREAM_BROKER_URL)")
    p.add_argument("--spec", help="dataset spec (default: crime)")
    p.add_argument("--topic", help="reports topic (default: crime.reports)")
    p.add_argument("--show", type=int, default=20, help="rejected rows to list (default 20)")
    p.add_argument("--rejects", metavar="FILE", help="write every rejected row with its reason here (.csv or .jsonl)")
    p.set_defaults(func=cmd_push)

    c = sub.add_parser("consume", help="write each complete release as CSV (analysts' example)",
                       description=CONSUME_HELP, formatter_class=fmt)
    c.add_argument("--broker", help="kafka://host:port (default: ANONSTREAM_BROKER_URL)")
    c.add_argument("--out", default="releases", help="output folder (default ./releases)")
    c.add_argument("--idle", type=float, default=None, help="stop after this many seconds without messages")
    c.add_argument("--timeout", type=float, default=None, help="stop after this many seconds")
    c.add_argument("--max-releases", type=int, default=None, help="stop after writing this many releases")
    c.add_argument("--public-key", help="the service's Ed25519 public key, 64 hex digits or @file "
                   "(default: ANONSTREAM_RELEASE_PUBLIC_KEY, else the local worker's key)")
    c.add_argument("--raw-columns", help="comma-separated text columns written as they are (no formula "
                   "neutralization), e.g. signed numbers stored as text")
    c.set_defaults(func=cmd_consume)
