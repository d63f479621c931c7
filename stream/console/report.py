"""The sign-off report of one release: a single self-contained HTML page a privacy officer can sign.

Rendered from the console's release detail (:meth:`stream.console.service.ConsoleService.release`): what
was released, under which spec version and engine, k / ℓ / risk required, achieved and verified, the
utility (the manifest's ``utility`` when it has one, and the information loss), the linking guard and the
privacy budget (the manifest's ``budget`` / ``dp`` when present), every warning with its explanation
(:mod:`stream.console.release_warnings`), the manifest's checksum, signature and key id, and lines to sign.
Inline CSS, no script, no external asset: the file opens, prints and archives on its own. Used by
``anonstream releases report ID --out FILE.html`` and the console's ``/releases/{id}/report``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from stream.console.pages import e, human
from stream.wire.manifest import BLOCK_REASONS

CSS = """
body{font-family:Georgia,serif;max-width:60em;margin:2em auto;color:#111;line-height:1.35}
h1{font-size:1.5em;margin-bottom:.1em}h2{font-size:1.1em;border-bottom:1px solid #999;margin-top:1.4em}
table{border-collapse:collapse;width:100%}td,th{border:1px solid #bbb;padding:.3em .5em;text-align:left;
vertical-align:top;font-size:.92em}th{width:32%;background:#f1f1f1;font-weight:normal}
.ok{color:#14561f;font-weight:bold}.bad{color:#8b1a12;font-weight:bold}.muted{color:#555}
.act{border-left:4px solid #8b1a12;padding:.2em .6em;margin:.4em 0}.expected{border-left:4px solid #999;
padding:.2em .6em;margin:.4em 0}code{font-size:.85em;word-break:break-all}
.sign td{height:2.6em}@media print{body{margin:0}}
"""


def _rows(pairs: list[tuple[str, Any]]) -> str:
    return "<table>" + "".join(f"<tr><th>{e(k)}</th><td>{v}</td></tr>" for k, v in pairs) + "</table>"


def _pct(v: Any) -> str:
    return "–" if v is None else f"{100 * float(v):.2f}%"


def _privacy(d: dict[str, Any]) -> str:
    m, params, ver = d.get("manifest") or {}, d.get("params") or {}, d.get("verification") or {}
    risk = (m.get("privacy") or {}).get("risk") or {}
    pros = risk.get("prosecutor") or {}
    ok = ver.get("ok")
    verdict = ('<span class="ok verified">passed</span>' if ok else '<span class="bad verified">FAILED</span>: '
               + e("; ".join(ver.get("failures") or [])))
    bound = params.get("max_risk")
    return _rows([
        ("k: required / achieved", f"{e(params.get('k'))} / <b class=k>{e(d.get('k'))}</b>"),
        ("ℓ (distinct): required / achieved", f"{e(human(params.get('l')))} / {e(human(d.get('l')))}"),
        ("independent verifier (recomputed from the released records)", verdict),
        ("re-identification risk, highest / average (prosecutor)",
         f"{_pct(pros.get('highest'))} / {_pct(pros.get('average'))}"),
        (f"records above the risk threshold {human(risk.get('threshold'))}", _pct(pros.get("records_at_risk"))),
        ("risk bound enforced (max_risk)", e(human(bound)) if bound is not None else "none (risk is reported only)"),
        ("suppression allowed / done", f"{_pct(params.get('max_suppression'))} / "
                                       f"{_pct((d.get('metrics') or {}).get('suppression_rate'))}"),
    ])


def _utility(d: dict[str, Any]) -> str:
    m = d.get("manifest") or {}
    metrics = d.get("metrics") or {}
    pairs: list[tuple[str, Any]] = [("information loss (0 = none, 1 = everything generalized)",
                                     e(human(d.get("information_loss")))),
                                    ("per attribute", e(human(d.get("per_attribute_loss") or {}))),
                                    ("average class size", e(human(metrics.get("average_class_size"))))]
    util = m.get("utility")
    if util:  # the codebook's paragraph says it in words (core/metrics/utility.py); the figures are in the manifest
        said = (m.get("codebook") or {}).get("utility")
        pairs.insert(0, ("utility report (manifest)", e(said) if said else e(human(util))))
    else:
        pairs.append(("utility report", '<span class=muted>the manifest carries none</span>'))
    return _rows(pairs)


def _linking_budget(d: dict[str, Any]) -> str:
    m = d.get("manifest") or {}
    counts = m.get("counts") or {}
    blocked = [f"{rule} {counts.get(f'blocked_{rule}', 0)} ({why})" for rule, why in BLOCK_REASONS.items()
               if counts.get(f"blocked_{rule}")]
    return _rows([
        ("linking guard", e(m.get("link_guard") or "–")),
        ("reports blocked by it (never released)", e("; ".join(blocked)) if blocked else "none"),
        ("differentially private counts", _dp(m.get("dp"))),
    ])


def _dp(dp: dict[str, Any] | None) -> str:
    """The manifest's ``dp`` section for a signer: what was spent, what each block has left, or the refusal."""
    if not dp:
        return '<span class=muted>no differential-privacy budget applies to this release</span>'
    head = (f"{e(dp.get('mechanism'))} noise, unit {e(dp.get('unit'))}, epsilon {e(human(dp.get('epsilon')))} "
            f"(delta {e(human(dp.get('delta')))}); {len(dp.get('tables') or [])} count table(s)")
    refused = dp.get("refused")
    if refused:
        head += f"<br><b>counts refused</b>: {e(refused.get('message'))}"
    blocks = "".join(f"<br>block {e(b.get('block'))}: rho {e(human(b.get('spent_rho')))} spent of "
                     f"{e(human(b.get('cap_rho')))}, {e(human(b.get('remaining_rho')))} left"
                     for b in dp.get("blocks") or [])
    return head + blocks


def _warnings(d: dict[str, Any]) -> str:
    ws = d.get("warnings") or []
    if not ws:
        return "<p>No risk warning.</p>"
    return "".join(f'<div class="{e(w["kind"])}"><b>{"Act" if w["kind"] == "act" else "Expected"}:</b> '
                   f'{e(w["text"])}.<br><span class=muted>{e(w["why"])}</span></div>' for w in ws)


def render(d: dict[str, Any], generated_at: datetime | None = None) -> str:
    """The sign-off page of release detail ``d`` (as :meth:`ConsoleService.release` returns it)."""
    m = d.get("manifest") or {}
    w = d.get("window") or {}
    spec = (m.get("codebook") or {}).get("spec") or {}
    sig = m.get("signature") or {}
    ev = m.get("event_time") or {}
    when = (generated_at or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M UTC")
    released = _rows([
        ("release", f"<code class=release-id>{e(d['id'])}</code>"),
        ("window", e(f"{w.get('key')} from {w.get('start')} to {w.get('end')} (#{w.get('seq')})")),
        ("events", e(f"{ev.get('first') or '–'} to {ev.get('last') or '–'}")),
        ("stations", e(", ".join(d.get("stations") or []))),
        ("records released", f"<b class=records>{e(m.get('records', d.get('released')))}</b> of "
                             f"{e(d.get('received'))} received ({e(d.get('suppressed'))} suppressed, "
                             f"{e(d.get('held_back'))} held back for the next window, {e(d.get('blocked'))} blocked)"),
        ("columns", e(", ".join(m.get("columns") or []))),
        ("state", e(f"{d.get('state')}; stored {d.get('created_at')}; published {d.get('published_at') or '–'}")),
    ])
    how = _rows([
        ("dataset spec and version", f"{e(spec.get('name') or '–')} <code class=spec-version>"
                                     f"{e(spec.get('version') or '–')}</code>"),
        ("engine", f"<b class=engine>{e(d.get('engine'))}</b>"),
        ("engine parameters", e(human(d.get("params") or {}))),
        ("seed (reproduces the release)", e(d.get("seed"))),
    ])
    signed = _rows([
        ("checksum of the records (SHA-256)", f"<code>{e(m.get('checksum') or d.get('checksum'))}</code>"),
        ("signature", e(sig.get("alg") or "none: this manifest is not signed")),
        ("key id", f"<code class=key-id>{e(sig.get('key_id') or '–')}</code> (first 16 hex digits of the SHA-256 "
                   "of the public key: compare with `anonstream keys public`)"),
        ("signature value", f"<code>{e(sig.get('value') or '–')}</code>"),
    ])
    sign = ('<table class=sign><tr><th>privacy officer (name)</th><td></td></tr><tr><th>decision</th>'
            '<td>approved for release / not approved</td></tr><tr><th>date</th><td></td></tr>'
            '<tr><th>signature</th><td></td></tr></table>')
    body = (f"<h1>Sign-off report: release {e(d['id'])}</h1><p class=muted>generated {e(when)} by anonstream from "
            "the ledger; every figure below is the release's own (manifest and verification)</p>"
            f"<h2>What was released</h2>{released}<h2>How it was anonymized</h2>{how}"
            f"<h2>Privacy: required, achieved, verified</h2>{_privacy(d)}<h2>Utility</h2>{_utility(d)}"
            f"<h2>Linking and budget</h2>{_linking_budget(d)}<h2>Warnings</h2>{_warnings(d)}"
            f"<h2>Integrity</h2>{signed}<h2>Sign-off</h2>{sign}")
    return (f"<!doctype html><html lang=en><head><meta charset=utf-8><title>Sign-off report {e(d['id'])}</title>"
            f"<style>{CSS}</style></head><body>{body}</body></html>")
