"""``anonstream budget show|set-cap|add-feed``: the ledger's privacy policy and every block's budget."""

from __future__ import annotations

import argparse
import getpass
import math
from typing import Any

from core.errors import ParamsError

BUDGET_HELP = """\
The privacy budget of differentially private counts, as the ledger keeps it (docs/privacy.md).

The ledger owns its privacy policy: the block scheme, each block's lifetime cap (as epsilon at delta),
the largest epsilon one query may spend and the feeds. The first run that counts with differential
privacy records it (a worker's start, or `anonstream aggregate --ledger`); a run that disagrees is
refused. These commands are the only way to change it, and each change is in the audit log.

  show       the policy, and every block's cap, spend and what is left (epsilon and rho)
  set-cap    set the lifetime cap of every block (or of one, --block); raising it weakens the guarantee
  add-feed   let another feed charge the ledger's blocks

Examples:
  anonstream budget show --ledger var/ledger.db
  anonstream budget set-cap --epsilon 12 --ledger var/ledger.db
  anonstream budget set-cap --epsilon 5 --block station:S1/day:2024-01-01
"""


def _db(args: argparse.Namespace) -> Any:
    from db import Database
    from stream.batch.history import open_ledger
    from stream.config.settings import load_settings

    settings = load_settings()
    if args.ledger:
        return open_ledger(args.ledger, settings)[0]
    return Database(settings.db_url())


def _guarded(args: argparse.Namespace, fn: Any) -> Any:
    from sqlalchemy.exc import OperationalError, ProgrammingError

    db = _db(args)
    try:
        return fn(db)
    except (OperationalError, ProgrammingError) as exc:
        raise ParamsError("the ledger database is unreachable or not migrated (run `anonstream migrate`): "
                          f"{type(exc.orig).__name__}", reason="database") from None
    finally:
        db.dispose()


def _eps(rho: float, delta: float) -> float:
    from core.dp.mechanism import epsilon_from_rho

    return epsilon_from_rho(max(rho, 0.0), delta)


def show_rows(db: Any) -> tuple[Any, list[dict[str, Any]]]:
    """The recorded policy and every block's cap, spend and remainder (ρ and ε at the policy's δ)."""
    from db.budget import all_blocks
    from db.dp_policy import read_policy

    with db.read() as s:
        policy = read_policy(s)
        blocks = all_blocks(s)
    delta = policy.delta if policy is not None else 1e-6
    rows = [{"block": b.block, "cap_rho": float(b.cap_rho), "spent_rho": float(b.spent_rho),
             "remaining_rho": max(float(b.cap_rho) - float(b.spent_rho), 0.0),
             "cap_epsilon": _eps(float(b.cap_rho), delta), "spent_epsilon": _eps(float(b.spent_rho), delta),
             "remaining_epsilon": _eps(max(float(b.cap_rho) - float(b.spent_rho), 0.0), delta)} for b in blocks]
    return policy, rows


def cmd_show(args: argparse.Namespace) -> int:
    import json
    from dataclasses import asdict

    policy, rows = _guarded(args, show_rows)
    if args.json:
        print(json.dumps({"policy": None if policy is None else asdict(policy), "blocks": rows}, indent=2,
                         default=list))
        return 0
    print("policy: " + (policy.describe() if policy is not None else "none recorded yet (the first run that counts "
                                                                   "with differential privacy records it)"))
    if not rows:
        print("no block has been charged yet")
        return 0
    print(f"{'block':<42} {'epsilon left':>12} {'of cap':>8} {'rho left':>10} {'spent':>10}")
    for r in rows:
        print(f"{r['block']:<42} {r['remaining_epsilon']:>12.3g} {r['cap_epsilon']:>8.3g} "
              f"{r['remaining_rho']:>10.4g} {r['spent_rho']:>10.4g}")
    return 0


def cmd_set_cap(args: argparse.Namespace) -> int:
    from core.dp.mechanism import EPSILON_RANGE, rho_from_epsilon
    from db.dp_policy import PolicyMismatch, read_policy, set_cap

    if not (EPSILON_RANGE[0] <= args.epsilon <= EPSILON_RANGE[1]) or not math.isfinite(args.epsilon):
        raise ParamsError(f"--epsilon must be between {EPSILON_RANGE[0]:g} and {EPSILON_RANGE[1]:g}")

    def run(db: Any) -> tuple[float, float, float]:
        with db.unit() as s:
            policy = read_policy(s)
            if policy is None:
                raise ParamsError("the ledger has no privacy policy yet: the first run that counts with "
                                  "differential privacy records it")
            cap_rho = rho_from_epsilon(args.epsilon, policy.delta)
            try:
                old, new = set_cap(s, args.epsilon, cap_rho, actor=args.actor, block=args.block)
            except PolicyMismatch as exc:
                raise ParamsError(str(exc)) from None
            return old, new, policy.delta

    old, new, delta = _guarded(args, run)
    print(f"cap of {args.block or 'every block'}: epsilon {_eps(old, delta):.3g} -> {args.epsilon:g} "
          f"(rho {old:.4g} -> {new:.4g}); recorded in the audit log as {args.actor}")
    return 0


def cmd_add_feed(args: argparse.Namespace) -> int:
    from db.dp_policy import PolicyMismatch, add_feed

    def run(db: Any) -> bool:
        with db.unit() as s:
            try:
                return add_feed(s, args.feed, actor=args.actor)
            except PolicyMismatch as exc:
                raise ParamsError(str(exc)) from None

    added = _guarded(args, run)
    print(f"feed {args.feed} {'added to' if added else 'was already in'} the ledger's privacy policy")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("budget", help="the ledger's privacy policy and budget: show, set-cap, add-feed",
                       description=BUDGET_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--ledger", metavar="URL", help="a SQLite file or a migrated URL (default: the configured "
                        "database, ANONSTREAM_DATABASE_URL, else the embedded SQLite ledger)")
    verbs = p.add_subparsers(dest="verb", required=True)
    show = verbs.add_parser("show", parents=[common], help="the policy and every block's budget")
    show.add_argument("--json", action="store_true", help="machine-readable output")
    show.set_defaults(func=cmd_show)
    cap = verbs.add_parser("set-cap", parents=[common], help="set the lifetime cap (audited)")
    cap.add_argument("--epsilon", type=float, required=True, help="the new cap, as epsilon at the policy's delta")
    cap.add_argument("--block", help="one block only (default: the policy's cap, for every block)")
    cap.add_argument("--actor", default=getpass.getuser(), help="who (for the audit log; default: your user)")
    cap.set_defaults(func=cmd_set_cap)
    feed = verbs.add_parser("add-feed", parents=[common], help="let another feed charge the ledger (audited)")
    feed.add_argument("feed", help="the feed's name")
    feed.add_argument("--actor", default=getpass.getuser(), help="who (for the audit log; default: your user)")
    feed.set_defaults(func=cmd_add_feed)
