"""HTML pages of the console: plain server-rendered HTML, inline CSS, no scripts, no external assets.

Each page renders the same dict its JSON API returns (linked at the top of the page). Every value is
HTML-escaped. Control forms post the operator token in a password field.
"""

from __future__ import annotations

import json
from html import escape
from typing import Any
from urllib.parse import quote, urlencode

from stream.console.linking import blocked_text, linking_section

CSS = """
body{font-family:system-ui,sans-serif;margin:0;color:#222;background:#fafafa}
header{background:#23395d;color:#fff;padding:.6em 1.2em;display:flex;gap:1.4em;align-items:baseline}
header a{color:#fff;text-decoration:none}header b{font-size:1.1em}
main{padding:1em 1.4em}table{border-collapse:collapse;margin:.4em 0 1.2em;background:#fff}
td,th{border:1px solid #ddd;padding:.25em .55em;font-size:.88em;text-align:left;vertical-align:top}
th{background:#eef1f6}.num{text-align:right}.ok{color:#1b7a2f}.bad{color:#b3261e;font-weight:600}
.plots{display:flex;flex-wrap:wrap;gap:1em}.plots figure{margin:0;background:#fff;border:1px solid #ddd;padding:.4em}
.plots img{max-width:640px;display:block}form.inline{display:inline}.muted{color:#777}
fieldset{border:1px solid #ccc;margin:.6em 0;padding:.5em}input,select,button{font-size:.9em}
"""


def e(v: Any) -> str:
    return escape("" if v is None else str(v))


def fmt(v: Any, nd: int = 3) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:.{nd}f}"
    return str(v)


def short_time(iso: str | None) -> str:
    return (iso or "")[:19].replace("T", " ")


def table(headers: list[str], rows: list[list[str]], cls: str = "") -> str:
    """Cells are already-escaped HTML; headers that are all empty give a table without a header row."""
    head = "".join(f"<th>{e(h)}</th>" for h in headers) if any(headers) else ""
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    if not rows:
        body = f'<tr><td colspan="{len(headers)}" class="muted">none</td></tr>'
    thead = f"<thead><tr>{head}</tr></thead>" if head else ""
    return f'<table class="{cls}">{thead}<tbody>{body}</tbody></table>'


def layout(title: str, body: str, json_href: str | None = None) -> str:
    api = f' <a href="{e(json_href)}">JSON</a>' if json_href else ""
    return (f"<!doctype html><html lang=en><head><meta charset=utf-8><title>{e(title)} · anonstream</title>"
            f'<style>{CSS}</style></head><body><header><b>anonstream console</b><a href="/releases">Releases</a>'
            '<a href="/health">Health</a><a href="/budget">Budget</a><a href="/audit">Audit</a></header>'
            f"<main><h1>{e(title)}</h1><p class=muted>read-only view; controls need the operator token.{api}</p>"
            f"{body}</main></body></html>")


def token_field() -> str:
    return ('<input type=password name=token placeholder="operator token" autocomplete=off required> '
            '<input name=actor placeholder="your name" maxlength=60>')


def releases_page(data: dict[str, Any]) -> str:
    f = data["filter"]
    raw = data.get("query") or {}
    opts = '<option value="">all stations</option>' + "".join(
        f'<option{" selected" if s == f["station"] else ""}>{e(s)}</option>' for s in data["stations"])
    feeds = data.get("feeds") or []
    feed_opts = '<option value="">all feeds</option>' + "".join(
        f'<option{" selected" if n == f.get("feed") else ""}>{e(n)}</option>' for n in feeds)
    feed_select = f'Feed <select name=feed>{feed_opts}</select> ' if len(feeds) > 1 or f.get("feed") else ""
    form = (f'<form method=get action="/releases">{feed_select}Station <select name=station>{opts}</select> '
            f'released since <input type=date name=since value="{e(raw.get("since") or "")}"> '
            f'until <input type=date name=until value="{e(raw.get("until") or "")}"> '
            '<button>Filter</button></form>')
    rows = []
    for r in data["releases"]:
        w = r["window"]
        rows.append([
            e(short_time(r["created_at"])),
            f'<a class=release-link href="/releases/{quote(r["id"], safe="")}">{e(r["id"])}</a>',
            e(f'{w["key"]} {(w["start"] or "")[:10]} #{w["seq"]}'), e(r.get("feed") or ""),
            e(", ".join(r["stations"])), e(r["engine"]),
            f'<span class=num>{e(r["k"])}</span>', e(fmt(r["l"])), e(fmt(r["information_loss"])),
            e(r["released"]), e(r["suppressed"]), e(r["held_back"]), e(r["state"])])
    query = urlencode({k: v for k, v in raw.items() if v})
    body = form + f'<p>{data["total"]} release(s)</p>' + table(
        ["time (UTC)", "release", "window", "feed", "stations", "engine", "k", "ℓ", "info loss", "released",
         "suppressed", "held back", "state"], rows, "releases")
    return layout("Releases", body, "/api/releases" + (f"?{query}" if query else ""))


def _kv(pairs: list[tuple[str, Any]]) -> str:
    return table(["", ""], [[e(k), e(fmt(v, 4) if not isinstance(v, dict | list) else json.dumps(v))]
                            for k, v in pairs])


def _pct(v: Any) -> str:
    return "–" if v is None else f"{100 * float(v):.2f}%"


def risk_section(r: dict[str, Any] | None) -> str:
    """The manifest's ``privacy.risk`` (docs/risk.md): warnings first, then the figures."""
    if not r:
        return '<p class=muted>no risk profile in this release\'s manifest</p>'
    warn = "".join(f"<p class=bad>warning: {e(w)}</p>" for w in r.get("warnings") or [])
    p, j = r.get("prosecutor") or {}, r.get("journalist") or {}
    rows = [("prosecutor risk: highest / average", f'{_pct(p.get("highest"))} / {_pct(p.get("average"))}'),
            (f'records above {r.get("threshold")}', _pct(p.get("records_at_risk")))]
    if r.get("mode") == "k-regular":
        return warn + _kv(rows + [("note", "k-regular release: every record has k candidates")])
    u, a = r.get("population_uniqueness") or {}, r.get("attribute") or {}
    rows += [("journalist risk: highest / average", f'{_pct(j.get("highest"))} / {_pct(j.get("average"))}'),
             ("marketer risk", _pct(r.get("marketer"))),
             ("sampling fraction / population", f'{fmt(r.get("sampling_fraction"), 4)} / {r.get("population")}'),
             ("sample uniques: input / release", f'{_pct(r.get("sample_uniques_input"))} / '
                                                 f'{_pct(r.get("sample_uniques"))}'),
             (f'population uniqueness (Dankar: {u.get("dankar_model")})', _pct(u.get("dankar"))),
             ("Pitman / Zayatz / SNB", " / ".join(_pct(u.get(m)) for m in ("pitman", "zayatz", "snb")))]
    if a:
        rows += [("homogeneous classes (records)", f'{a.get("homogeneous_classes")} ({a.get("homogeneous_records")})'),
                 ("largest share of one sensitive value (δ)", _pct(a.get("max_sensitive_share"))),
                 ("δ-disclosure max |ln p(v|class)/p(v)|", fmt(a.get("delta_disclosure"), 4))]
        if a.get("severe_at") is not None:
            rows += [(f'severe records (severity ≥ {fmt(a["severe_at"], 1)})', a.get("severe_records")),
                     ("severe in homogeneous classes", a.get("severe_in_homogeneous")),
                     ("severe in classes smaller than their severity", a.get("severe_in_small"))]
    return warn + _kv(rows)


def release_page(d: dict[str, Any], counts: str = "") -> str:  # counts: stream.console.budget.counts_section
    rid = quote(d["id"], safe="")
    w = d["window"]
    m = d.get("metrics") or {}
    ver = d.get("verification") or {}
    an = d.get("analysis") or {}
    cs = an.get("class_sizes") or {}
    summary = _kv([("window", f'{w["key"]} {w["start"]} – {w["end"]} #{w["seq"]}'),
                   ("stations", ", ".join(d["stations"])),
                   ("engine", d["engine"]), ("params", d.get("params")), ("seed", d.get("seed")),
                   ("state", d["state"]), ("created", d["created_at"]), ("published", d["published_at"]),
                   ("received", d["received"]), ("released", d["released"]), ("suppressed", d["suppressed"]),
                   ("held back (not sampled)", d["held_back"]),
                   ("blocked (linking guard)", blocked_text({**(d.get("manifest") or {}).get("counts", {}),
                                                             "blocked": d["blocked"]})),
                   ("checksum", d.get("checksum"))])
    privacy = _kv([("k achieved", d["k"]), ("ℓ achieved (distinct)", d["l"]),
                   ("verifier", "passed" if ver.get("ok") else "FAILED"), ("entropy ℓ", ver.get("l_entropy")),
                   ("recursive ℓ", ver.get("l_recursive")), ("t", ver.get("t")), ("classes", cs.get("classes")),
                   ("class size min / median / max", f'{cs.get("min")} / {cs.get("median")} / {cs.get("max")}')])
    risk = risk_section(((d.get("manifest") or {}).get("privacy") or {}).get("risk"))
    metrics = _kv([(k, v) for k, v in m.items() if k != "per_attribute_loss"])
    figs = "".join(f'<figure><img class=plot src="{e(src)}" alt="{e(name)} plot"><figcaption>{e(name)}'
                   "</figcaption></figure>" for name, src in d.get("plots", {}).items())
    offences = table(["offence", "severity", "records", "classes", "share overall", "mean in class", "sd", "max"],
                     [[e(r["value"]), e(fmt(r["severity"], 1)), e(r["records"]), e(r["classes"]),
                       e(f'{100 * r["overall"]:.1f}%'), e(f'{100 * r["mean"]:.1f}%'), e(f'{100 * r["std"]:.1f}%'),
                       e(f'{100 * r["max"]:.1f}%')] for r in an.get("offences") or []])
    audit = table(["time", "actor", "action", "detail"],
                  [[e(short_time(a["at"])), e(a["actor"]), e(a["action"]), e(json.dumps(a["detail"]))]
                   for a in d.get("audit", [])])
    control = (f'<form method=post action="/api/releases/{rid}/verify"><fieldset><legend>Re-verify from the '
               f'output topic</legend>{token_field()} <button>Re-verify</button></fieldset></form>')
    body = (f'<h2>Summary</h2>{summary}<h2>Privacy</h2>{privacy}<h2>Re-identification risk</h2>{risk}'
            f'<h2>Plots</h2><div class=plots>{figs}</div>'
            f"<h2>Offence frequency within classes</h2>{offences}<h2>Metrics</h2>{metrics}{counts}"
            f"<h2>Controls</h2>{control}<h2>Audit trail</h2>{audit}")
    return layout(f"Release {d['id']}", body, f"/api/releases/{rid}")


def _age(s: float | None) -> str:
    if s is None:
        return "–"
    if s < 120:
        return f"{s:.0f} s"
    return f"{s / 60:.0f} min" if s < 7200 else f"{s / 3600:.1f} h"


def health_page(h: dict[str, Any]) -> str:
    pool = h["pool"]
    stations = []
    for r in pool["stations"]:
        st = quote(r["station"], safe="")
        action = "resume" if r.get("paused") else "pause"
        form = (f'<form class=inline method=post action="/api/stations/{st}/{action}">{token_field()} '
                f"<button>{action}</button></form>"
                f'<form class=inline method=post action="/api/stations/{st}/flush">{token_field()} '
                f'<button title="release what waits below min_release_rows now">flush</button></form>')
        stations.append([e(r["station"]), e(r["pending"]), e(_age(r["oldest_pending_age_s"])), e(r["released"]),
                         e(r["suppressed"]), e(r["blocked"]), e(r.get("duplicates", 0)),
                         e(r.get("corrections_replaced", 0)), e(r.get("corrections_released", 0)),
                         '<span class=bad>paused</span>' if r.get("paused") else "active", form])
    dlq = h["dlq"]
    dlq_rows = [[e(c["station"]), e(c["reason"]), e(c["count"]), e(short_time(c["last_at"]))]
                for c in dlq["by_station"]]
    recent = [[e(short_time(r["at"])), e(r["station"]), e(r["reason"]), e(r["message"])] for r in dlq["recent"]]
    lag = h["lag"]
    if lag.get("error"):
        lag_html = f'<p class=bad>consumer lag unavailable: {e(lag["error"])}</p>'
    else:
        lag_html = (f'<p>group <b>{e(lag["group"])}</b> on <b>{e(lag["topic"])}</b>: total lag '
                    f'<b class=lag-total>{e(lag["total"])}</b></p>' + table(
                        ["partition", "end offset", "committed", "lag"],
                        [[e(p["partition"]), e(p["end"]), e(fmt(p["committed"])), e(p["lag"])]
                         for p in lag["partitions"]]))
        if lag.get("notes"):
            lag_html += ("<p class=muted>estimate: " + e("; ".join(lag["notes"]))
                         + " (the test broker tansu misreports end offsets after multi-record batches)</p>")
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
    wk = h["worker"]
    act = wk.get("activity") or {}
    group = wk.get("group") or {}
    worker = _kv([("status", wk.get("status")), ("consumer group", group.get("error") or
                                                  f'{group.get("state")} with {group.get("members")} member(s)'),
                  ("in-process worker", wk.get("in_process")), ("last ingest", act.get("last_ingest_at")),
                  ("last release", act.get("last_release_at")), ("last publish", act.get("last_publish_at")),
                  ("oldest unpublished release", act.get("oldest_unpublished_at")),
                  ("releases by state", act.get("releases_by_state")), ("workers seen", act.get("workers_seen")),
                  ("windows by state", h["windows"]["by_state"])])
    beats = table(["worker", "heartbeat age", "alive", "partitions", "stats"],
                  [[e(b["worker"]), e(_age(b["heartbeat_age_s"])), e("yes" if b["alive"] else "no"),
                    e(", ".join(str(p) for p in b["partitions"])), e(json.dumps(b["stats"]))]
                   for b in wk.get("heartbeats") or []], "workers")
    body = (f'<h2>Worker</h2>{worker}{beats}<h2>Pending pool</h2><p>{pool["pending_total"]} pending report(s); oldest '
            f'{_age(pool["oldest_pending_age_s"])}</p>'
            + table(["station", "pending", "oldest pending", "released", "suppressed", "blocked", "duplicates",
                     "corrections replaced", "corrections not re-released", "releases", "control"], stations, "pool")
            + linking_section(h.get("duplicates") or []) + f"<h2>Consumer lag</h2>{lag_html}"
            + f'<h2>Dead-letter queue</h2><p>{dlq["total"]} rejected report(s); '
            + f'<span class=bad>{dlq["by_reason"].get("report-id-reused", 0)}</span> report id(s) reused for '
            + f'another event; {dlq["by_reason"].get("unknown-station", 0)} from unregistered stations</p>'
            + table(["station", "reason", "count", "last"], dlq_rows, "dlq")
            + "<h3>Recent rejections (reason only, no payload)</h3>"
            + table(["time", "station", "reason", "message (scrubbed)"], recent)
            + "<h2>Held windows (need review)</h2>"
            + table(["window", "reason", "reports", "still pending", "closed", "control"], held, "held")
            + "<h2>Carried windows (too small, waiting for the next window)</h2>"
            + table(["window", "reason", "reports", "still pending", "closed"], carried, "carried"))
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
    body += ("<h2>Station registry</h2><p class=muted>In production mode only registered stations' reports "
             "are accepted; removing a station keeps its pending reports. Also: anonstream stations "
             "add|list|remove</p>" + add
             + table(["station", "source", "added", "note", "control"], registry, "registry"))
    body += _feeds_section(h.get("feeds") or [])
    return layout("Health", body, "/api/health")


def _feeds_section(feeds: list[dict[str, Any]]) -> str:
    """One row per feed (several feeds in one deployment): its pool, windows and releases."""
    rows = [[f'<a href="/releases?feed={quote(f["feed"], safe="")}">{e(f["feed"])}</a>', e(f["pending"]),
             e(_age(f["oldest_pending_age_s"])), e(f["released"]), e(f["suppressed"]), e(f["blocked"]),
             e(f.get("dlq", 0)), e(json.dumps(f["windows"])), e(json.dumps(f["releases"])),
             e(short_time(f["last_release_at"]))]
            for f in feeds]
    return ("<h2>Feeds</h2><p class=muted>each feed's own pool, windows and releases (docs/operations.md, "
            "Several feeds)</p>" + table(["feed", "pending", "oldest pending", "released", "suppressed", "blocked",
                                          "dead letters", "windows", "releases", "last release"], rows, "feeds"))


def audit_page(rows: list[dict[str, Any]]) -> str:
    body = table(["time", "actor", "action", "subject", "detail"],
                 [[e(short_time(a["at"])), e(a["actor"]), e(a["action"]), e(a["subject"]), e(json.dumps(a["detail"]))]
                  for a in rows])
    return layout("Audit trail", body, "/api/audit")


def result_page(title: str, result: dict[str, Any], back: str) -> str:
    ok = result.get("ok", True)
    cls = "ok" if ok else "bad"
    body = (f'<p class={cls}>{"done" if ok else "failed"}</p><pre>{e(json.dumps(result, indent=2))}</pre>'
            f'<p><a href="{e(back)}">back</a></p>')
    return layout(title, body)


def error_page(status: int, message: str) -> str:
    return layout(f"Error {status}", f"<p class=bad>{e(message)}</p>")


def login_page(next_path: str, message: str | None = None) -> str:
    """The production console's sign-in form: the operator token, kept as a session cookie."""
    note = f"<p class=bad>{e(message)}</p>" if message else ""
    body = (f"{note}<form method=post action=\"/login\"><input type=hidden name=next value=\"{e(next_path)}\">"
            '<input type=password name=token placeholder="operator token" autocomplete=off required> '
            "<button>Sign in</button></form>")
    return layout("Sign in", body)
