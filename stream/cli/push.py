"""Station commands: ``anonstream push`` (``anonstream consume`` is :mod:`stream.cli.consume`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from stream.config.settings import load_settings
from stream.ops.runtime import broker_settings

PUSH_HELP = """\
Validate a station's reports locally, push the valid ones to the reports topic, and wait for the
worker's receipt.

The file (CSV, JSON lines or Parquet) is read, checked and sent in chunks, so memory stays flat
whatever its size. Rejected rows are not sent; each is listed with its line as your editor shows
it (the header is line 1), the reason, the bad value and the closest allowed value ("theft": did
you mean 'Theft'?). A report id repeated within the file is rejected on its second line (per
station; across stations when the spec says ids are department-wide: id_scope = "global"). With
--rejects, every rejected row is written as it was, after reject_line/reject_reason/reject_message/
reject_hint columns: fix the values and push that file again (the reject_ columns are ignored).
The rejects file holds identifiers: it is created 0600 (in the input's text encoding), its first
column's header says so, and cells a spreadsheet would run as formulas (=, +, -, @) are written
with a leading quote (push removes it when the file is pushed again). The values stay on this
machine: the service's dead-letter topic never sees them.

Before sending, push reads which workers serve the topic (they advertise their feed and spec
version on <topic>.workers): a worker running another spec (or, with --feed, another feed) stops
the push with one error line, nothing sent. No worker advertising in the last minute is a warning:
the reports wait in the topic, and there is no receipt to wait for.

The receipt: the worker confirms every report it has in its ledger or dead-lettered, on
<topic>.receipts (counts and reasons only). push waits until each report has a verdict, giving up
after --wait SECONDS (default 60) without a new one, or 10 s after the broker became unreachable,
and prints how many were accepted, dead-lettered (by reason) and not ingested. With the ledger at
hand (below), reports whose receipts were lost (a broker that died) are looked up in the ledger, so
the figures are exact. Pushing the same file again is idempotent: the ledger keeps one copy of each
report, by its keyed fingerprint, so the reports it already holds count as duplicates, never twice.
--no-wait skips the receipt.

A push is a batch: push marks where each station's batch begins and ends, so rows may come in any
order; the worker closes the station's windows when its batch is complete, releases the windows the
batch completed together, and keeps a window below min_release_rows pending for the next push (or
`anonstream windows flush`).

Station ids and report ids are compared in one canonical form: surrounding spaces are dropped and an
id of digits only is its number, so `08`, ` 8` and `8` are station 8 (one pool, one window series, one
privacy budget), and report `0042` is report `42`. A file that writes one station in several ways
gets a warning line naming the spellings; nothing is refused for it.

On a machine that holds the service's ledger and fingerprint key (the worker's own machine, or with
ANONSTREAM_DATABASE_URL and ANONSTREAM_FINGERPRINT_KEY set), push also says how many of its reports
the ledger already knows: duplicates, corrections that replace a still-pending report, and corrections
of released reports (counted, never released again). Counts only; no report id is printed.

Exit 1 if anything was rejected, dead-lettered or not ingested, 0 if every report was accepted (or
sent, without a receipt), 2 on bad usage or a worker of another spec, 3 if the broker is unreachable
before anything is sent.

Examples:
  anonstream push reports-2024-03-01.csv --station S1 --broker kafka://127.0.0.1:9092
  anonstream push reports.csv --station S1 --rejects rejects.csv   # fix rejects.csv, then:
  anonstream push rejects.csv --station S1
  anonstream push arrests.csv --feed arrests --pipelines feeds.toml   # a deployment with several feeds
"""

MAX_SPELLINGS = 100_000  # distinct station-column values push remembers to name ids that are one station

# push's producer gives up on a broker that stopped answering after 20 s (the defaults wait minutes)
PUSH_TIMEOUTS = {"request_timeout_ms": 15_000, "delivery_timeout_ms": 20_000, "max_block_ms": 20_000}


def _progress(label: str, what: str = "rows") -> Any:
    from stream.cli._progress import ProgressPrinter

    printer = ProgressPrinter(label)
    last = [-1, 0.0]  # the count last shown, and when

    def show(done: int, total: int) -> None:
        import time

        if done == last[0] and time.monotonic() - last[1] < 10.0:  # no news: a line every 10 s at most
            return
        last[:] = [done, time.monotonic()]
        printer(done / total if total else 0.0, f"{done}/{total} {what}")

    return show


def cmd_push(args: argparse.Namespace) -> int:
    _quiet(args)
    from core.canonical import collision_lines, id_collisions, station_id
    from stream.cli._paths import check_paths
    from stream.io.dupes import repeated_ids
    from stream.io.rejects import Hints, RejectsWriter
    from stream.io.rows import csv_header, rows_for_spec
    from stream.io.specs import load_schema
    from stream.io.text import BINARY_SUFFIXES, text_encoding
    from stream.ops.kafka_clients import make_producer
    from stream.ops.locate import check_broker
    from stream.station.batch import BatchProducer
    from stream.station.producer import push_reports

    if args.wait < 0:
        from core.errors import ParamsError

        raise ParamsError(f"--wait must be 0 or more seconds, got {args.wait:g}", reason="invalid-option")
    settings = load_settings(broker_url=args.broker, spec=args.spec, pipelines=args.pipelines)
    if settings.pipelines is not None or args.feed:  # the feed's input topic and spec (stream/config/feeds.py), checked
        from stream.config.feeds import feed_named  # before anything else: a bad pipelines file is the error

        settings = feed_named(settings, args.feed)
    settings = broker_settings(settings, check=False)
    schema = load_schema(settings.spec)
    spec = schema.spec
    check_paths((args.input,), {"--rejects": args.rejects}, spec.input.encoding)
    from stream.io.header import check_file_header  # a file of another spec: one line, nothing sent

    check_file_header(args.input, settings.spec, spec, stream=True, station_given=args.station is not None)
    # the text encoding (said when not UTF-8); the rejects file is written in it, so it is pushed back alike
    codec = "utf-8" if Path(args.input).suffix.lower() in BINARY_SUFFIXES else text_encoding(
        args.input, spec.input.encoding)
    seen = [0]
    station_col = spec.station_column or "station_id"
    # station ids as the file (and --station) write them, to name those that are one station
    spellings: set[str] = {args.station} if args.station is not None else set()
    if args.station is not None:  # `--station 08` is station 8, as the worker keys it
        args.station = station_id(args.station)

    def counted() -> Any:
        for item in rows_for_spec(args.input, spec.input):
            seen[0] += 1
            given = item[1].get(station_col)
            if given is not None and len(spellings) < MAX_SPELLINGS:
                spellings.add(str(given))
            yield item

    # a first pass, before anything is sent: repeated report ids (and a malformed JSON line stops here)
    areas = {str(k).strip(): v for k, v in spec.station_map.items()}  # an area name keys its mapped station
    repeated = repeated_ids(counted(), spec.id_column or "report_id", station_col, args.station,
                            global_ids=spec.id_scope == "global", station_map=areas)
    total = seen[0]
    for line in collision_lines("station", id_collisions(spellings)):
        print(f"push: warning: {line}", file=sys.stderr)
    if total == 0:
        from core.errors import InputDataError

        raise InputDataError(f"input is empty: {args.input} has no rows", reason="empty-input")
    fmt = spec.input
    header = csv_header(args.input, fmt.separator, fmt.encoding, fmt.columns)[0] if Path(args.input).suffix not in {
        ".jsonl", ".ndjson", ".parquet", ".pq"} else None
    sink = RejectsWriter(args.rejects, header, Hints(schema), codec) if args.rejects else None
    check_broker(settings)  # after the input: a bad file is an input error (2) even with the broker down
    from stream.station.preview import LedgerPreview
    from stream.station.receipt import ReceiptReader
    from stream.wire.receipts import new_push_id

    topic = args.topic or settings.topic_reports
    workers = _check_workers(settings, schema, topic, args)  # another spec or feed: exit 2, nothing sent
    push_id = new_push_id()
    reader = ReceiptReader(settings.bootstrap_servers(), topic, push_id, total).start() \
        if workers and not args.no_wait else None
    ledger = LedgerPreview.open(settings)
    producer = BatchProducer(make_producer(settings.bootstrap_servers(), **PUSH_TIMEOUTS), topic)
    try:
        result = push_reports(rows_for_spec(args.input, spec.input), schema, producer, topic,
                              args.station, progress=_progress(f"push {Path(args.input).name}"),
                              total=total, rejects=sink, keep=max(args.show, 0), repeated=repeated, inspect=ledger,
                              push_id=push_id)
        if result.error is None:  # where each station's batch ends: the worker closes its windows then
            try:
                producer.end_batch()
            except Exception as exc:  # the broker went away after the last report: the receipt says what arrived
                print(f"push: the batch's end could not be marked ({type(exc).__name__}); its windows wait for the "
                      "station's next push or `anonstream windows flush`", file=sys.stderr)
    except BaseException:
        if reader is not None:
            reader.close()
        raise
    finally:
        producer.close(timeout=5)
        if sink is not None:
            sink.close()
    try:
        return _report(args, schema, settings, total, result, reader, ledger, bool(workers))
    finally:
        if ledger is not None:
            ledger.close()


def _report(args: argparse.Namespace, schema: Any, settings: Any, total: int, result: Any, reader: Any,
            ledger: Any, served: bool) -> int:
    """Print what was sent and rejected, wait for the receipt and print it; the exit code."""
    from stream.io.rejects import Hints, describe
    from stream.station.receipt import REPUSH, found_in_ledger, receipt_lines

    print(f"push: sent {result.sent} report(s), rejected {result.rejected_count}")
    if result.error is not None:
        print(f"push: the broker stopped acknowledging ({result.error}); the push ended there")
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
        if args.rejects:
            print(f"  rejected rows written to {args.rejects}: fix them and push that file again")
    not_sent = total - result.rejected_count - result.numbered  # the push ended before these were handed over
    if reader is not None:
        print(f"receipt: waiting for the worker's verdict on {result.numbered} report(s) (until {args.wait:.0f}s "
              "pass without one; --no-wait skips this)")
        try:
            verdicts = reader.wait(result.numbered, args.wait, _progress("receipt", "confirmed"),
                                   lambda: _reachable(settings))
            if verdicts.unconfirmed and ledger is not None:  # receipts lost with a broker: ask the ledger
                found = found_in_ledger(ledger, args.input, schema, args.station, result.lines,
                                        reader.unconfirmed(result.numbered))
                reader.confirm(found)
                why, verdicts = verdicts.why_stopped, reader.verdicts(result.numbered)
                verdicts.why_stopped, verdicts.from_ledger = why, len(found)
        finally:
            reader.close()
        print("\n".join(receipt_lines(verdicts, result.sent, total - result.rejected_count)))
        lost = not_sent + verdicts.unconfirmed + sum(verdicts.dead.values())
    else:
        lost = not_sent + result.numbered - result.sent
        if lost:
            print(f"push: {lost} report(s) not sent or not acknowledged by the broker")
        elif served:
            print("push: not waiting for the worker's receipt (--no-wait); `anonstream status` shows what it "
                  "ingested")
    if lost:
        print(f"push: {REPUSH}")
    return 1 if result.rejected_count or lost else 0


def _check_workers(settings: Any, schema: Any, topic: str, args: argparse.Namespace) -> list[Any]:
    """The live workers serving ``topic``; one running another spec (or feed) is an error, none a warning."""
    from core.columns import spec_version
    from stream.station.advert import check_workers, describe_none, read_adverts, summary

    adverts = read_adverts(settings.bootstrap_servers(), topic)
    named_feed = settings.feed if (settings.pipelines is not None or args.feed) else None
    workers = check_workers(adverts, topic, schema.spec.name, spec_version(schema.spec), named_feed)
    if workers:
        print(summary(workers))
    else:
        print(describe_none(adverts, topic), file=sys.stderr)
    return workers


def _reachable(settings: Any) -> bool:
    from stream.ops.locate import ServiceUnreachable, check_broker

    try:
        check_broker(settings, timeout=2.0)
    except ServiceUnreachable:
        return False
    return True


def _quiet(args: argparse.Namespace) -> None:
    import logging

    from stream.ops.runtime import quiet_clients

    quiet_clients(getattr(args, "verbose", False))
    if not getattr(args, "verbose", False):  # a broker gone mid-push: push says so itself, in one line
        logging.getLogger("kafka").setLevel(logging.CRITICAL)


def register(sub: argparse._SubParsersAction) -> None:
    fmt = argparse.RawDescriptionHelpFormatter
    p = sub.add_parser("push", help="validate a station's reports (CSV, JSON lines, Parquet) and push them",
                       description=PUSH_HELP, formatter_class=fmt)
    p.add_argument("input", help="reports as .csv, .jsonl or .parquet")
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
    p.add_argument("--wait", type=float, default=60.0, metavar="SECONDS", help="wait for the worker's receipt until "
                   "every report has a verdict, giving up after SECONDS without a new one (default 60)")
    p.add_argument("--no-wait", action="store_true", help="do not wait for the worker's receipt")
    p.set_defaults(func=cmd_push)
