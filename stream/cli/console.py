"""``anonstream console``: serve the operator console (web) against the configured ledger."""

from __future__ import annotations

import argparse

from stream.cli._ledger_options import ledger_options

CONSOLE_HELP = """\
Serve the operator console (HTML pages + JSON API) against the configured database: releases and
their metrics and plots, pool / DLQ / lag / worker health, and the controls (pause / resume a
station, re-verify a release from the output topic, release a held window), which need
ANONSTREAM_OPERATOR_TOKEN. Without a token configured the console is read-only, on loopback only
(--host 0.0.0.0 needs a token). In production (ANONSTREAM_MODE=production), or bound beyond
loopback, every page needs the token: browsers sign in at /login, API clients
send `Authorization: Bearer <token>`; repeated wrong tokens are slowed down and logged.

Example:
  ANONSTREAM_OPERATOR_TOKEN=... anonstream console --port 6067 --database sqlite:///var/demo/anonstream.db
"""


def cmd_console(args: argparse.Namespace) -> int:
    from stream.config.settings import load_settings
    from stream.console.server import check_bind, serve
    from stream.ops.locate import check_database, resolve

    settings = resolve(load_settings(database_url=args.database, broker_url=args.broker, spec=args.spec),
                       need_database=True)
    check_bind(settings, args.host or settings.web_host)  # beyond loopback: a token, or one error line
    check_database(settings.db_url())
    if settings.operator_token is None:
        print("console: no ANONSTREAM_OPERATOR_TOKEN set, " + ("every page answers 403 in production"
              if settings.mode == "production" else "controls are disabled (read-only)"), flush=True)
    return serve(settings, host=args.host, port=args.port,
                 on_ready=lambda url: print(f"console: serving on {url}", flush=True))


def register(sub: argparse._SubParsersAction) -> None:
    c = sub.add_parser("console", parents=[ledger_options()], help="serve the operator console (web)",
                       description=CONSOLE_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    c.add_argument("--port", type=int, default=6067, help="port (default 6067)")
    c.add_argument("--host", help="bind address (default: ANONSTREAM_WEB_HOST, 127.0.0.1)")
    c.set_defaults(func=cmd_console)
