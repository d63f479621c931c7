"""Station registry commands: ``anonstream stations add|list|remove``."""

from __future__ import annotations

import argparse
import getpass
from datetime import UTC, datetime
from typing import Any

from core.errors import InputDataError, ParamsError

STATIONS_HELP = """\
Manage the station registry in the ledger database. In production mode (ANONSTREAM_MODE=production)
the workers accept reports only from registered stations; reports of any other station id are
dead-lettered with the reason `unknown-station` (counted under the station "(unregistered)").
In embedded mode a station is registered the first time it sends a valid report, unless
ANONSTREAM_REGISTER_STATIONS=registered.

A station id is 1-64 characters of A-Z a-z 0-9 . _ - starting with a letter or digit.

Examples:
  anonstream stations add S1 S2 S3 --note "northern district"
  anonstream stations list
  anonstream stations remove S3
"""


def _registry(args: argparse.Namespace) -> Any:
    from db import Database
    from db.stations import StationRegistry
    from stream.config.settings import load_settings

    settings = load_settings(database_url=args.database, pipelines=args.pipelines)
    feed = "default"
    if settings.pipelines is not None or args.feed:  # each feed has its own registry (stream/config/feeds.py)
        from stream.config.feeds import feed_named

        feed = feed_named(settings, args.feed).feed
    return StationRegistry(Database(settings.db_url()), feed)


def _guard(fn: Any) -> Any:
    from sqlalchemy.exc import OperationalError, ProgrammingError

    try:
        return fn()
    except (OperationalError, ProgrammingError) as exc:
        raise ParamsError("the ledger database is unreachable or not migrated (run `anonstream migrate`): "
                          f"{type(exc.orig).__name__}", reason="database") from None


def _ids(values: list[str]) -> list[str]:
    from stream.intake.guards import station_ids

    ids, bad = station_ids(values)  # canonical: `08` is station 8
    if bad:
        raise InputDataError(f"invalid station id {bad[0][:70]!r}: use 1-64 characters of A-Z a-z 0-9 . _ - "
                             "starting with a letter or digit", reason="invalid-station")
    return ids


def cmd_add(args: argparse.Namespace) -> int:
    from stream.intake.guards import one_line

    ids = _ids(args.station)
    note = one_line(args.note, 200) if args.note else None
    new = _guard(lambda: _registry(args).add(ids, getpass.getuser(), datetime.now(UTC), note))
    print(f"stations: {len(new)} added" + (f" ({', '.join(new)})" if new else "")
          + (f", {len(ids) - len(new)} already registered" if len(ids) > len(new) else ""))
    return 0


def cmd_remove(args: argparse.Namespace) -> int:
    ids = _ids(args.station)
    gone = _guard(lambda: _registry(args).remove(ids, getpass.getuser(), datetime.now(UTC)))
    missing = sorted(set(ids) - set(gone))
    print(f"stations: {len(gone)} removed" + (f"; not registered: {', '.join(missing)}" if missing else ""))
    return 0 if not missing else 1


def cmd_list(args: argparse.Namespace) -> int:
    rows = _guard(lambda: _registry(args).list())
    if not rows:
        print("no stations registered")
        return 0
    print(f"{'station':<24} {'source':<11} {'added':<20} note")
    for r in rows:
        print(f"{r['station_id']:<24} {r['source']:<11} {r['added_at']:%Y-%m-%d %H:%M:%S}  {r['note'] or ''}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    fmt = argparse.RawDescriptionHelpFormatter
    p = sub.add_parser("stations", help="manage the station registry (add / list / remove)",
                       description=STATIONS_HELP, formatter_class=fmt)
    inner = p.add_subparsers(dest="stations_command", metavar="ACTION")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--database", help="SQLAlchemy URL (default: ANONSTREAM_DATABASE_URL, else SQLite)")
    common.add_argument("--feed", help="the feed whose registry this is (several feeds in one deployment; "
                        "each has its own registry)")
    common.add_argument("--pipelines", metavar="FILE", help="the deployment's pipelines TOML (default: "
                        "ANONSTREAM_PIPELINES)")
    a = inner.add_parser("add", parents=[common], help="register stations", description=STATIONS_HELP,
                         formatter_class=fmt)
    a.add_argument("station", nargs="+", help="station id(s)")
    a.add_argument("--note", help="a note kept with the stations (e.g. district)")
    a.set_defaults(func=cmd_add)
    r = inner.add_parser("remove", parents=[common], help="unregister stations (their later reports are refused)")
    r.add_argument("station", nargs="+", help="station id(s)")
    r.set_defaults(func=cmd_remove)
    ls = inner.add_parser("list", parents=[common], help="list registered stations")
    ls.set_defaults(func=cmd_list)
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])
