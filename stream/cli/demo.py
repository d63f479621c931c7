"""``anonstream demo``: the whole service on this machine with simulated stations, one day."""

from __future__ import annotations

import argparse
import shutil
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stream.cli._worker_options import overrides, quiet, worker_options
from stream.config.settings import Settings, load_settings

if TYPE_CHECKING:
    from db import ReleaseRepository

DEMO_HELP = """\
Run the whole service on this machine: embedded broker, SQLite under ./var/demo, a worker and
simulated police stations pushing one generated day of crime reports. Each release is printed as
its manifest arrives; the demo exits 0 once every pushed report is accounted for (released,
suppressed, deduplicated or dead-lettered) and every release is published.

Every release is also written, as an analyst's `anonstream consume` would, into var/demo/releases
(emptied at the start of each demo; --out to choose another folder, which is kept) as Parquet with
its manifest and codebook. Load them in Python:

  from stream.analyst import band_counts, read_codebook, read_releases
  df = read_releases("var/demo/releases")
  ages = band_counts(df, "age", "band of width 10", read_codebook("var/demo/releases"))
  ages.counts, ages.coarser        # rows per age decade; rows released coarser than a decade
  read_codebook("var/demo/releases")["utility"]   # what a release preserves, what it distorts

Example:
  anonstream demo --stations 3 --reports 2000 --format csv --out my-releases
"""


def _print_release(manifest: dict[str, Any], records: list[dict[str, Any]]) -> None:
    c = manifest["counts"]
    w = manifest["window"]
    loss = manifest["metrics"].get("gcp")
    print(f"release {manifest['release_id']}  window {w['key']} {w['start'][:10]}#{w['seq']}  "
          f"engine {manifest['engine']}  k={manifest['k']}"
          + (f" l={manifest['l']}" if manifest.get("l") is not None else "")
          + f"  released {c['released']}/{c['received']}  suppressed {c['suppressed']}  held {c['held_back']}"
          + (f"  GCP {loss:.3f}" if isinstance(loss, float) else "") + _counts_note(manifest.get("dp")), flush=True)


def _counts_note(dp: Any) -> str:
    """The release's differentially private counts in a few words (stream/worker/dpcounts.py)."""
    if not isinstance(dp, dict):
        return ""
    if dp.get("refused"):
        return f"  counts REFUSED ({dp['refused'].get('block')}: budget cap)"
    left = min((b.get("remaining_rho", 0.0) for b in dp.get("blocks") or []), default=0.0)
    half = max((t.get("ci95", 0.0) for t in dp.get("tables") or []), default=0.0)
    return f"  {len(dp.get('tables') or [])} count tables ±{half:g} (ε {dp.get('epsilon')}; block ρ left {left:.3g})"


def _demo_settings(args: argparse.Namespace) -> Settings:
    base = load_settings(**overrides(args))
    values: dict[str, Any] = {"idle_timeout_s": args.idle_timeout, "data_dir": base.data_dir / "demo",
                              "tick_interval_s": 0.5}
    if args.window_by == "delay":  # CASTLE per station (stream/worker/delay.py); the bundled spec without [dp]
        from stream.io.specs import crime_spec_without_dp

        values["delay"] = {"enabled": True, "seconds": args.delay_seconds, "tuples": args.delay_tuples}
        values["spec"] = crime_spec_without_dp(base.data_dir / "demo" / "spec") if base.spec == "crime" else base.spec
    elif args.window_by:
        values["windows"] = {"by": args.window_by}
    if base.database_url is None:
        db_file = base.data_dir / "demo" / "anonstream.db"
        for suffix in ("", "-wal", "-shm"):
            p = db_file.with_name(db_file.name + suffix)
            if p.exists():
                p.unlink()
    return base.with_updates(**values)


def cmd_demo(args: argparse.Namespace) -> int:
    quiet(args)
    from db import Database, ReleaseRepository
    from stream.analyst.consumer import follow_releases
    from stream.analyst.export import write_release
    from stream.cli._paths import check_output_folder
    from stream.ops.broker import free_port
    from stream.ops.kafka_clients import make_producer
    from stream.ops.runtime import embedded, spawn_worker, stop_process
    from stream.station.batch import BatchProducer
    from stream.station.simulate import bad_reports, generate_day, push_day

    check_output_folder("--out", args.out)  # a file or a device given as the folder: one line, nothing started
    settings = _demo_settings(args)
    out_dir = Path(args.out) if args.out else settings.data_dir / "releases"
    if not args.out:  # the demo's own folder holds this run's releases only
        shutil.rmtree(out_dir, ignore_errors=True)
    day = datetime.fromisoformat(args.day).replace(tzinfo=UTC)
    started = time.monotonic()
    with embedded(settings) as ready:
        print(f"demo: broker {ready.broker_url}, database {ready.db_url()}", flush=True)
        workers = [spawn_worker(ready.with_updates(web_port=free_port()),
                                ready.data_dir / f"worker-{i}.log") for i in range(args.workers)]
        printed: list[str] = []
        stop = threading.Event()

        def on_release(manifest: dict[str, Any], records: list[dict[str, Any]]) -> None:
            _print_release(manifest, records)
            printed.append(manifest["release_id"])
            write_release(out_dir, manifest, records, args.format)

        from stream.config.settings import secret_value
        from stream.wire.signing import consumer_public_key

        public_key = consumer_public_key(None, secret_value(ready.signing_key), ready.data_dir)
        follower = threading.Thread(target=follow_releases, daemon=True, args=(
            ready.bootstrap_servers(), ready.topic_releases, ready.topic_anonymized, on_release, stop.is_set),
            kwargs={"public_key": public_key})
        follower.start()
        # one push a day, one batch each, the next day pushed once the last is released (a station's daily
        # export): a station's windows close when its end marker says every report of it is in, never because
        # the worker (on a loaded machine) took a while to read them (db/batches.py)
        kafka = make_producer(ready.bootstrap_servers())
        repo = ReleaseRepository(Database(ready.db_url()))
        pushed, bad, ok = 0, 0, True
        acc: dict[str, int] = {}
        for i in range(args.days):
            producer = BatchProducer(kafka, ready.topic_reports)
            reports = generate_day(args.stations, args.reports, args.seed + i, day + timedelta(days=i))
            extra = [(st, raw) for st, rs in reports.items() for raw in bad_reports(st, rs[0])][: args.bad * (i == 0)]
            sent = push_day(producer, ready.topic_reports, reports, extra)
            pushed, bad = pushed + sent, bad + len(extra)
            producer.end_batch()
            when = f" of {(day + timedelta(days=i)).date()}" if args.days > 1 else ""
            print(f"demo: {args.stations} station(s) pushed {sent} reports{when} ({len(extra)} malformed)", flush=True)
            ok, acc = _settle(repo, workers, pushed, printed, ready, started + args.timeout)
            if not ok:
                break
        kafka.close()
        stop.set()
        follower.join(timeout=5)
        for w in workers:
            stop_process(w)
    summary = ", ".join(f"{k} {v}" for k, v in sorted(acc.items()))
    if acc.get("dlq"):
        from sqlalchemy import select

        from db.models import Counter

        with repo.db.read() as s:
            reasons = s.execute(select(Counter.reason, Counter.count).where(Counter.kind == "dlq")).all()
        print("demo: dead-lettered: " + ", ".join(f"{n} {r}" for r, n in sorted(reasons)), flush=True)
    print(f"demo: {len(printed)} release(s) in {time.monotonic() - started:.1f}s; {summary}", flush=True)
    if printed:
        print(f"demo: releases written to {out_dir} ({args.format}, with manifests and codebooks); load them with\n"
              f"  {_runnable('python')} -c 'from stream.analyst.dataset import read_releases; "
              f"print(read_releases(\"{out_dir}\").groupby(\"suburb_region\").size())'", flush=True)
    if ok and not args.clean:
        home = settings.data_dir
        cli = _runnable("anonstream")
        activate = f"  . {Path(cli).parent}/activate   # puts {cli} on the PATH as anonstream\n"
        print(f"demo: its ledger, keys and logs are in {home}; look at them with\n"
              + (activate if cli != "anonstream" else "")
              + f"  export ANONSTREAM_HOME={home}\n"
              "  anonstream status; anonstream releases list; anonstream keys public\n"
              "  anonstream run --detach   # a worker on the demo's ledger: it re-publishes the demo's releases, so\n"
              "                            # `anonstream releases verify latest` can read them back; `anonstream stop`",
              flush=True)
        if args.days > 1:
            last = (day + timedelta(days=args.days - 1)).date()
            print(f"  anonstream releases report --since {day.date()} --until {last} --out signoff.html"
                  "   # one sign-off for the period", flush=True)
    if not ok:
        print(f"error: demo did not finish within {args.timeout:.0f}s", file=sys.stderr)
        return 1
    if args.clean:
        shutil.rmtree(settings.data_dir, ignore_errors=True)
    return 0


def _settle(repo: ReleaseRepository, workers: list[Any], pushed: int, printed: list[str], ready: Settings,
            deadline: float) -> tuple[bool, dict[str, int]]:
    """Wait until every pushed report is accounted for and every release published (True), a worker exits or
    the deadline passes (False); returns the ledger's accounting too."""
    acc: dict[str, int] = {}
    while time.monotonic() < deadline:
        if any(w.poll() is not None for w in workers):
            print("demo: a worker exited unexpectedly; see its log under " + str(ready.data_dir), file=sys.stderr)
            return False, acc
        acc = repo.accounting()
        accounted = sum(acc.get(k, 0) for k in ("released", "suppressed", "blocked", "dlq", "duplicate",
                                                "correction"))
        if ready.delay.enabled:  # a delay-mode key's day windows only route reports: done once none is pending
            acc["windows_open"] = 0 if acc.get("pending", 0) == 0 else 1
        if (accounted + acc.get("pending", 0) >= pushed and acc.get("windows_open", 1) == 0
                and acc.get("releases_stored", 1) == 0 and len(printed) >= acc.get("releases_published", 0)):
            return True, acc
        time.sleep(0.5)
    return False, acc


def _runnable(program: str) -> str:
    """``program`` as the user can type it in this folder: its bare name when the shell finds this
    installation's one (the environment activated), else its path in the environment running this demo."""
    import os

    here = Path(sys.executable).parent / program
    found = shutil.which(program)
    if found is not None and os.path.abspath(found) == os.path.abspath(here):
        return program
    return str(here.relative_to(Path.cwd())) if here.is_relative_to(Path.cwd()) else str(here)


def _days(text: str) -> int:
    """``--days``: a whole number of days from 1 to 366."""
    if not text.isdigit() or not 1 <= int(text) <= 366:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of days from 1 to 366")
    return int(text)


def register(sub: argparse._SubParsersAction) -> None:
    d = sub.add_parser("demo", parents=[worker_options()],
                       help="embedded broker + worker + simulated stations, one day",
                       description=DEMO_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    d.add_argument("--stations", type=int, default=3, help="simulated stations (default 3)")
    d.add_argument("--reports", type=int, default=2000, help="reports per station for the day (default 2000)")
    d.add_argument("--day", default="2024-03-01", help="event day (default 2024-03-01); the first with --days")
    d.add_argument("--days", type=_days, default=1,
                   help="consecutive days pushed, one batch a day (default 1); then try the period sign-off, "
                        "`anonstream releases report --since DAY --until LAST_DAY --out signoff.html`")
    d.add_argument("--seed", type=int, default=7, help="generator seed (default 7)")
    d.add_argument("--bad", type=int, default=3, help="malformed reports to include (default 3)")
    d.add_argument("--workers", type=int, default=1, help="worker processes (default 1)")
    d.add_argument("--idle-timeout", type=float, default=3.0,
                   help="close windows after this many idle seconds (input without batch markers only: the "
                   "demo's push is a batch, whose windows close when it ends)")
    d.add_argument("--window-by", choices=("station", "region", "global", "delay"),
                   help="release by window of this key, or delay: each station's reports leave within "
                   "--delay-seconds of event time and --delay-tuples reports (CASTLE; the spec's DP counts are off)")
    d.add_argument("--delay-seconds", type=float, default=3600.0, help="delay mode: most event seconds a report "
                   "waits (default 3600)")
    d.add_argument("--delay-tuples", type=int, default=200, help="delay mode: most reports of its station that "
                   "arrive after a report before it leaves (default 200)")
    d.add_argument("--timeout", type=float, default=300.0, help="give up after this many seconds (exit 1)")
    d.add_argument("--out", help="write each release into this folder (default var/demo/releases, emptied first)")
    d.add_argument("--format", choices=("parquet", "csv", "jsonl"), default="parquet",
                   help="file format of the releases written (default parquet: typed columns)")
    d.add_argument("--clean", action="store_true", help="delete the demo's database (and default releases folder) "
                   "afterwards")
    d.set_defaults(func=cmd_demo)
