"""``anonstream consume``: write each complete, signed release to files an analyst can load."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from stream.config.settings import load_settings
from stream.ops.runtime import broker_settings

DEFAULT_GROUP = "anonstream-consume"

CONSUME_HELP = """\
Follow the releases and anonymized topics and write each COMPLETE, SIGNED release (manifest signature
verifies with the service's public key, every record matches its signed row hash) as
OUT/<release id>.<format> plus its manifest (_<id>.manifest.json) and its codebook (_<id>.codebook.json
and .md: what each column means; the leading _ keeps them out of pandas.read_parquet(OUT)). Unsigned,
forged or altered manifests, ids that are not plain names and messages that are not JSON are refused
with a logged reason, and consuming goes on. A record planted under a release's id and seq is refused
by the signed row hashes whenever it arrives: the genuine release is still written. A record beyond its
manifest's record count is refused, and so is any record past ANONSTREAM_CONSUME_MAX_UNCONFIRMED
(default 100000) of a release whose manifest has not arrived (read again once it has). A second signed
manifest with other content under a release id already held or written is refused with one line. A
release whose signed manifest verified but that never completed is listed when consume stops.
`anonstream releases check OUT` later re-hashes the files against their signed manifests.

Resuming: consume reads as the consumer group --group (default anonstream-consume) and commits the
group's offsets only once the releases read so far are written, so a daily run reads only what is new,
and a run that stops (or crashes) mid-release reads that release again next time. A release whose
file exists is never written twice. --from-start re-reads everything (the group's offsets move on).

Formats: csv (text cells starting with = + - @, a tab or a carriage return get a leading ' so a
spreadsheet never runs them as formulas; numbers are unchanged; --raw-columns exempts text columns),
parquet (typed columns) or jsonl. --partition-by date appends every release to one dataset folder,
OUT/window_date=YYYY-MM-DD/ (the day the release's window starts), readable as one table by pandas,
pyarrow, Spark or DuckDB. In Python:

  from stream.analyst.dataset import read_releases
  df = read_releases("releases/")        # one typed DataFrame, with release_id (and window_date)

The public key comes from the service's operator (`anonstream keys public`); on the worker's own
machine (embedded mode) it is read from its data folder.

Examples:
  anonstream consume --broker kafka://127.0.0.1:9092 --public-key 3b6a27bc... --out releases/ --idle 30
  anonstream consume --format parquet --partition-by date --out dataset/ --idle 30   # a daily pull
"""


def cmd_consume(args: argparse.Namespace) -> int:
    from stream.cli._paths import check_output_folder
    from stream.ops.runtime import quiet_clients

    check_output_folder("--out", args.out)  # before the broker is asked anything
    quiet_clients(getattr(args, "verbose", False))
    from stream.analyst.consumer import follow_releases, written_digests
    from stream.analyst.export import write_release
    from stream.config.settings import secret_value
    from stream.wire.signing import consumer_public_key

    settings = load_settings(broker_url=args.broker, pipelines=args.pipelines)
    if settings.pipelines is not None or args.feed:  # that feed's output topics (stream/config/feeds.py), checked first
        from stream.config.feeds import feed_named

        settings = feed_named(settings, args.feed)
    settings = broker_settings(settings)
    public_key = consumer_public_key(args.public_key or settings.release_public_key,
                                     secret_value(settings.signing_key), settings.data_dir)
    raw_columns = tuple(c.strip() for c in (args.raw_columns or "").split(",") if c.strip())
    out = Path(args.out)
    written: list[str] = []
    started = time.monotonic()

    def on_release(manifest: dict[str, Any], records: list[dict[str, Any]]) -> None:
        path = write_release(out, manifest, records, args.format, args.partition_by, raw_columns)
        if path is None:
            print(f"skip {manifest['release_id']} (already written)", flush=True)
            return
        written.append(manifest["release_id"])
        print(f"release {manifest['release_id']}: {len(records)} records -> {path}", flush=True)

    def stop() -> bool:
        return (args.max_releases is not None and len(written) >= args.max_releases) or (
            args.timeout is not None and time.monotonic() - started > args.timeout)

    group = args.group or None
    asm = follow_releases(settings.bootstrap_servers(), settings.topic_releases, settings.topic_anonymized,
                          on_release, stop, idle_s=args.idle, public_key=public_key, group=group,
                          from_start=args.from_start, written=written_digests(out, args.format),
                          max_unconfirmed=settings.consume_max_unconfirmed)
    print(f"consume: {len(written)} release(s) written to {out}; skipped {asm.duplicate_records} duplicate "
          f"record(s) and {asm.duplicate_manifests} duplicate manifest(s)"
          + (f"; group {group} committed" if group else ""))
    for reason, n in sorted(asm.refused.items()):
        print(f"  refused {n} message(s): {reason}")
    if asm.conflicts:
        print(f"  refused {asm.conflicts} record(s) conflicting with their release's signed row hashes "
              "(planted or altered records; the genuine ones were kept)")
    if asm.id_conflicts:
        print(f"  refused {asm.id_conflicts} signed manifest(s) naming a release id already held or written with "
              "other content (two deployments sharing a signing key, or a replay); the first content was kept")
    if asm.incomplete():
        print(f"  {len(asm.incomplete())} release(s) whose signed manifest verified never completed: "
              + ", ".join(asm.incomplete()))
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    c = sub.add_parser("consume", help="write each complete release as CSV, Parquet or JSON lines",
                       description=CONSUME_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    c.add_argument("--broker", help="kafka://host:port (default: ANONSTREAM_BROKER_URL)")
    c.add_argument("--out", default="releases", help="output folder (default ./releases)")
    c.add_argument("--format", choices=("csv", "parquet", "jsonl"), default="csv",
                   help="file format of each release (default csv)")
    c.add_argument("--partition-by", choices=("date",), default=None,
                   help="append releases to one dataset folder partitioned as window_date=YYYY-MM-DD/")
    c.add_argument("--group", default=DEFAULT_GROUP,
                   help=f"consumer group whose committed offsets say where to resume (default {DEFAULT_GROUP}; "
                        "'' = no group: read everything, commit nothing)")
    c.add_argument("--from-start", action="store_true", help="read from the beginning, ignoring the group's offsets")
    c.add_argument("--idle", type=float, default=None, help="stop after this many seconds without messages, once "
                   "every partition is read to its end (a slow group join does not count)")
    c.add_argument("--timeout", type=float, default=None, help="stop after this many seconds")
    c.add_argument("--max-releases", type=int, default=None, help="stop after writing this many releases")
    c.add_argument("--public-key", help="the service's Ed25519 public key, 64 hex digits or @file "
                   "(default: ANONSTREAM_RELEASE_PUBLIC_KEY, else the local worker's key)")
    c.add_argument("--raw-columns", help="comma-separated text columns written as they are in CSV (no formula "
                   "neutralization), e.g. signed numbers stored as text")
    c.add_argument("--feed", help="follow this feed's output topics (several feeds in one deployment)")
    c.add_argument("--pipelines", metavar="FILE", help="the deployment's pipelines TOML (default: "
                   "ANONSTREAM_PIPELINES)")
    c.set_defaults(func=cmd_consume)
