"""Service commands: ``anonstream run``, ``anonstream demo`` and ``anonstream migrate``."""

from __future__ import annotations

import argparse
import shutil
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from stream.config.settings import Settings, load_settings

RUN_HELP = """\
Run one worker: consume crime reports, window them, release anonymized batches.

With no broker configured (ANONSTREAM_BROKER_URL / --broker) the bundled broker is started on a
free loopback port (`pip install 'anonstream[embedded]'`); with no database configured, SQLite under
the data directory (ANONSTREAM_HOME, default ./var) is used. The instance is recorded in
$ANONSTREAM_HOME/instance.json, so every other command finds its broker and database. Migrations run
first unless --no-migrate; releases the broker lacks are re-published from the ledger. The web port
serves /metrics (Prometheus) and /ready. Exit codes: 0 ok, 2 usage, 3 broker/database unreachable
or lost. All settings come from ANONSTREAM_* environment variables (or ANONSTREAM_*_FILE).

Several feeds (each its own input topic, spec, engine, privacy parameters, windows and output
topics) are served by the same worker with --pipelines FILE (or ANONSTREAM_PIPELINES); see
stream/specs/pipelines.example.toml and docs/operations.md "Several feeds".
"""

DEMO_HELP = """\
Run the whole service on this machine: embedded broker, SQLite under ./var/demo, a worker and
simulated police stations pushing one generated day of crime reports. Each release is printed as
its manifest arrives; the demo exits 0 once every pushed report is accounted for (released,
suppressed, deduplicated or dead-lettered) and every release is published.

Every release is also written, as an analyst's `anonstream consume` would, into var/demo/releases
(emptied at the start of each demo; --out to choose another folder, which is kept) as Parquet with
its manifest and codebook. Load them in Python:

  from stream.analyst.dataset import read_releases
  df = read_releases("var/demo/releases")
  df.groupby(["age_lo", "age_hi"]).size()
  df.groupby("suburb_region")["offence"].value_counts()

Example:
  anonstream demo --stations 3 --reports 2000 --format csv --out my-releases
"""


def _overrides(args: argparse.Namespace) -> dict[str, Any]:
    return {"broker_url": getattr(args, "broker", None), "database_url": getattr(args, "database", None),
            "spec": getattr(args, "spec", None), "engine": getattr(args, "engine", None),
            "k": getattr(args, "k", None), "web_port": getattr(args, "web_port", None),
            "pipelines": getattr(args, "pipelines", None)}


def cmd_run(args: argparse.Namespace) -> int:
    _quiet(args)
    from core.errors import ParamsError
    from stream.ops.broker import free_port
    from stream.ops.locate import port_free, resolve
    from stream.ops.runtime import embedded
    from stream.worker.app import run_worker

    settings = resolve(load_settings(**_overrides(args)))  # flag > environment > the instance's state file
    if settings.web_port == 0:
        settings = settings.with_updates(web_port=free_port(settings.web_host))
    elif not port_free(settings.web_host, settings.web_port):
        raise ParamsError(f"web port {settings.web_port} on {settings.web_host} is in use (another worker?): pass "
                          "--web-port N or set ANONSTREAM_WEB_PORT (0 picks a free port)", reason="port-in-use")
    if settings.pipelines is not None:  # a bad pipelines file is one error line before anything starts
        from stream.config.feeds import load_pipelines

        load_pipelines(Path(settings.pipelines))
    with embedded(settings, run_migrations=not args.no_migrate, watch=True) as ready:
        _announce(ready)
        return run_worker(ready)


def _announce(s: Settings) -> None:
    """Where everything is, and what to try next (stdout; logs go to stderr)."""
    from stream.ops.locate import safe_url

    home = s.data_dir.resolve()
    embedded_note = f" (embedded, log {home / 'broker.log'})" if (home / "instance.json").exists() else ""
    web = f"http://{s.web_host}:{s.web_port}"
    print("\n".join([
        f"anonstream run: worker on {web}/  (metrics {web}/metrics, readiness {web}/ready)",
        f"  broker    {s.broker_url}{embedded_note}",
        f"  database  {safe_url(s.db_url())}",
        f"  console   anonstream console --port {s.console_port}  (then open http://127.0.0.1:{s.console_port}/)",
        f"  home      {home}  (other commands find this instance from any directory with ANONSTREAM_HOME={home})",
        *_feed_lines(s),
        "  next      anonstream push reports.csv --station S1    |    anonstream status"]), flush=True)


def _feed_lines(s: Settings) -> list[str]:
    """One line per feed when a pipelines file declares them."""
    if s.pipelines is None:
        return []
    from stream.config.feeds import feeds

    return [f"  feed      {f.feed}: {f.topic_reports} -> {f.topic_anonymized} (spec {f.spec}, engine "
            f"{f.engine or 'default'}, k={f.k})" for f in feeds(s)]


def cmd_migrate(args: argparse.Namespace) -> int:
    _quiet(args)
    import migrations
    from stream.ops.locate import check_database, resolve

    settings = resolve(load_settings(database_url=args.database))
    url = settings.db_url()
    if settings.database_url:
        check_database(url)
    if args.check:
        migrations.check(url)
        print("migrations: schema matches the models")
        return 0
    if args.downgrade:
        migrations.downgrade(url, args.downgrade)
    else:
        migrations.upgrade(url, args.revision)
    print(f"migrations: database at revision {migrations.current(url)}")
    return 0


def _print_release(manifest: dict[str, Any], records: list[dict[str, Any]]) -> None:
    c = manifest["counts"]
    w = manifest["window"]
    loss = manifest["metrics"].get("gcp")
    print(f"release {manifest['release_id']}  window {w['key']} {w['start'][:10]}#{w['seq']}  "
          f"engine {manifest['engine']}  k={manifest['k']}"
          + (f" l={manifest['l']}" if manifest.get("l") is not None else "")
          + f"  released {c['released']}/{c['received']}  suppressed {c['suppressed']}  held {c['held_back']}"
          + (f"  GCP {loss:.3f}" if isinstance(loss, float) else ""), flush=True)


def _demo_settings(args: argparse.Namespace) -> Settings:
    base = load_settings(**_overrides(args))
    values: dict[str, Any] = {"idle_timeout_s": args.idle_timeout, "data_dir": base.data_dir / "demo",
                              "tick_interval_s": 0.5}
    if base.database_url is None:
        db_file = base.data_dir / "demo" / "anonstream.db"
        for suffix in ("", "-wal", "-shm"):
            p = db_file.with_name(db_file.name + suffix)
            if p.exists():
                p.unlink()
    return base.with_updates(**values)


def cmd_demo(args: argparse.Namespace) -> int:
    _quiet(args)
    from db import Database, ReleaseRepository
    from stream.analyst.consumer import follow_releases
    from stream.analyst.export import write_release
    from stream.ops.broker import free_port
    from stream.ops.runtime import embedded, spawn_worker, stop_process
    from stream.station.producer import make_producer
    from stream.station.simulate import bad_reports, generate_day, push_day

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
        reports = generate_day(args.stations, args.reports, args.seed, day)
        extra = [(st, raw) for st, rs in reports.items() for raw in bad_reports(st, rs[0])][: args.bad]
        producer = make_producer(ready.bootstrap_servers())
        pushed = push_day(producer, ready.topic_reports, reports, extra)
        producer.close()
        print(f"demo: {args.stations} station(s) pushed {pushed} reports ({len(extra)} malformed)", flush=True)
        repo = ReleaseRepository(Database(ready.db_url()))
        ok = False
        acc: dict[str, int] = {}
        while time.monotonic() - started < args.timeout:
            if any(w.poll() is not None for w in workers):
                print("demo: a worker exited unexpectedly; see its log under " + str(ready.data_dir), file=sys.stderr)
                break
            acc = repo.accounting()
            accounted = sum(acc.get(k, 0) for k in ("released", "suppressed", "blocked", "dlq", "duplicate",
                                                    "correction"))
            if (accounted + acc.get("pending", 0) >= pushed and acc.get("windows_open", 1) == 0
                    and acc.get("releases_stored", 1) == 0 and len(printed) >= acc.get("releases_published", 0)):
                ok = True
                break
            time.sleep(0.5)
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
              f"  python -c 'from stream.analyst.dataset import read_releases; "
              f"print(read_releases(\"{out_dir}\").groupby(\"suburb_region\").size())'", flush=True)
    if not ok:
        print(f"error: demo did not finish within {args.timeout:.0f}s", file=sys.stderr)
        return 1
    if args.clean:
        shutil.rmtree(settings.data_dir, ignore_errors=True)
    return 0


def _quiet(args: argparse.Namespace) -> None:
    from stream.ops.runtime import quiet_clients

    quiet_clients(getattr(args, "verbose", False))


def register(sub: argparse._SubParsersAction) -> None:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--broker", help="kafka://host:port (default: ANONSTREAM_BROKER_URL, else embedded)")
    common.add_argument("--database", help="SQLAlchemy URL (default: ANONSTREAM_DATABASE_URL, else SQLite)")
    common.add_argument("--spec", help="dataset spec (default: crime)")
    common.add_argument("--engine", help="engine per window (default: cg-kanon when available)")
    common.add_argument("-k", type=int, help="minimum class size (default 5)")
    fmt = argparse.RawDescriptionHelpFormatter
    r = sub.add_parser("run", parents=[common], help="run a worker (embedded broker if none configured)",
                       description=RUN_HELP, formatter_class=fmt)
    r.add_argument("--web-port", type=int, help="worker web port: /metrics, /ready (default 6066; 0 = a free port)")
    r.add_argument("--no-migrate", action="store_true", help="skip the migrations start-up step")
    r.add_argument("--pipelines", metavar="FILE", help="serve several feeds declared in this TOML file (default: "
                   "ANONSTREAM_PIPELINES; none = one feed from these settings); see docs/operations.md")
    r.set_defaults(func=cmd_run)

    d = sub.add_parser("demo", parents=[common], help="embedded broker + worker + simulated stations, one day",
                       description=DEMO_HELP, formatter_class=fmt)
    d.add_argument("--stations", type=int, default=3, help="simulated stations (default 3)")
    d.add_argument("--reports", type=int, default=2000, help="reports per station for the day (default 2000)")
    d.add_argument("--day", default="2024-03-01", help="event day (default 2024-03-01)")
    d.add_argument("--seed", type=int, default=7, help="generator seed (default 7)")
    d.add_argument("--bad", type=int, default=3, help="malformed reports to include (default 3)")
    d.add_argument("--workers", type=int, default=1, help="worker processes (default 1)")
    d.add_argument("--idle-timeout", type=float, default=3.0, help="close windows after this many idle seconds")
    d.add_argument("--timeout", type=float, default=300.0, help="give up after this many seconds (exit 1)")
    d.add_argument("--out", help="write each release into this folder (default var/demo/releases, emptied first)")
    d.add_argument("--format", choices=("parquet", "csv", "jsonl"), default="parquet",
                   help="file format of the releases written (default parquet: typed columns)")
    d.add_argument("--clean", action="store_true", help="delete the demo's database (and default releases folder) "
                   "afterwards")
    d.set_defaults(func=cmd_demo)

    m = sub.add_parser("migrate", help="upgrade the ledger database (or check / downgrade it)")
    m.add_argument("--database", help="SQLAlchemy URL (default: ANONSTREAM_DATABASE_URL, else SQLite)")
    m.add_argument("--revision", default="head", help="target revision (default head)")
    m.add_argument("--downgrade", metavar="REV", help="downgrade to REV (e.g. base)")
    m.add_argument("--check", action="store_true", help="fail if the models and migrations differ")
    m.set_defaults(func=cmd_migrate)
