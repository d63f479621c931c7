"""The console's Health page: the verdict first, then what needs review (held windows), then every fact.

The verdict (:mod:`stream.console.verdict`) is one line at the top: healthy, or the first thing that needs
action and what to do, with every other finding below it. Held windows come right after it, with their
release button, so a held window is never below the fold. Every value is written for people: counts as
``published 4, stored 1``, ages as ``3 min``, never a Python repr or raw JSON.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from stream.console.linking import linking_section
from stream.console.pages import _kv, e, fmt, human, layout, short_time, table, token_field
from stream.console.verdict import age_text

VERDICT_CSS = ("<style>.verdict{padding:.7em 1em;margin:.2em 0 1em;border-radius:4px;font-size:1.05em}"
               ".verdict.healthy{background:#e3f4e6;border:1px solid #1b7a2f;color:#14561f}"
               ".verdict.act{background:#fdecea;border:1px solid #b3261e;color:#7d1a14}"
               ".verdict ul{margin:.4em 0 0;padding-left:1.2em;font-size:.92em}</style>")


def verdict_html(v: dict[str, Any]) -> str:
    """The verdict box: the line, then each finding with its action (and what was not checked)."""
    items = "".join(f"<li><b>{e(f['what'])}</b>: {e(f['action'])}</li>" for f in v.get("findings", [])[1:])
    notes = "".join(f"<li class=muted>{e(n)}</li>" for n in v.get("notes") or [] if v.get("findings"))
    cls = "healthy" if v.get("healthy") else "act"
    return (f'{VERDICT_CSS}<div class="verdict {cls}" id=verdict><b class=verdict-line>{e(v.get("line"))}</b>'
            + (f"<ul>{items}{notes}</ul>" if items or notes else "") + "</div>")


def _worker_section(h: dict[str, Any]) -> str:
    wk = h["worker"]
    act = wk.get("activity") or {}
    group = wk.get("group") or {}
    in_process = wk.get("in_process")
    if isinstance(in_process, dict):
        in_process = in_process.get("error") or human(in_process)
    worker = _kv([("status", wk.get("status")),
                  ("consumer group", group.get("error") or f'{group.get("state")} with {group.get("members")} '
                                                           "member(s)"),
                  ("in-process worker", in_process), ("last ingest", short_time(act.get("last_ingest_at")) or None),
                  ("last release", short_time(act.get("last_release_at")) or None),
                  ("last publish", short_time(act.get("last_publish_at")) or None),
                  ("oldest unpublished release", short_time(act.get("oldest_unpublished_at")) or None),
                  ("releases by state", act.get("releases_by_state")), ("workers seen", act.get("workers_seen")),
                  ("windows by state", h["windows"]["by_state"])])
    beats = table(["worker", "heartbeat age", "alive", "partitions", "stats"],
                  [[e(b["worker"]), e(age_text(b["heartbeat_age_s"])), e("yes" if b["alive"] else "no"),
                    e(", ".join(str(p) for p in b["partitions"])), e(human(b["stats"]))]
                   for b in wk.get("heartbeats") or []], "workers")
    return f"<h2>Worker</h2>{worker}{beats}"


def _windows_section(h: dict[str, Any]) -> str:
    held = []
    for w in h["windows"]["held"]:
        wid = quote(w["id"], safe="")
        form = (f'<form class=inline method=post action="/api/windows/{wid}/release">{token_field()} '
                '<select name=mode><option value=retry>retry now</option><option value=carry>carry into next '
                "window</option></select> <button>release after review</button></form>")
        held.append([e(w["id"]), e(w["reason"]), e(w["count"]), e(w["still_pending"]), e(short_time(w["closed_at"])),
                     form])
    carried = [[e(w["id"]), e(w["reason"]), e(w["count"]), e(w["still_pending"]), e(short_time(w["closed_at"]))]
               for w in h["windows"]["carried"]]
    return ("<h2>Held windows (need review)</h2>"
            + table(["window", "reason", "reports", "still pending", "closed", "control"], held, "held")
            + "<h2>Carried windows (too small, waiting for the next window)</h2>"
            + table(["window", "reason", "reports", "still pending", "closed"], carried, "carried"))


def _lag_section(lag: dict[str, Any]) -> str:
    if lag.get("error"):
        return f'<h2>Consumer lag</h2><p class=bad>consumer lag unavailable: {e(lag["error"])}</p>'
    out = (f'<h2>Consumer lag</h2><p>group <b>{e(lag["group"])}</b> on <b>{e(lag["topic"])}</b>: total lag '
           f'<b class=lag-total>{e(lag["total"])}</b></p>'
           + table(["partition", "end offset", "committed", "lag"],
                   [[e(p["partition"]), e(p["end"]), e(fmt(p["committed"])), e(p["lag"])] for p in lag["partitions"]]))
    if lag.get("notes"):
        out += ("<p class=muted>estimate: " + e("; ".join(lag["notes"]))
                + " (the test broker tansu misreports end offsets after multi-record batches)</p>")
    return out


def _pool_section(h: dict[str, Any]) -> str:
    pool = h["pool"]
    stations = []
    for r in pool["stations"]:
        st = quote(r["station"], safe="")
        action = "resume" if r.get("paused") else "pause"
        form = (f'<form class=inline method=post action="/api/stations/{st}/{action}">{token_field()} '
                f"<button>{action}</button></form>"
                f'<form class=inline method=post action="/api/stations/{st}/flush">{token_field()} '
                f'<button title="release what waits below min_release_rows now">flush</button></form>')
        stations.append([e(r["station"]), e(r["pending"]), e(age_text(r["oldest_pending_age_s"])), e(r["released"]),
                         e(r["suppressed"]), e(r["blocked"]), e(r.get("duplicates", 0)),
                         e(r.get("corrections_replaced", 0)), e(r.get("corrections_released", 0)),
                         '<span class=bad>paused</span>' if r.get("paused") else "active", form])
    return (f'<h2>Pending pool</h2><p>{pool["pending_total"]} pending report(s); oldest '
            f'{age_text(pool["oldest_pending_age_s"])}</p>'
            + table(["station", "pending", "oldest pending", "released", "suppressed", "blocked", "duplicates",
                     "corrections replaced", "corrections not re-released", "releases", "control"], stations, "pool"))


def _dlq_section(dlq: dict[str, Any]) -> str:
    rows = [[e(c["station"]), e(c["reason"]), e(c["count"]), e(short_time(c["last_at"]))] for c in dlq["by_station"]]
    recent = [[e(short_time(r["at"])), e(r["station"]), e(r["reason"]), e(r["message"])] for r in dlq["recent"]]
    return (f'<h2>Dead-letter queue</h2><p>{dlq["total"]} rejected report(s); '
            f'<span class=bad>{dlq["by_reason"].get("report-id-reused", 0)}</span> report id(s) reused for '
            f'another event; {dlq["by_reason"].get("unknown-station", 0)} from unregistered stations</p>'
            + table(["station", "reason", "count", "last"], rows, "dlq")
            + "<h3>Recent rejections (reason only, no payload)</h3>"
            + table(["time", "station", "reason", "message (scrubbed)"], recent))


def _registry_section(h: dict[str, Any]) -> str:
    registry = [[e(r["station"]), e(r["source"]), e(short_time(r["added_at"])), e(r["note"] or ""),
                 f'<form class=inline method=post action="/api/registry/remove">{token_field()}'
                 f'<input type=hidden name=stations value="{e(r["station"])}"> <button>remove</button></form>']
                if r.get("feed", "default") == "default" else  # another feed's registry: the CLI manages it
                [e(f'{r["feed"]}/{r["station"]}'), e(r["source"]), e(short_time(r["added_at"])), e(r["note"] or ""),
                 e(f'anonstream stations remove {r["station"]} --feed {r["feed"]}')]
                for r in h.get("registry") or []]
    add = ('<form method=post action="/api/registry/add"><fieldset><legend>Register stations</legend>'
           f'{token_field()} <input name=stations placeholder="S1 S2 S3" required> '
           '<input name=note placeholder="note (optional)"> <button>register</button></fieldset></form>')
    return ("<h2>Station registry</h2><p class=muted>In production mode only registered stations' reports "
            "are accepted; removing a station keeps its pending reports. Also: anonstream stations "
            "add|list|remove</p>" + add
            + table(["station", "source", "added", "note", "control"], registry, "registry"))


def _feeds_section(feeds: list[dict[str, Any]]) -> str:
    """One row per feed (several feeds in one deployment): its pool, windows and releases."""
    rows = [[f'<a href="/releases?feed={quote(f["feed"], safe="")}">{e(f["feed"])}</a>', e(f["pending"]),
             e(age_text(f["oldest_pending_age_s"])), e(f["released"]), e(f["suppressed"]), e(f["blocked"]),
             e(f.get("dlq", 0)), e(human(f["windows"])), e(human(f["releases"])), e(short_time(f["last_release_at"]))]
            for f in feeds]
    return ("<h2>Feeds</h2><p class=muted>each feed's own pool, windows and releases (docs/operations.md, "
            "Several feeds)</p>" + table(["feed", "pending", "oldest pending", "released", "suppressed", "blocked",
                                          "dead letters", "windows", "releases", "last release"], rows, "feeds"))


def health_page(h: dict[str, Any]) -> str:
    """The Health page: verdict, held windows, worker, pool, linking guard, lag, dead letters, registry, feeds."""
    from stream.console.verdict import verdict

    v = h.get("verdict") or verdict(h).as_dict()
    body = (verdict_html(v) + _windows_section(h) + _worker_section(h) + _pool_section(h)
            + linking_section(h.get("duplicates") or []) + _lag_section(h["lag"]) + _dlq_section(h["dlq"])
            + _registry_section(h) + _feeds_section(h.get("feeds") or []))
    return layout("Health", body, "/api/health")
