"""``anonstream stop``: stop the worker of this data folder (one started with ``run --detach``, or ``run``)."""

from __future__ import annotations

import argparse
import sys

from stream.config.settings import load_settings

STOP_HELP = """\
Stop this data folder's worker (ANONSTREAM_HOME, default ./var): the one `anonstream run --detach`
started, or a `run` in another terminal with the embedded broker. The stop is the same as Ctrl-C:
the worker finishes what it is doing, stops its embedded broker, and pending reports stay in the
ledger for the next `anonstream run`. Exit 0 when it stopped (or none was running), 1 when it was
still running after --timeout seconds.

Example:
  anonstream run --detach && anonstream push reports.jsonl && anonstream stop
"""


def cmd_stop(args: argparse.Namespace) -> int:
    from stream.ops.background import LOG_FILE, log_tail, stop_worker

    settings = load_settings()
    pid, gone = stop_worker(settings, args.timeout)
    home = settings.data_dir.resolve()
    if pid is None:
        print(f"anonstream stop: no worker running for {home}", flush=True)
        return 0
    if not gone:
        print(f"error: worker {pid} still running after {args.timeout:.0f}s; see {home / LOG_FILE}", file=sys.stderr)
        return 1
    last = [line for line in log_tail(home / LOG_FILE, 5).splitlines() if line.startswith("anonstream run: stopped")]
    print(last[-1] if last else f"anonstream stop: worker {pid} stopped", flush=True)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("stop", help="stop this data folder's worker (started with run --detach)",
                       description=STOP_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for it to stop (default 120)")
    p.set_defaults(func=cmd_stop)
