"""``anonstream migrate``: upgrade, check or downgrade the ledger database."""

from __future__ import annotations

import argparse
import sys
import time

from stream.cli._worker_options import quiet
from stream.config.settings import load_settings


def cmd_migrate(args: argparse.Namespace) -> int:
    quiet(args)
    import migrations
    from stream.ops.locate import resolve

    settings = resolve(load_settings(database_url=args.database))
    url = settings.db_url()
    if settings.database_url:
        wait_for_database(url, args.wait)
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


def wait_for_database(url: str, wait_s: float) -> None:
    """Connect, retrying with a doubling back-off (1 s, 2 s, 4 s … at most 15 s) for up to ``wait_s``
    seconds: PostgreSQL's first start restarts the server after its init scripts, so one early try
    can fail even though the healthcheck passed. Still unreachable then: exit 3, one line."""
    from stream.ops.locate import ServiceUnreachable, check_database

    deadline, delay = time.monotonic() + wait_s, 1.0
    while True:
        try:
            check_database(url)
            return
        except ServiceUnreachable as exc:
            left = deadline - time.monotonic()
            if left <= 0:
                raise
            print(f"migrations: {exc.message}; retrying in {min(delay, left):.0f}s", file=sys.stderr, flush=True)
            time.sleep(min(delay, left))
            delay = min(delay * 2, 15.0)


def register(sub: argparse._SubParsersAction) -> None:
    m = sub.add_parser("migrate", help="upgrade the ledger database (or check / downgrade it)")
    m.add_argument("--database", help="SQLAlchemy URL (default: ANONSTREAM_DATABASE_URL, else SQLite)")
    m.add_argument("--revision", default="head", help="target revision (default head)")
    m.add_argument("--downgrade", metavar="REV", help="downgrade to REV (e.g. base)")
    m.add_argument("--check", action="store_true", help="fail if the models and migrations differ")
    m.add_argument("--wait", type=float, default=0.0, metavar="S",
                   help="retry an unreachable database with back-off for up to S seconds (default 0: one try)")
    m.set_defaults(func=cmd_migrate)
