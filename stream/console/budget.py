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
from stream.console.page_context import page_context
from stream.console.pages import MAX_ROWS
from stream.console.templating import environment, render


def odometer(cap: float, spent: float, delta: float | None = None) -> str:
    """A block's budget as a dial: the share of its cap spent, with ρ spent / cap (and ε at ``delta``) and
    what remains (templates/macros.html)."""
    return str(environment().get_template("macros.html").module.odometer(cap, spent, delta))  # type: ignore[attr-defined]


def budget_data(svc: Any, limit: int = 500) -> dict[str, Any]:
    """Every budget block (most recently charged first, at most ``limit``) and the refusals per station."""
    from sqlalchemy import func, select

    from db.dp_policy import read_policy

    with svc._read() as s:
        policy = read_policy(s)
        rows = sorted(all_blocks(s), key=lambda r: (str(r.updated_at or ""), r.block), reverse=True)
        refused = s.execute(select(Counter.station_id, func.sum(Counter.count)).where(
            Counter.kind == REFUSED_KIND).group_by(Counter.station_id)).all()
    blocks = [{"block": r.block, "cap_rho": float(r.cap_rho), "spent_rho": float(r.spent_rho),
               "remaining_rho": max(float(r.cap_rho) - float(r.spent_rho), 0.0),
               "updated_at": r.updated_at.isoformat() if r.updated_at is not None else None} for r in rows[:limit]]
    return {"blocks": blocks, "blocks_total": len(rows), "delta": policy.delta if policy else None,
            "cap_epsilon": policy.cap_epsilon if policy else None,
            "refused": {str(st or "(feed)"): int(n or 0) for st, n in refused}}


def budget_page(data: dict[str, Any], ctx: dict[str, Any] | None = None) -> str:
    """The ``/budget`` page (templates/budget.html): each block's odometer, ε beside ρ at the ledger's δ."""
    return render("budget.html", ctx, title="Privacy budget", data=data, json_href="/api/budget")


def counts_section(manifest: dict[str, Any] | None) -> str:
    """A release page's section (templates/counts.html): its count tables, ``count ± ci95`` per cell, and its
    blocks' budgets; empty when the release has no DP counts."""
    dp = (manifest or {}).get("dp")
    return render("counts.html", None, dp=dp, max_rows=MAX_ROWS).strip() if isinstance(dp, dict) else ""


async def page_budget(request: web.Request) -> web.Response:
    data = await asyncio.to_thread(budget_data, _svc(request))
    return web.Response(text=budget_page(data, await page_context(request)), content_type="text/html")


async def api_budget(request: web.Request) -> web.Response:
    return web.json_response(await asyncio.to_thread(budget_data, _svc(request)))


def routes() -> list[web.RouteDef]:
    """The budget page and its JSON (registered by :func:`stream.console.web.create_app`)."""
    return [web.get("/budget", page_budget), web.get("/api/budget", api_budget)]
