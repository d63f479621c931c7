"""``anonstream migrate``: upgrade, check or downgrade the ledger database."""

from __future__ import annotations

import argparse

from stream.cli._worker_options import quiet
from stream.config.settings import load_settings


def cmd_migrate(args: argparse.Namespace) -> int:
    quiet(args)
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


def register(sub: argparse._SubParsersAction) -> None:
    m = sub.add_parser("migrate", help="upgrade the ledger database (or check / downgrade it)")
    m.add_argument("--database", help="SQLAlchemy URL (default: ANONSTREAM_DATABASE_URL, else SQLite)")
    m.add_argument("--revision", default="head", help="target revision (default head)")
    m.add_argument("--downgrade", metavar="REV", help="downgrade to REV (e.g. base)")
    m.add_argument("--check", action="store_true", help="fail if the models and migrations differ")
    m.set_defaults(func=cmd_migrate)
