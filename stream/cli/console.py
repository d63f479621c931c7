"""Operator commands: ``anonstream console``, ``anonstream releases list|show|verify``, ``anonstream status``.

They read the configured ledger database (ANONSTREAM_DATABASE_URL / --database, else SQLite under
./var) and, for lag and re-verification, the configured broker (ANONSTREAM_BROKER_URL / --broker).
Output shows aggregates only: no identifiers, no values of single pending reports.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

from core.errors import InputDataError, ParamsError
from stream.cli.risk import format_risk

CONSOLE_HELP = """\
Serve the operator console (HTML pages + JSON API) against the configured database: releases and
their metrics and plots, pool / DLQ / lag / worker health, and the controls (pause / resume a
station, re-verify a release from the output topic, release a held window), which need
ANONSTREAM_OPERATOR_TOKEN. Without a token configured the console is read-only. In production
(ANONSTREAM_MODE=production) every page needs the token: browsers sign in at /login, API clients
send `Authorization: Bearer <token>`; repeated wrong tokens are slowed down and logged.

Example:
  ANONSTREAM_OPERATOR_TOKEN=... anonstream console --port 6067 --database sqlite:///var/demo/anonstream.db
"""


def _service(args: argparse.Namespace, need_broker: bool = False) -> Any:
    from stream.config.settings import load_settings
    from stream.console.service import ConsoleService
    from stream.ops.locate import check_database, resolve

    settings = resolve(load_settings(database_url=getattr(args, "database", None),  # flag > env > instance.json
                                     broker_url=getattr(args, "broker", None), spec=getattr(args, "spec", None)),
                       need_database=True, need_broker=need_broker)
    check_database(settings.db_url())  # unreachable: one line, exit 3
    return ConsoleService(settings, broker_timeout_s=getattr(args, "broker_timeout", 8.0))


def _guard(fn: Callable[[], Any]) -> Any:
    """Map console and database errors to the CLI's one-line errors (exit 2)."""
    from sqlalchemy.exc import OperationalError, ProgrammingError

    from stream.console.controls import ControlError

    try:
        return fn()
    except ControlError as exc:
        raise InputDataError(str(exc), reason="console") from None
    except (OperationalError, ProgrammingError) as exc:
        raise ParamsError("the ledger database is unreachable or not migrated (run `anonstream migrate`): "
                          f"{type(exc.orig).__name__}", reason="database") from None


def _print_json(obj: Any) -> None:
    print(json.dumps(obj, indent=2, default=str))


def cmd_console(args: argparse.Namespace) -> int:
    from stream.config.settings import load_settings
    from stream.console import serve
    from stream.ops.locate import check_database, resolve

    settings = resolve(load_settings(database_url=args.database, broker_url=args.broker, spec=args.spec),
                       need_database=True)
    check_database(settings.db_url())
    if settings.operator_token is None:
        print("console: no ANONSTREAM_OPERATOR_TOKEN set, " + ("every page answers 403 in production"
              if settings.mode == "production" else "controls are disabled (read-only)"), flush=True)
    return serve(settings, host=args.host, port=args.port,
                 on_ready=lambda url: print(f"console: serving on {url}", flush=True))


def cmd_list(args: argparse.Namespace) -> int:
    from db.console_queries import ReleaseFilter
    from stream.console.service import parse_when

    svc = _service(args)
    f = _guard(lambda: ReleaseFilter(station=args.station, since=parse_when(args.since),
                                     until=parse_when(args.until, end_of_day=True), limit=args.limit))
    data = _guard(lambda: svc.releases(f))
    if args.json:
        _print_json(data)
        return 0
    head = f"{'released at (UTC)':19}  {'release':24}  {'window':28}  {'engine':10} {'k':>3} {'l':>3} " \
           f"{'loss':>6} {'rel':>6} {'supp':>5} {'held':>5}  state"
    print(head)
    for r in data["releases"]:
        w = r["window"]
        loss = f"{r['information_loss']:.3f}" if isinstance(r["information_loss"], float) else "-"
        print(f"{(r['created_at'] or '')[:19].replace('T', ' '):19}  {r['id']:24}  "
              f"{(w['key'] + ' ' + (w['start'] or '')[:10] + ' #' + str(w['seq']))[:28]:28}  {r['engine'][:10]:10} "
              f"{r['k']:>3} {r['l'] if r['l'] is not None else '-':>3} {loss:>6} {r['released']:>6} "
              f"{r['suppressed']:>5} {r['held_back']:>5}  {r['state']}")
    print(f"{len(data['releases'])} of {data['total']} release(s)")
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    svc = _service(args)
    d = _guard(lambda: svc.release(args.id))
    if d is None:
        raise InputDataError(f"no release {args.id!r} in the ledger", reason="console")
    if args.json:
        _print_json(d)
        return 0
    w, an = d["window"], d.get("analysis") or {}
    cs = an.get("class_sizes") or {}
    print(f"release {d['id']}  ({d['state']}, stored {d['created_at']}, published {d['published_at']})")
    print(f"  window    {w['key']} {w['start']} .. {w['end']} #{w['seq']}")
    print(f"  stations  {', '.join(d['stations'])}")
    print(f"  engine    {d['engine']}  params {json.dumps(d['params'])}  seed {d['seed']}")
    verdict = "passed" if (d.get("verification") or {}).get("ok") else "FAILED"
    print(f"  privacy   k={d['k']} l={d['l']}  verifier {verdict}")
    print(f"  counts    received {d['received']}  released {d['released']}  suppressed {d['suppressed']}  "
          f"held back {d['held_back']}  blocked {d['blocked']}")
    print(f"  classes   {cs.get('classes')}  size min/median/max {cs.get('min')}/{cs.get('median')}/{cs.get('max')}")
    loss = d.get("per_attribute_loss") or {}
    if isinstance(d.get("information_loss"), float):
        print(f"  info loss {d['information_loss']:.4f}  per attribute: "
              + ", ".join(f"{k} {v:.3f}" for k, v in loss.items()))
    risk = ((d.get("manifest") or {}).get("privacy") or {}).get("risk")
    if risk:
        print("  re-identification risk:")
        print("\n".join(format_risk(risk, indent="    ")))
    if an.get("offences"):
        print("  offence frequency within its classes (mean / max share; overall share):")
        for r in an["offences"]:
            sev = f" (severity {r['severity']:g})" if r.get("severity") is not None else ""
            print(f"    {r['value'][:28]:28}{sev:16} {100 * r['mean']:5.1f}% / {100 * r['max']:5.1f}%; "
                  f"{100 * r['overall']:5.1f}% of {an['records']}")
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    svc = _service(args, need_broker=True)
    res = _guard(lambda: svc.reverify(args.id, "cli", timeout_s=args.timeout))
    if args.json:
        _print_json(res)
    else:
        print(f"release {res['release_id']}: {'OK' if res['ok'] else 'FAILED'}")
        print(f"  records on {res['topic']}: {res['records_found']} of {res['records_expected']} "
              f"({res['duplicates']} duplicate(s)); checksum {'matches' if res['checksum_ok'] else 'DIFFERS'}")
        print(f"  recomputed k={res['k']} l={res['l_distinct']} (required k={res['k_required']} l={res['l_required']}; "
              f"stored k={res['k_stored']} l={res['l_stored']})")
        for f in res["failures"]:
            print(f"  - {f}")
        if not res["ok"]:
            from stream.cli.releases import missing_reason

            why = missing_reason(svc, args.id, res)
            if why:
                print(f"  why: {why}")
    return 0 if res["ok"] else 1


def _age(s: float | None) -> str:
    return "-" if s is None else (f"{s:.0f}s" if s < 120 else f"{s / 60:.0f}min")


def cmd_status(args: argparse.Namespace) -> int:
    svc = _service(args)
    h = _guard(svc.health)
    if args.feed:
        return _feed_status(h, args.feed, args.json)
    if args.json:
        _print_json(h)
        return 0
    wk, pool, dlq, lag = h["worker"], h["pool"], h["dlq"], h["lag"]
    act = wk.get("activity") or {}
    print(f"worker    {wk.get('status')}; last ingest {act.get('last_ingest_at') or '-'}; "
          f"last release {act.get('last_release_at') or '-'}; releases {act.get('releases_by_state')}")
    for b in wk.get("heartbeats") or []:
        print(f"          {b['worker']}: heartbeat {_age(b['heartbeat_age_s'])} ago, partitions {b['partitions']}")
    print(f"pool      {pool['pending_total']} pending; oldest {_age(pool['oldest_pending_age_s'])}")
    for r in pool["stations"]:
        print(f"          {r['station']:12} pending {r['pending']:>6}  oldest {_age(r['oldest_pending_age_s']):>6}  "
              f"released {r['released']:>7}  suppressed {r['suppressed']:>5}  blocked {r.get('blocked', 0):>5}  "
              f"duplicates {r.get('duplicates', 0):>5}  corrections replaced {r.get('corrections_replaced', 0)}"
              f" / not re-released {r.get('corrections_released', 0)}{'  PAUSED' if r.get('paused') else ''}")
    print(_linking_line(h))
    print(f"dlq       {dlq['total']} rejected: " + (", ".join(f"{k} {v}" for k, v in dlq["by_reason"].items()) or "-"))
    if lag.get("error"):
        print(f"lag       unavailable: {lag['error']}")
    else:
        print(f"lag       {lag['total']} on {lag['topic']} (group {lag['group']}, {len(lag['partitions'])} partitions)")
    ws = h["windows"]
    print(f"windows   {ws['by_state']}; held {len(ws['held'])}, carried {len(ws['carried'])}")
    for w in ws["held"]:
        print(f"          HELD {w['id']}: {w['reason']}")
    feeds = h.get("feeds") or []
    if [f["feed"] for f in feeds] not in ([], ["default"]):
        print("feeds")
        for f in feeds:
            print(_feed_line(f))
    return 0


def _feed_line(f: dict[str, Any]) -> str:
    return (f"          {f['feed']:12} pending {f['pending']:>6}  oldest {_age(f['oldest_pending_age_s']):>6}  "
            f"released {f['released']:>7}  suppressed {f['suppressed']:>5}  blocked {f['blocked']:>5}  "
            f"dlq {f.get('dlq', 0):>5}  windows {f['windows']}  releases {f['releases']}")


def _feed_status(h: dict[str, Any], feed: str, as_json: bool) -> int:
    """``status --feed NAME``: that feed's pool, windows and releases, and its held / carried windows."""
    found = [f for f in h.get("feeds") or [] if f["feed"] == feed]
    if not found:
        known = ", ".join(f["feed"] for f in h.get("feeds") or []) or "none yet"
        raise InputDataError(f"no feed named {feed!r} in the ledger (feeds: {known})", reason="unknown-feed")
    prefix = "" if feed == "default" else f"{feed}/"
    ws = h["windows"]
    mine = [w for w in ws["held"] + ws["carried"] if w["key"].startswith(prefix)
            and (prefix or "/" not in w["key"].split(":", 1)[0])]
    if as_json:
        _print_json({"feed": found[0], "windows": mine})
        return 0
    print(f"feed      {feed}")
    print(_feed_line(found[0]))
    for w in mine:
        print(f"          {w['state'].upper()} {w['id']}: {w['reason']}")
    return 0


def _linking_line(h: dict[str, Any]) -> str:
    """Reports the linking guard blocked, per rule (report id, content fingerprint, person)."""
    by: dict[str, int] = {}
    for c in h.get("duplicates") or []:
        if c.get("kind") == "link-guard":
            by[c["reason"]] = by.get(c["reason"], 0) + int(c["count"])
    text = ", ".join(f"{rule} {n}" for rule, n in sorted(by.items())) or "none"
    return f"linking   blocked (already released): {text}"


def register(sub: argparse._SubParsersAction) -> None:
    from stream.cli import releases
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--database", help="SQLAlchemy URL (default: ANONSTREAM_DATABASE_URL, else SQLite)")
    common.add_argument("--broker", help="kafka://host:port for lag and re-verification (ANONSTREAM_BROKER_URL)")
    common.add_argument("--spec", help="dataset spec (default: crime)")
    fmt = argparse.RawDescriptionHelpFormatter

    c = sub.add_parser("console", parents=[common], help="serve the operator console (web)",
                       description=CONSOLE_HELP, formatter_class=fmt)
    c.add_argument("--port", type=int, default=6067, help="port (default 6067)")
    c.add_argument("--host", help="bind address (default: ANONSTREAM_WEB_HOST, 127.0.0.1)")
    c.set_defaults(func=cmd_console)

    r = sub.add_parser("releases", help="list, show, re-verify, re-publish or export releases in the ledger")
    rs = r.add_subparsers(dest="releases_command", metavar="ACTION", required=True)
    lst = rs.add_parser("list", parents=[common], help="releases, newest first")
    lst.add_argument("--station", help="only releases containing this station")
    lst.add_argument("--since", help="released on or after DATE (YYYY-MM-DD) or an ISO time")
    lst.add_argument("--until", help="released on or before DATE (YYYY-MM-DD) or before an ISO time")
    lst.add_argument("--limit", type=int, default=50, help="at most this many (default 50)")
    lst.add_argument("--json", action="store_true", help="print JSON")
    lst.set_defaults(func=cmd_list)
    show = rs.add_parser("show", parents=[common], help="one release: metrics, classes, offence frequencies")
    show.add_argument("id")
    show.add_argument("--json", action="store_true", help="print JSON")
    show.set_defaults(func=cmd_show)
    ver = rs.add_parser("verify", parents=[common],
                        help="read a release back from the output topic and recompute k and l (exit 1 if it fails)")
    ver.add_argument("id")
    ver.add_argument("--timeout", type=float, default=30.0, help="seconds to read the topic (default 30)")
    ver.add_argument("--json", action="store_true", help="print JSON")
    ver.set_defaults(func=cmd_verify)

    rep = rs.add_parser("republish", parents=[common],
                        help="publish releases again from the ledger (records, then manifest)")
    rep.add_argument("ids", nargs="+", metavar="ID")
    rep.set_defaults(func=releases.cmd_republish)
    exp = rs.add_parser("export", parents=[common], help="write a release from the ledger as JSON lines")
    exp.add_argument("id")
    exp.add_argument("--out", required=True, help="output file (records in order, then the manifest)")
    exp.set_defaults(func=releases.cmd_export)

    st = sub.add_parser("status", parents=[common], help="pool, DLQ, lag, windows and worker health in one screen")
    st.add_argument("--json", action="store_true", help="print JSON")
    st.add_argument("--feed", help="only this feed (several feeds in one deployment): its pool, windows, releases")
    st.add_argument("--broker-timeout", type=float, default=8.0, help="seconds to wait for the broker (default 8)")
    st.set_defaults(func=cmd_status)
