"""``anonstream releases list|show|verify|republish|export|report``: the releases in the ledger;
``releases check``: release files on disk against their signed manifests."""

from __future__ import annotations

import argparse
import json
from typing import Any

from core.errors import InputDataError
from stream.cli._ledger_options import console_service, guarded, ledger_options, print_json


def cmd_list(args: argparse.Namespace) -> int:
    from db.console_queries import ReleaseFilter
    from stream.console.service import parse_when

    svc = console_service(args)
    f = guarded(lambda: ReleaseFilter(station=args.station, since=parse_when(args.since),
                                     until=parse_when(args.until, end_of_day=True), limit=args.limit))
    data = guarded(lambda: svc.releases(f))
    if args.json:
        print_json(data)
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
              f"{r['suppressed']:>5} {r['held_back']:>5}  {r['state']}"
              + (f"  ⚠ act: {r['act']}" if r.get("act") else ""))  # a warning to act on (docs/risk.md)
    print(f"{len(data['releases'])} of {data['total']} release(s)")
    return 0


def _release_id(svc: Any, given: str) -> str:
    """``given``, or the newest release's id for ``latest``."""
    if given != "latest":
        return given
    from db.console_queries import ReleaseFilter

    newest = guarded(lambda: svc.releases(ReleaseFilter(limit=1)))["releases"]
    if not newest:
        raise InputDataError("no release in the ledger yet", reason="console")
    return str(newest[0]["id"])


def cmd_show(args: argparse.Namespace) -> int:
    svc = console_service(args)
    args.id = _release_id(svc, args.id)
    d = guarded(lambda: svc.release(args.id))
    if d is None:
        raise InputDataError(f"no release {args.id!r} in the ledger", reason="console")
    if args.json:
        print_json(d)
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
        from stream.cli.risk import format_risk  # reads tables (pandas): only where a risk profile is printed
        print("\n".join(format_risk(risk, indent="    ")))
    if an.get("offences"):
        print("  offence frequency within its classes (mean / max share; overall share):")
        for r in an["offences"]:
            sev = f" (severity {r['severity']:g})" if r.get("severity") is not None else ""
            print(f"    {r['value'][:28]:28}{sev:16} {100 * r['mean']:5.1f}% / {100 * r['max']:5.1f}%; "
                  f"{100 * r['overall']:5.1f}% of {an['records']}")
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    svc = console_service(args, need_broker=True)
    args.id = _release_id(svc, args.id)
    res = guarded(lambda: svc.reverify(args.id, "cli", timeout_s=args.timeout))
    if args.json:
        print_json(res)
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


def missing_reason(svc: Any, release_id: str, res: dict[str, Any]) -> str | None:
    """Why a release's records are missing from the topic, in words an operator can act on."""
    found, expected = res.get("records_found", 0), res.get("records_expected", 0)
    if found >= expected:
        return None
    d = svc.release(release_id) or {}
    fix = f"`anonstream releases republish {release_id}` publishes it again from the ledger"
    if d.get("state") != "published":
        return (f"the release is {d.get('state')!r} in the ledger, not published yet: a running worker publishes "
                f"it (or {fix})")
    if found == 0:
        return (f"it was published at {d.get('published_at')}, but the broker no longer holds it: the broker was "
                f"restarted without its data (the embedded broker keeps topics in memory) or the topic's retention "
                f"expired; {fix}")
    return f"only {found} of {expected} records remain on the topic (retention or data loss); {fix}"


def cmd_republish(args: argparse.Namespace) -> int:
    from db import Database, ReleaseRepository
    from stream.config.settings import load_settings
    from stream.ops.locate import check_broker, check_database, resolve
    from stream.ops.republish import publish_from_ledger, topic_seqs

    settings = resolve(load_settings(database_url=args.database, broker_url=args.broker), need_broker=True,
                       need_database=True)
    check_database(settings.db_url())
    check_broker(settings)
    repo = ReleaseRepository(Database(settings.db_url()))
    ids = list(dict.fromkeys(_release_id(console_service(args), i) if i == "latest" else i for i in args.ids))
    for rid in ids:
        if _state(repo, rid) is None:
            raise InputDataError(f"no release {rid!r} in the ledger", reason="console")
    from db.feeds import feed_of_release
    from stream.config.feeds import feeds

    by_name = {f.feed: f for f in feeds(settings)}
    with repo.db.read() as s:
        owner = {rid: feed_of_release(s, rid) or "default" for rid in ids}
    for rid in ids:  # each release goes back to its own feed's topics
        if owner[rid] not in by_name:
            raise InputDataError(f"release {rid!r} belongs to feed {owner[rid]!r}, which these settings do not "
                                 "declare (set ANONSTREAM_PIPELINES to the deployment's pipelines file)",
                                 reason="console")
    for rid in ids:  # records already on the topic (a re-publish that stopped half-way) are not sent again
        fs = by_name[owner[rid]]
        present = topic_seqs(fs.bootstrap_servers(), fs.topic_anonymized, {rid}) or {}
        sent = publish_from_ledger(fs, repo, [rid], present=present)
        print(f"release {rid}: re-published to {fs.topic_anonymized} ({sent} record(s); {len(present.get(rid, ()))} "
              f"were there already) and {fs.topic_releases}")
    return 0


def _state(repo: Any, release_id: str) -> str | None:
    from db.models import Release

    with repo.db.read() as s:
        rel = s.get(Release, release_id)
        return None if rel is None else rel.state


def cmd_export(args: argparse.Namespace) -> int:
    from pathlib import Path

    from db import Database, ReleaseRepository
    from stream.cli._paths import check_output
    from stream.config.settings import load_settings
    from stream.ops.locate import check_database, resolve
    from stream.ops.republish import export

    check_output("--out", args.out)  # a regular file (or a new one) in an existing folder, before any work
    settings = resolve(load_settings(database_url=args.database), need_database=True)
    check_database(settings.db_url())
    repo = ReleaseRepository(Database(settings.db_url()))
    if args.id == "latest":
        args.id = _release_id(console_service(args), args.id)
    if _state(repo, args.id) is None:
        raise InputDataError(f"no release {args.id!r} in the ledger", reason="console")
    n = export(repo, args.id, Path(args.out))
    print(f"release {args.id}: {n} records and its manifest written to {args.out} (JSON lines, manifest last)")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    """``releases report ID --out FILE.html``: a release's sign-off page; ``releases report --since D --until D
    --out FILE``: one sign-off document for every window of those event-time days (stream/console/report.py)."""
    from stream.cli._paths import check_output
    from stream.io.atomic import write_text_atomic

    check_output("--out", args.out)
    svc = console_service(args)
    if args.since or args.until:
        return _report_period(args, svc)
    if not args.id:
        raise InputDataError("give a release id (or `latest`), or a period with --since and --until", reason="console")
    from stream.console.report import render

    args.id = _release_id(svc, args.id)
    d = guarded(lambda: svc.release(args.id))
    if d is None:
        raise InputDataError(f"no release {args.id!r} in the ledger", reason="console")
    write_text_atomic(args.out, render(d), option="--out")
    act = sum(1 for w in d.get("warnings") or [] if w["kind"] == "act")
    print(f"release {args.id}: sign-off report written to {args.out}"
          + (f" ({act} warning(s) to act on)" if act else ""))
    return 0


def _report_period(args: argparse.Namespace, svc: Any) -> int:
    """The period's sign-off document, as HTML, Markdown or JSON (by ``--format``, else the file's suffix)."""
    from stream.console.period import parse_day, period_data
    from stream.console.report import period_document, period_summary
    from stream.io.atomic import write_text_atomic

    if args.id or not (args.since and args.until):
        raise InputDataError("a period report takes --since and --until (both days YYYY-MM-DD) and no release id",
                             reason="console")
    try:
        since, until = parse_day(args.since, "--since"), parse_day(args.until, "--until")
        p = guarded(lambda: period_data(svc, since, until, args.feed))
    except ValueError as exc:
        raise InputDataError(str(exc), reason="console") from None
    write_text_atomic(args.out, period_document(p, args.format, args.out), option="--out")
    print(f"{period_summary(p)}: sign-off report written to {args.out}")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    """Re-hash every release file under PATH and compare it with the signed manifest beside it."""
    from stream.analyst.check import check_releases, resolve_public_key

    key = resolve_public_key(args.public_key)
    try:
        results = check_releases(args.path, key)
    except (FileNotFoundError, ValueError) as exc:
        raise InputDataError(str(exc), reason="console") from None
    if not results:
        raise InputDataError(f"{args.path}: no release files (.csv, .parquet, .jsonl) found", reason="console")
    failed = [r for r in results if not r.ok]
    if args.json:
        print_json({"ok": not failed, "releases": [{"release_id": r.release_id, "path": str(r.path), "rows": r.rows,
                                                    "ok": r.ok, "problem": r.problem} for r in results]})
    else:
        for r in results:
            print(f"release {r.release_id}: " + (f"OK ({r.rows} rows match the signed manifest)" if r.ok else
                                                 f"CHANGED: {r.problem}") + f"  [{r.path}]")
        print(f"{len(results) - len(failed)} of {len(results)} release file(s) match their signed manifests")
    return 1 if failed else 0


def register(sub: argparse._SubParsersAction) -> None:
    common = ledger_options()
    r = sub.add_parser("releases", help="list, show, re-verify, re-publish or export releases in the ledger; "
                                        "check release files")
    rs = r.add_subparsers(dest="releases_command", metavar="ACTION", required=True)
    lst = rs.add_parser("list", parents=[common], help="releases, newest first")
    lst.add_argument("--station", help="only releases containing this station")
    lst.add_argument("--since", help="released on or after DATE (YYYY-MM-DD) or an ISO time")
    lst.add_argument("--until", help="released on or before DATE (YYYY-MM-DD) or before an ISO time")
    lst.add_argument("--limit", type=int, default=50, help="at most this many (default 50)")
    lst.add_argument("--json", action="store_true", help="print JSON")
    lst.set_defaults(func=cmd_list)
    show = rs.add_parser("show", parents=[common], help="one release: metrics, classes, offence frequencies")
    show.add_argument("id", help="a release id, or `latest`")
    show.add_argument("--json", action="store_true", help="print JSON")
    show.set_defaults(func=cmd_show)
    ver = rs.add_parser("verify", parents=[common],
                        help="read a release back from the output topic and recompute k and l (exit 1 if it fails)")
    ver.add_argument("id", help="a release id, or `latest`")
    ver.add_argument("--timeout", type=float, default=30.0, help="seconds to read the topic (default 30)")
    ver.add_argument("--json", action="store_true", help="print JSON")
    ver.set_defaults(func=cmd_verify)

    rep = rs.add_parser("republish", parents=[common],
                        help="publish releases again from the ledger (records, then manifest)")
    rep.add_argument("ids", nargs="+", metavar="ID", help="release ids, or `latest`")
    rep.set_defaults(func=cmd_republish)
    exp = rs.add_parser("export", parents=[common], help="write a release from the ledger as JSON lines")
    exp.add_argument("id", help="a release id, or `latest`")
    exp.add_argument("--out", required=True, help="output file (records in order, then the manifest)")
    exp.set_defaults(func=cmd_export)
    rpt = rs.add_parser("report", parents=[common],
                        help="write a sign-off report to sign: of one release, or of every release of a period "
                             "(--since, --until)")
    rpt.add_argument("id", nargs="?", help="a release id, or `latest` (omit it for a period)")
    rpt.add_argument("--since", help="first event-time day of the period (YYYY-MM-DD)")
    rpt.add_argument("--until", help="last event-time day of the period (YYYY-MM-DD), included")
    rpt.add_argument("--feed", help="only this feed's windows (several feeds)")
    rpt.add_argument("--format", choices=("html", "md", "json"), help="period format (default: by --out's suffix)")
    rpt.add_argument("--out", required=True, help="the file to write")
    rpt.set_defaults(func=cmd_report)
    chk = rs.add_parser("check", help="check consumed release files against the signed manifests beside them "
                        "(exit 1 if any value, row or row order changed, a counts or codebook file changed, a "
                        "file is missing or a release moved to another date partition)")
    chk.add_argument("path", metavar="PATH", help="a folder written by `anonstream consume`, or one release file")
    chk.add_argument("--public-key", help="the service's Ed25519 public key, 64 hex digits or @file "
                     "(default: ANONSTREAM_RELEASE_PUBLIC_KEY, else the local worker's key)")
    chk.add_argument("--json", action="store_true", help="print JSON")
    chk.set_defaults(func=cmd_check)
