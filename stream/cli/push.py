"""Station commands: ``anonstream push`` (``anonstream consume`` is :mod:`stream.cli.consume`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from stream.config.settings import load_settings
from stream.ops.runtime import broker_settings

PUSH_HELP = """\
Validate a station's reports locally and push the valid ones to the reports topic.

The file (CSV, JSON lines or Parquet) is read, checked and sent in chunks, so memory stays flat
whatever its size. Rejected rows are not sent; each is listed with its line as your editor shows
it (the header is line 1), the reason, the bad value and the closest allowed value ("theft": did
you mean 'Theft'?). A report id repeated within the file is rejected on its second line. With
--rejects, every rejected row is written as it was, after reject_line/reject_reason/reject_message
columns: fix the values and push that file again (the reject_ columns are ignored). The values
stay on this machine: the service's dead-letter topic never sees them.

A push is a batch: push marks where each station's batch begins and ends, so rows may come in any
order; the worker closes the station's windows when its batch is complete, releases the windows the
batch completed together, and keeps a window below min_release_rows pending for the next push (or
`anonstream windows flush`).

On a machine that holds the service's ledger and fingerprint key (the worker's own machine, or with
ANONSTREAM_DATABASE_URL and ANONSTREAM_FINGERPRINT_KEY set), push also says how many of its reports
the ledger already knows: duplicates, corrections that replace a still-pending report, and corrections
of released reports (counted, never released again). Counts only; no report id is printed.

Exit 1 if anything was rejected, 0 if everything was sent, 2 on bad usage.

Examples:
  anonstream push reports-2024-03-01.csv --station S1 --broker kafka://127.0.0.1:9092
  anonstream push reports.csv --station S1 --rejects rejects.csv   # fix rejects.csv, then:
  anonstream push rejects.csv --station S1
  anonstream push arrests.csv --feed arrests --pipelines feeds.toml   # a deployment with several feeds
"""

def _progress(label: str) -> Any:
    from stream.cli._progress import ProgressPrinter

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
    from stream.ops.locate import check_broker
    from stream.station.batch import BatchProducer
    from stream.station.producer import make_producer, push_reports

    settings = load_settings(broker_url=args.broker, spec=args.spec, pipelines=args.pipelines)
    if settings.pipelines is not None or args.feed:  # the feed's input topic and spec (stream/config/feeds.py), checked
        from stream.config.feeds import feed_named  # before anything else: a bad pipelines file is the error

        settings = feed_named(settings, args.feed)
    settings = broker_settings(settings, check=False)
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
    from stream.station.preview import LedgerPreview

    ledger = LedgerPreview.open(settings)
    producer = BatchProducer(make_producer(settings.bootstrap_servers()), args.topic or settings.topic_reports)
    try:
        result = push_reports(iter_rows(args.input), schema, producer,
                              args.topic or settings.topic_reports, args.station,
                              progress=_progress(f"push {Path(args.input).name}"), total=total,
                              rejects=sink, keep=max(args.show, 0), repeated=repeated, inspect=ledger)
        producer.end_batch()  # where each station's batch ends: the worker closes its windows then
    finally:
        producer.close()
        if sink is not None:
            sink.close()
        if ledger is not None:
            ledger.close()
    print(f"push: sent {result.sent} report(s), rejected {result.rejected_count}")
    if ledger is not None:
        print(ledger.summary())
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


def _quiet(args: argparse.Namespace) -> None:
    from stream.ops.runtime import quiet_clients

    quiet_clients(getattr(args, "verbose", False))


def register(sub: argparse._SubParsersAction) -> None:
    fmt = argparse.RawDescriptionHelpFormatter
    p = sub.add_parser("push", help="validate a station's CSV/JSONL reports and push them",
                       description=PUSH_HELP, formatter_class=fmt)
    p.add_argument("input", help="reports as .csv or .jsonl")
    p.add_argument("--station", help="station id (fills or must match the station column); omit it when each "
                                     "row names its station (a multi-station export)")
    p.add_argument("--broker", help="kafka://host:port (default: ANONSTREAM_BROKER_URL)")
    p.add_argument("--spec", help="dataset spec (default: crime; with --feed: the feed's)")
    p.add_argument("--topic", help="reports topic (default: crime.reports; with --feed: the feed's input topic)")
    p.add_argument("--feed", help="push to this feed of a several-feed deployment: its input topic, validated "
                   "with its spec (feeds come from --pipelines or ANONSTREAM_PIPELINES)")
    p.add_argument("--pipelines", metavar="FILE", help="the deployment's pipelines TOML (default: "
                   "ANONSTREAM_PIPELINES)")
    p.add_argument("--show", type=int, default=20, help="rejected rows to list (default 20)")
    p.add_argument("--rejects", metavar="FILE", help="write every rejected row with its reason here (.csv or .jsonl)")
    p.set_defaults(func=cmd_push)
