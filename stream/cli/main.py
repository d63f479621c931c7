"""``anonstream`` command line: one module per command, named after it, registered explicitly below.

Start-up is kept short: this module imports only the standard library. ``anonstream --help`` lists
the commands from the table below without importing any of them; running a command imports only
the module that defines it (each module keeps its heavy imports inside its command functions).
"""

from __future__ import annotations

import argparse
import importlib
import sys

from stream.cli import _exit_codes as exit_codes
from stream.ops.kernel_cache import use_kernel_cache

# command -> (module exposing ``register(subparsers)``, one-line help). Handlers are stored with
# ``set_defaults(func=...)`` by the module; the help line here is what ``anonstream --help`` shows.
COMMANDS: dict[str, tuple[str, str]] = {
    "anonymize": ("stream.cli.anonymize", "anonymize a CSV, JSON-lines or Parquet file with one engine"),
    "engines": ("stream.cli.engines", "list engines with their parameters and defaults"),
    "warmup": ("stream.cli.warmup", "compile or load every engine's kernels once (run after installing)"),
    "front": ("stream.cli.front", "Pareto front of privacy and loss (PBG-EA): table and PNG"),
    "run": ("stream.cli.run", "run a worker (embedded broker if none configured)"),
    "stop": ("stream.cli.stop", "stop this data folder's worker (started with run --detach)"),
    "demo": ("stream.cli.demo", "embedded broker + worker + simulated stations, one day"),
    "migrate": ("stream.cli.migrate", "upgrade the ledger database (or check / downgrade it)"),
    "push": ("stream.cli.push", "validate a station's reports (CSV, JSON lines, Parquet) and push them"),
    "consume": ("stream.cli.consume", "write each complete release as CSV, Parquet or JSON lines (resumes)"),
    "console": ("stream.cli.console", "serve the operator console (web)"),
    "releases": ("stream.cli.releases", "list, show, re-verify, re-publish or export releases"),
    "status": ("stream.cli.status", "pool, DLQ, lag, windows and worker health in one screen"),
    "stations": ("stream.cli.stations", "register, list or remove the stations allowed to push"),
    "windows": ("stream.cli.windows", "release the reports waiting below min_release_rows now (flush)"),
    "generate": ("stream.cli.generate", "generate synthetic data sets"),
    "aggregate": ("stream.cli.aggregate", "differentially private counts of a file, charged to a ledger's budget"),
    "budget": ("stream.cli.budget", "the ledger's privacy policy and budget: show, set-cap (audited), add-feed"),
    "risk": ("stream.cli.risk", "re-identification risk profile of a table (before anonymization)"),
    "spec": ("stream.cli.spec", "draft a spec from your own file, check a file against a spec"),
    "keys": ("stream.cli.keys", "the public key of the releases, a new secret, or every secret file (init)"),
}

DESCRIPTION = """\
Streaming anonymization service for crime reports and other record streams.

Common tasks:
  anonstream engines                      list engines, their parameters and defaults
  anonstream anonymize IN.csv --spec adult --engine optimal -k 5 --out OUT.csv
  anonstream risk IN.csv --spec adult --sampling-fraction 0.01   re-identification risk before anonymizing
  anonstream warmup                       compile the engines' kernels once after installing
"""


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser; only ``command``'s module is imported (the others are listed by name and help)."""
    parser = argparse.ArgumentParser(prog="anonstream", description=DESCRIPTION,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug output")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    if command in COMMANDS:
        importlib.import_module(COMMANDS[command][0]).register(sub)
        own = sub.choices[command]
        own.epilog = (own.epilog + "\n\n" if own.epilog else "") + exit_codes.help_line(command)
    for name, (_module, help_line) in COMMANDS.items():
        if name not in sub.choices:
            sub.add_parser(name, help=help_line)
    return parser


def _command(argv: list[str]) -> str | None:
    return next((a for a in argv if not a.startswith("-")), None)


# commands that run engines: they may use a spare core (large roll-ups, a nested release's free-bands run)
ENGINE_COMMANDS = ("anonymize", "front", "spec", "risk")


def main(argv: list[str] | None = None) -> int:
    entry = argv is None  # the process entry point (not a test calling main): choose the kernel cache
    if entry:
        use_kernel_cache()
    argv = sys.argv[1:] if argv is None else list(argv)
    if entry and _command(argv) in ENGINE_COMMANDS:
        from stream.ops.cores import use_spare_cores

        use_spare_cores()
    parser = build_parser(_command(argv))
    args = parser.parse_args(argv)
    from stream.ops import logs

    logs.setup(verbose=args.verbose)  # one format (ANONSTREAM_LOG_FORMAT=json), Kafka clients at WARNING
    if not getattr(args, "func", None):
        parser.print_help()
        return exit_codes.USAGE
    from core.errors import AnonymizationError

    try:
        return int(args.func(args) or 0)
    except AnonymizationError as exc:  # exit codes: stream/cli/_exit_codes.py (stream/ops/locate.py)
        print(f"error: {exc.message}", file=sys.stderr)
        return exit_codes.UNREACHABLE if exc.reason == "service-unreachable" else exit_codes.USAGE
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return exit_codes.INTERRUPTED
    except Exception as exc:  # a broker or database that went away mid-command: one line, exit 3
        from stream.ops.locate import unreachable_message

        message = unreachable_message(exc)
        if message is None:
            raise
        print(f"error: {message}", file=sys.stderr)
        return exit_codes.UNREACHABLE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
