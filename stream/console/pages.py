"""HTML pages of the console: plain server-rendered HTML, inline CSS, no scripts, no external assets.

Each page renders the same dict its JSON API returns (linked at the top of the page). Every value is
HTML-escaped. Control forms post the operator token in a password field.
"""

from __future__ import annotations

import json
from html import escape
from typing import Any
from urllib.parse import quote, urlencode

from stream.console.linking import blocked_text

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


def human(v: Any, nd: int = 4) -> str:
    """A value as a person reads it: ``published 4, stored 1`` for a dict, ``a, b`` for a list, ``yes``/``no``,
    ``–`` for nothing; never a Python repr or raw JSON."""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, dict):
        items = [(k, x) for k, x in v.items() if x is not None]
        return "; ".join(f"{k} {human(x, nd)}" for k, x in items) if items else "–"
    if isinstance(v, list | tuple):
        return ", ".join(human(x, nd) for x in v) if v else "–"
    if isinstance(v, float):
        return f"{v:.{nd}g}"
    return "–" if v == "" else fmt(v, nd)


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
            f"<style>{CSS}</style></head><body><header><b>anonstream console</b>"
            '<a href="/releases">Releases</a><a href="/health">Health</a><a href="/audit">Audit</a></header>'
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
            e(r["released"]), e(r["suppressed"]), e(r["held_back"]), e(r["state"]),
            (f'<span class="bad act-flag" title="{e(r["act"])}">⚠ act</span>' if r.get("act") else "")])
    query = urlencode({k: v for k, v in raw.items() if v})
    body = form + f'<p>{data["total"]} release(s)</p>' + table(
        ["time (UTC)", "release", "window", "feed", "stations", "engine", "k", "ℓ", "info loss", "released",
         "suppressed", "held back", "state", "warnings"], rows, "releases")
    return layout("Releases", body, "/api/releases" + (f"?{query}" if query else ""))


def _kv(pairs: list[tuple[str, Any]]) -> str:
    return table(["", ""], [[e(k), e(human(v))] for k, v in pairs])


def _pct(v: Any) -> str:
    return "–" if v is None else f"{100 * float(v):.2f}%"


def warnings_html(classified: list[dict[str, str]]) -> str:
    """Warnings to act on in red with what to do; expected ones muted, their reason on hover (and below)."""
    out = []
    for w in classified:
        if w["kind"] == "act":
            out.append(f'<p class="bad warn-act">act: {e(w["text"])}. <span class=action>{e(w["why"])}</span></p>')
        else:
            out.append(f'<p class="muted warn-expected" title="{e(w["why"])}">expected for this engine and these '
                       f'settings: {e(w["text"])} <abbr title="{e(w["why"])}">(why?)</abbr></p>')
    return "".join(out)


def risk_section(r: dict[str, Any] | None, classified: list[dict[str, str]] | None = None) -> str:
    """The manifest's ``privacy.risk`` (docs/risk.md): warnings first (``classified`` by
    :mod:`stream.console.release_warnings` when given), then the figures."""
    if not r:
        return '<p class=muted>no risk profile in this release\'s manifest</p>'
    warn = (warnings_html(classified) if classified is not None
            else "".join(f"<p class=bad>warning: {e(w)}</p>" for w in r.get("warnings") or []))
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


def release_page(d: dict[str, Any]) -> str:
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
    risk = risk_section(((d.get("manifest") or {}).get("privacy") or {}).get("risk"), d.get("warnings"))
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
               f'output topic</legend>{token_field()} <button>Re-verify</button></fieldset></form>'
               f'<p><a class=report-link href="/releases/{rid}/report">Sign-off report</a> (one self-contained page '
               "to print or save for the privacy officer)</p>")
    body = (f'<h2>Summary</h2>{summary}<h2>Privacy</h2>{privacy}<h2>Re-identification risk</h2>{risk}'
            f'<h2>Plots</h2><div class=plots>{figs}</div>'
            f"<h2>Offence frequency within classes</h2>{offences}<h2>Metrics</h2>{metrics}"
            f"<h2>Controls</h2>{control}<h2>Audit trail</h2>{audit}")
    return layout(f"Release {d['id']}", body, f"/api/releases/{rid}")


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
