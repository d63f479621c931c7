"""Sign-off reports: one self-contained HTML document a privacy officer can sign, for a release or a period.

:func:`render` is the document of one release, from the console's release detail
(:meth:`stream.console.service.ConsoleService.release`): what was released, under which spec version and
engine, k / ℓ / risk required, achieved and verified, the utility, the linking guard and the privacy budget
(ε beside ρ), every warning with its explanation (:mod:`stream.console.release_warnings`), the manifest's
checksum, signature and key id, and lines to sign. :func:`render_period` is the document of a period
(:func:`stream.console.period.period_data`); :func:`markdown_period` the same in Markdown. Templates:
templates/signoff.html and signoff_period.html on doc_base.html (inline CSS, no script, no external
asset: the file opens, prints and archives on its own). Used by ``anonstream releases report`` and the
console's ``/releases/{id}/report`` and ``/signoff/report``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from stream.console.templating import epsilon, human, pct, sig
from stream.console.templating import render as render_template
from stream.wire.manifest import BLOCK_REASONS


def render(d: dict[str, Any], generated_at: datetime | None = None) -> str:
    """The sign-off document of release detail ``d`` (as :meth:`ConsoleService.release` returns it)."""
    return render_doc("signoff.html", title=f"Sign-off report: release {d['id']}", d=d, block_reasons=BLOCK_REASONS,
                      generated_at=generated_at or datetime.now(UTC))


def render_period(p: dict[str, Any]) -> str:
    """The sign-off document of a period (``p`` from :func:`stream.console.period.period_data`)."""
    return render_doc("signoff_period.html", title=f"Sign-off report: {p['since']} to {p['until']}", p=p,
                      generated_at=p["generated_at"])


def period_document(p: dict[str, Any], fmt: str | None = None, out: str | None = None) -> str:
    """The period's document as ``html``, ``md`` or ``json`` (when ``fmt`` is None: by ``out``'s suffix)."""
    import json
    from pathlib import Path

    fmt = fmt or {".md": "md", ".json": "json"}.get(Path(out or "").suffix.lower(), "html")
    if fmt == "json":
        return json.dumps(p, indent=2, ensure_ascii=False) + "\n"
    return markdown_period(p) if fmt == "md" else render_period(p)


def period_summary(p: dict[str, Any]) -> str:
    """One line: the period, its releases, how many met their requirements, how many windows were held."""
    t = p["totals"]
    return (f"{p['since']} to {p['until']}: {t['releases']} release(s), {t['requirements_met']} meeting their "
            f"requirements, {t['held_windows']} held window(s)")


def render_doc(name: str, **values: Any) -> str:
    """A sign-off template on doc_base.html (no console banner: a document to archive, not a live page)."""
    return render_template(name, None, **values)


def markdown_period(p: dict[str, Any]) -> str:
    """The period's sign-off in Markdown (the same figures as :func:`render_period`)."""
    t = p["totals"]
    eps = (lambda rho: f" (ε {epsilon(rho, p['delta'])})") if p["delta"] is not None else (lambda _rho: "")
    out = [f"# Sign-off report: {p['since']} to {p['until']}", "",
           f"{t['releases']} release(s) from {', '.join(t['stations']) or '–'}: {t['received']} reports received, "
           f"{t['released']} released, {t['suppressed']} suppressed, {t['held_back']} held back, {t['blocked']} "
           f"blocked. Requirements met in {t['requirements_met']} of {t['releases']}; highest risk "
           f"{pct(t['risk_highest'])}; information loss {sig(t['information_loss_mean'])}. Held windows: "
           f"{t['held_windows']} ({t['held_reports']} reports); carried: {t['carried_windows']}; DP counts refused: "
           f"{t['counts_refused']}.", "", "## Releases", "",
           "| day | key | release | k asked / achieved | ℓ asked / achieved | verifier | risk highest | loss |",
           "|---|---|---|---|---|---|---|---|"]
    for r in p["releases"]:
        q = r["requirements"]
        out.append(f"| {r['day']} | {r['key']} | {r['id']} | {human(q['k_asked'])} / {human(q['k'])} | "
                   f"{human(q['l_asked'])} / {human(q['l'])} | {'passed' if q['verified'] else 'FAILED'} | "
                   f"{pct(r['risk']['highest'])} | {sig(r['information_loss'])} |")
    out += ["", "## Budget spent per block", "", "| block | this period | block total | cap |", "|---|---|---|---|"]
    out += [f"| {b['block']} | ρ {sig(b['spent_rho'], 4)}{eps(b['spent_rho'])} | ρ {sig(b['block_spent_rho'], 4)}"
            f"{eps(b['block_spent_rho'])} | ρ {sig(b['cap_rho'], 4)}{eps(b['cap_rho'])} |" for b in p["budget"]]
    out += ["", "## Held and carried windows", ""]
    out += [f"- {w['day']} {w['id']} {w['state']}, {w['count']} report(s): {w['reason'] or '–'}" for w in p["held"]]
    return "\n".join(out if p["held"] else [*out, "none"]) + "\n"

