"""The privacy budget in the console: each block's odometer, and a release's noisy counts with intervals.

``/budget`` (JSON: ``/api/budget``) lists every budget block of the ledger (:mod:`db.budget`): its
lifetime cap, what releases have spent of it, and what remains, drawn as an odometer (the dial fills
as the block's budget is spent; a full dial refuses further counts), with the releases whose counts a
cap refused. A release's page shows its differentially private count tables (``manifest["dp"]``) with
each cell's 95 % interval, and the budget of the blocks it charged.
"""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import web

from db.budget import all_blocks
from db.models import Counter
from db.release_budget import REFUSED_KIND
from stream.console.control_routes import _svc
from stream.console.pages import e, layout, table

MAX_ROWS = 60  # cells shown per count table on a release page (the JSON has them all)
ODOMETER_CSS = ("display:inline-block;width:9em;height:.8em;border:1px solid #999;border-radius:.4em;"
                "background:#eef1f6;vertical-align:middle;overflow:hidden")


def odometer(cap: float, spent: float) -> str:
    """A block's budget as a dial: the share of its cap spent, with ρ spent / cap and what remains."""
    share = min(max(spent / cap, 0.0), 1.0) if cap > 0 else 1.0
    colour = "#1b7a2f" if share < 0.75 else "#c77700" if share < 1.0 else "#b3261e"
    fill = f"display:block;height:100%;width:{100 * share:.1f}%;background:{colour}"
    return (f'<span class=odometer title="{100 * share:.0f}% spent" style="{ODOMETER_CSS}">'
            f'<span style="{fill}"></span></span> <code>ρ {spent:.4g} / {cap:.4g}</code> '
            f"({100 * share:.0f}% spent, ρ {max(cap - spent, 0.0):.4g} left)")


def budget_data(svc: Any, limit: int = 500) -> dict[str, Any]:
    """Every budget block (most recently charged first, at most ``limit``) and the refusals per station."""
    from sqlalchemy import func, select

    with svc._read() as s:
        rows = sorted(all_blocks(s), key=lambda r: (str(r.updated_at or ""), r.block), reverse=True)
        refused = s.execute(select(Counter.station_id, func.sum(Counter.count)).where(
            Counter.kind == REFUSED_KIND).group_by(Counter.station_id)).all()
    blocks = [{"block": r.block, "cap_rho": float(r.cap_rho), "spent_rho": float(r.spent_rho),
               "remaining_rho": max(float(r.cap_rho) - float(r.spent_rho), 0.0),
               "updated_at": r.updated_at.isoformat() if r.updated_at is not None else None} for r in rows[:limit]]
    return {"blocks": blocks, "blocks_total": len(rows),
            "refused": {str(st or "(feed)"): int(n or 0) for st, n in refused}}


def budget_page(data: dict[str, Any]) -> str:
    """The ``/budget`` page."""
    rows = [[e(b["block"]), odometer(b["cap_rho"], b["spent_rho"]), e((b["updated_at"] or "")[:19])]
            for b in data["blocks"]]
    refused = sum(data["refused"].values())
    note = (f'<p class=bad>{refused} release(s) went out without counts: a block\'s cap refused them '
            f'({e(", ".join(f"{k} {v}" for k, v in sorted(data["refused"].items())))}).</p>' if refused
            else "<p>no release's counts were refused.</p>")
    body = ("<p>Each block (a station or feed, and a day) has a lifetime privacy budget; every release "
            "with counts spends some of it on each block its reports fall in, and a release that would "
            "take a block over its cap publishes no counts (docs/privacy.md).</p>" + note
            + table(["block", "budget", "last charged"], rows, "budget"))
    if data["blocks_total"] > len(data["blocks"]):
        body += f'<p class=muted>{len(data["blocks"])} of {data["blocks_total"]} blocks shown.</p>'
    return layout("Privacy budget", body, "/api/budget")


def counts_section(manifest: dict[str, Any] | None) -> str:
    """A release page's section: its count tables, ``count ± ci95`` per cell, and its blocks' budgets."""
    dp = (manifest or {}).get("dp")
    if not isinstance(dp, dict):
        return ""
    head = (f'<p>{e(dp.get("mechanism"))} mechanism, ε {e(dp.get("epsilon"))} per release (δ {e(dp.get("delta"))}, '
            f'ρ {e(dp.get("rho"))}), unit: {e(dp.get("unit"))}. Each count is within ± ci95 of the true count '
            "with 95 % probability.</p>")
    if dp.get("refused"):
        head += f'<p class=bad>counts refused: {e(dp["refused"].get("message"))}</p>'
    parts = [head]
    for t in dp.get("tables") or []:
        by = list(t.get("by") or [])
        cells = list(zip(t.get("groups") or [], t.get("counts") or [], strict=False))
        rows = [[*(e(v) for v in g), f'<span class=num>{e(n)}</span>', f'± {float(t.get("ci95", 0)):.1f}']
                for g, n in cells[:MAX_ROWS]]
        parts.append(f'<h3>{e(" × ".join(by))}</h3>' + table([*by, "count", "95 % interval"], rows, "counts"))
        if len(cells) > MAX_ROWS:
            parts.append(f"<p class=muted>{MAX_ROWS} of {len(cells)} cells shown (all in the JSON).</p>")
    blocks = [[e(b.get("block")), odometer(float(b.get("cap_rho", 0)), float(b.get("spent_rho", 0)))]
              for b in dp.get("blocks") or []]
    parts.append("<h3>Budget of the blocks it charged (after this release)</h3>" + table(["block", "budget"], blocks))
    return "<h2>Differentially private counts</h2>" + "".join(parts)


async def page_budget(request: web.Request) -> web.Response:
    data = await asyncio.to_thread(budget_data, _svc(request))
    return web.Response(text=budget_page(data), content_type="text/html")


async def api_budget(request: web.Request) -> web.Response:
    return web.json_response(await asyncio.to_thread(budget_data, _svc(request)))


def routes() -> list[web.RouteDef]:
    """The budget page and its JSON (registered by :func:`stream.console.web.create_app`)."""
    return [web.get("/budget", page_budget), web.get("/api/budget", api_budget)]
