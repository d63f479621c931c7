"""``anonstream status``: pool, dead letters, lag, windows and worker health in one screen."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from core.errors import InputDataError
from stream.cli._ledger_options import console_service, guarded, ledger_options, print_json
from stream.console.verdict import EXIT_MEANINGS, Verdict


def _age(s: float | None) -> str:
    return "-" if s is None else (f"{s:.0f}s" if s < 120 else f"{s / 60:.0f}min")


def _time(iso: str | None) -> str:
    return (iso or "-")[:19].replace("T", " ")


def _counts(by: dict[str, Any] | None) -> str:
    """``published 4, stored 1`` (``none`` when empty), never a dict's repr."""
    return ", ".join(f"{k} {v}" for k, v in (by or {}).items()) or "none"


def _in_flight(h: dict[str, Any]) -> list[str]:
    """What the worker still has to do with what it was given (empty: settled). Reports in open
    windows stay pending by design (late rows may still come), so they do not count."""
    out = []
    lag = h["lag"]
    if not lag.get("error") and lag.get("total"):
        out.append(f"{lag['total']} report(s) not yet read")
    closing = (h["windows"].get("by_state") or {}).get("closing", 0)
    if closing:
        out.append(f"{closing} window(s) being released")
    stored = ((h["worker"].get("activity") or {}).get("releases_by_state") or {}).get("stored", 0)
    if stored:
        out.append(f"{stored} release(s) stored, not yet published")
    return out


def _snapshot(h: dict[str, Any]) -> dict[str, Any]:
    """The counts that change while the worker works (never ages or times, which change every second)."""
    return {"pending": h["pool"]["pending_total"],
            "stations": sorted((r["station"], r["pending"], r["released"], r["suppressed"], r.get("blocked", 0))
                               for r in h["pool"]["stations"]),
            "windows": h["windows"].get("by_state"), "dlq": h["dlq"]["total"],
            "releases": ((h["worker"].get("activity") or {}).get("releases_by_state"))}


def wait_settled(svc: Any, timeout: float) -> tuple[dict[str, Any], list[str]]:
    """Poll the health until the verdict is settled: at once when waiting cannot change it (a held window,
    no worker, the broker gone: :attr:`Verdict.settled`), else when nothing is in flight and two readings
    agree, or ``timeout`` seconds pass (then what is still in flight)."""
    deadline, shown = time.monotonic() + timeout, time.monotonic()
    last: dict[str, Any] | None = None
    while True:
        h = guarded(svc.health)
        if Verdict.from_dict(h["verdict"]).settled:
            return h, []
        busy = _in_flight(h)
        snapshot = _snapshot(h)
        if not busy and snapshot == last:
            return h, []
        if time.monotonic() > deadline:
            return h, busy or ["the counts were still changing"]
        if time.monotonic() - shown > 10:
            shown = time.monotonic()
            print("status: waiting: " + ("; ".join(busy) or "counts still changing"), file=sys.stderr, flush=True)
        last = snapshot
        time.sleep(1.0)


def cmd_status(args: argparse.Namespace) -> int:
    svc = console_service(args)
    busy: list[str] = []
    if args.wait is not None:
        h, busy = wait_settled(svc, args.wait)
    else:
        h = guarded(svc.health)
    v = h["verdict"]  # the deployment's verdict (stream/console/verdict.py), as /health shows it
    code = 1 if busy else int(v["code"])  # exit codes: stream/console/verdict.py, docs/operations.md
    if busy:
        print(f"status: still busy after {args.wait:.0f}s: {'; '.join(busy)}", file=sys.stderr)
    if args.feed:
        return _feed_status(h, args.feed, args.json) or code
    if args.json:
        print_json(h)
        return code
    print(v["line"])
    for f in v["findings"][1:]:
        print(f"  also: {f['what']}: {f['action']}")
    wk, pool, dlq, lag = h["worker"], h["pool"], h["dlq"], h["lag"]
    act = wk.get("activity") or {}
    print(f"worker    {wk.get('status')}; last ingest {_time(act.get('last_ingest_at'))}; "
          f"last release {_time(act.get('last_release_at'))}; releases {_counts(act.get('releases_by_state'))}")
    for b in wk.get("heartbeats") or []:
        parts = ", ".join(str(p) for p in b["partitions"]) or "none"
        print(f"          {b['worker']}: heartbeat {_age(b['heartbeat_age_s'])} ago, partitions {parts}")
    print(f"pool      {pool['pending_total']} pending; oldest {_age(pool['oldest_pending_age_s'])}")
    for r in pool["stations"]:
        print(f"          {r['station']:12} pending {r['pending']:>6}  oldest {_age(r['oldest_pending_age_s']):>6}  "
              f"released {r['released']:>7}  suppressed {r['suppressed']:>5}  blocked {r.get('blocked', 0):>5}  "
              f"duplicates {r.get('duplicates', 0):>5}  corrections replaced {r.get('corrections_replaced', 0)}"
              f" / not re-released {r.get('corrections_released', 0)}{'  PAUSED' if r.get('paused') else ''}")
    print(_linking_line(h))
    if any(c.get("kind") == "dp-refused" for c in h.get("duplicates") or []):
        print(_budget_line(h))
    print(f"dlq       {dlq['total']} rejected: " + (", ".join(f"{k} {v}" for k, v in dlq["by_reason"].items()) or "-"))
    if lag.get("error"):
        print(f"lag       unavailable: {lag['error']}")
    else:
        print(f"lag       {lag['total']} on {lag['topic']} (group {lag['group']}, {len(lag['partitions'])} partitions)")
    ws = h["windows"]
    waiting = sum(int(w.get("still_pending") or 0) for w in ws["carried"])
    print(f"windows   {_counts(ws['by_state'])}; held {len(ws['held'])}, carried {len(ws['carried'])}"
          + (f" ({waiting} pending report(s) wait for the next window of their key, too few to release: "
             "`anonstream windows flush --station S` releases them now)" if waiting else ""))
    for w in ws["held"]:
        print(f"          HELD {w['id']}: {w['reason']}")
    feeds = h.get("feeds") or []
    if [f["feed"] for f in feeds] not in ([], ["default"]):
        print("feeds")
        for f in feeds:
            print(_feed_line(f))
    return code


def _feed_line(f: dict[str, Any]) -> str:
    return (f"          {f['feed']:12} pending {f['pending']:>6}  oldest {_age(f['oldest_pending_age_s']):>6}  "
            f"released {f['released']:>7}  suppressed {f['suppressed']:>5}  blocked {f['blocked']:>5}  "
            f"dlq {f.get('dlq', 0):>5}  windows {_counts(f['windows'])}  releases {_counts(f['releases'])}")


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
        print_json({"feed": found[0], "windows": mine})
        return 0
    print(f"feed      {feed}")
    print(_feed_line(found[0]))
    for w in mine:
        print(f"          {w['state'].upper()} {w['id']}: {w['reason']}")
    return 0


def _linking_line(h: dict[str, Any]) -> str:
    """Reports the linking guard blocked, per rule, with what each rule means (report id, content, person)."""
    from stream.wire.manifest import BLOCK_REASONS

    by: dict[str, int] = {}
    for c in h.get("duplicates") or []:
        if c.get("kind") == "link-guard":
            by[c["reason"]] = by.get(c["reason"], 0) + int(c["count"])
    if not by:
        return ("linking   blocked: none (reports sharing their content in one export, such as co-offenders, "
                "are released)")
    text = "; ".join(f"{rule} {n} ({BLOCK_REASONS.get(rule, rule)})" for rule, n in sorted(by.items()))
    return f"linking   blocked {sum(by.values())}, never released: {text}"


def register(sub: argparse._SubParsersAction) -> None:
    st = sub.add_parser("status", parents=[ledger_options()],
                        help="pool, DLQ, lag, windows and worker health in one screen")
    st.add_argument("--json", action="store_true", help="print JSON")
    st.add_argument("--feed", help="only this feed (several feeds in one deployment): its pool, windows, releases")
    st.add_argument("--broker-timeout", type=float, default=4.0, help="seconds to wait for the broker (default 4; a "
                    "broker that does not accept a connection within 2 s is reported at once)")
    st.add_argument("--wait", type=float, nargs="?", const=300.0, metavar="S",
                    help="first wait (up to S seconds, default 300) until the worker has read every pushed report "
                         "and released every window it closed; returns at once with the verdict's code when waiting "
                         "cannot change it (a window held: 4, no worker: 5, the broker gone: 3); exit 1 if it is "
                         "still busy when S runs out")
    st.epilog = ("The first line is the verdict: HEALTHY, or ACTION NEEDED and what to do. Exit codes: 0 healthy, "
                 "1 still busy after --wait, 2 usage, "
                 + ", ".join(f"{c} {m}" for c, m in sorted(EXIT_MEANINGS.items())) + " (docs/operations.md).")
    st.set_defaults(func=cmd_status)


def _budget_line(h: dict[str, Any]) -> str:
    """Releases whose differentially private counts a budget block's cap refused (console: /budget)."""
    by: dict[str, int] = {}
    for c in h.get("duplicates") or []:
        if c.get("kind") == "dp-refused":
            by[c["station"] or "(feed)"] = by.get(c["station"] or "(feed)", 0) + int(c["count"])
    text = ", ".join(f"{st} {n}" for st, n in sorted(by.items()))
    return (f"budget    {sum(by.values())} release(s) went out without counts, a block's privacy budget cap "
            f"refused them ({text}); each block's budget: console /budget")
