"""``anonstream windows flush``: release the reports waiting below ``min_release_rows`` now."""

from __future__ import annotations

import argparse
import getpass
from typing import Any

from core.errors import InputDataError

WINDOWS_HELP = """\
A window with fewer reports to release than windows.min_release_rows (default 10 x k) is not
published: it is carried, and its reports wait for the next window of its key (the station's next
push, or the next day's reports). `windows flush` asks the workers to release a station's waiting
reports now (still at least k of them: fewer stay pending until more arrive). Every report stays
accounted for meanwhile: `anonstream status` counts it as pending (carried).

With windows by region or global, a station's reports wait under its region's or the global key, and
flushing the station flushes that key.

Examples:
  anonstream windows flush --station S1
  anonstream windows flush --all
"""


def _settings(args: argparse.Namespace) -> Any:
    from stream.config.settings import load_settings
    from stream.ops.locate import check_database, resolve

    settings = resolve(load_settings(database_url=args.database, pipelines=args.pipelines), need_database=True)
    if settings.pipelines is not None or args.feed:  # each feed has its own windows (stream/config/feeds.py)
        from stream.config.feeds import feed_named

        settings = feed_named(settings, args.feed)
    check_database(settings.db_url())  # unreachable: one line, exit 3
    return settings


def _stations(values: list[str]) -> list[str]:
    from stream.intake.guards import station_ids

    ids, bad = station_ids(values)  # canonical: `08` is station 8
    if bad:
        raise InputDataError(f"invalid station id {bad[0][:70]!r}: use 1-64 characters of A-Z a-z 0-9 . _ - "
                             "starting with a letter or digit", reason="invalid-station")
    return ids


def cmd_flush(args: argparse.Namespace) -> int:
    from db import Database
    from stream.cli._ledger_options import guarded
    from stream.console.controls import flush_waiting

    if not args.station and not args.all:
        raise InputDataError("name the stations to flush (--station S1 ...) or pass --all", reason="usage")
    stations = _stations(args.station or [])
    settings = _settings(args)
    keys = None if args.all else sorted({settings.window_key_for(s) for s in stations})
    db = Database(settings.db_url())
    try:
        done = guarded(lambda: flush_waiting(db, settings.windows, keys, getpass.getuser()))
    finally:
        db.dispose()
    k = settings.privacy.k
    for d in done:
        if not d["windows"]:
            print(f"windows: {d['key']}: nothing waiting")
        elif d["pending"] < k:
            print(f"windows: {d['key']}: {d['pending']} report(s) waiting, fewer than k={k}: they stay pending until "
                  "more arrive")
        else:
            print(f"windows: {d['key']}: {d['pending']} report(s) to release at the workers' next tick")
    if not done:
        print("windows: nothing waiting")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    fmt = argparse.RawDescriptionHelpFormatter
    p = sub.add_parser("windows", help="release the reports waiting below min_release_rows now (flush)",
                       description=WINDOWS_HELP, formatter_class=fmt)
    inner = p.add_subparsers(dest="windows_command", metavar="ACTION")
    f = inner.add_parser("flush", help="release a station's waiting reports now (at least k)",
                         description=WINDOWS_HELP, formatter_class=fmt)
    f.add_argument("--station", nargs="+", metavar="S", help="station id(s) whose waiting reports to release")
    f.add_argument("--all", action="store_true", help="every key with reports waiting")
    f.add_argument("--database", help="SQLAlchemy URL (default: ANONSTREAM_DATABASE_URL, else SQLite)")
    f.add_argument("--feed", help="the feed (several feeds in one deployment)")
    f.add_argument("--pipelines", metavar="FILE",
                   help="the deployment's pipelines TOML (default: ANONSTREAM_PIPELINES)")
    f.set_defaults(func=cmd_flush)
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])
