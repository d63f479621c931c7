"""``anonstream`` command line: one sub-command module per area, registered explicitly below."""

from __future__ import annotations

import argparse
import importlib
import logging
import sys

from core.errors import AnonymizationError

# Each module exposes ``register(subparsers)``; handlers are stored with ``set_defaults(func=...)``.
COMMAND_MODULES = [
    "stream.cli.batch",
    "stream.cli.front",
    "stream.cli.service",
    "stream.cli.stations",
    "stream.cli.registry",
    "stream.cli.console",
    "stream.cli.generate",
    "stream.cli.risk",
]

DESCRIPTION = """\
Streaming anonymization service for crime reports and other record streams.

Common tasks:
  anonstream engines                      list engines, their parameters and defaults
  anonstream anonymize IN.csv --spec adult --engine optimal -k 5 --out OUT.csv
  anonstream risk IN.csv --spec adult --sampling-fraction 0.01   re-identification risk before anonymizing
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="anonstream", description=DESCRIPTION,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug output")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except AnonymizationError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
