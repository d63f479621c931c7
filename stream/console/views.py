"""The console's overview, windows and period sign-off pages, with their JSON (registered by
:func:`stream.console.web.create_app` through :func:`routes`).

* ``/`` (the landing page): the deployment's verdict first, then what waits (held windows, unpublished
  reports and releases) and the newest releases; never a list of green releases alone.
* ``/windows`` and ``/windows/{id}`` (JSON ``/api/windows``, ``/api/windows/{id}``): windows by state, and
  one window with its reason, release and audit trail; audit entries about a window link here.
* ``/signoff`` (a form and the period's summary) and ``/signoff/report?since=D&until=D`` (the period's
  self-contained sign-off document, :mod:`stream.console.period`); JSON ``/api/signoff?since=D&until=D``.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

from aiohttp import web

from db.console_queries import ReleaseFilter
from stream.console import pages
from stream.console.control_routes import _svc
from stream.console.controls import ControlError
from stream.console.page_context import page_context
from stream.console.period import parse_day, period_data
from stream.console.report import render_period
from stream.console.templating import render
from stream.console.windows_view import window_detail

DEFAULT_STATES = ("held", "carried", "open", "closing")


def _html(text: str, status: int = 200) -> web.Response:
    return web.Response(text=text, content_type="text/html", status=status)


async def overview(request: web.Request) -> web.Response:
    svc = _svc(request)
    h = await asyncio.to_thread(svc.health)
    latest = await asyncio.to_thread(svc.releases, ReleaseFilter(limit=10))
    ctx = await page_context(request, h["verdict"])
    return _html(pages.overview_page(h, latest, ctx))


def _states(request: web.Request) -> tuple[str, ...]:
    given = request.query.getall("state", [])
    states = tuple(s.strip() for part in given for s in part.split(",") if s.strip())
    return states or DEFAULT_STATES


async def page_windows(request: web.Request) -> web.Response:
    states = _states(request)
    rows = await asyncio.to_thread(_svc(request).windows, states)
    return _html(pages.windows_page(rows, states, await page_context(request)))


async def _window(request: web.Request) -> dict[str, Any]:
    w = await asyncio.to_thread(window_detail, _svc(request), request.match_info["window_id"])
    if w is None:
        raise ControlError("no such window", 404)
    return w


async def page_window(request: web.Request) -> web.Response:
    w = await _window(request)
    return _html(pages.window_page(w, await page_context(request)))


async def api_window(request: web.Request) -> web.Response:
    return web.json_response(await _window(request))


def _period(request: web.Request, required: bool = True) -> tuple[Any, Any] | None:
    since, until = request.query.get("since", "").strip(), request.query.get("until", "").strip()
    if not since and not until and not required:
        return None
    try:
        return parse_day(since, "since"), parse_day(until, "until")
    except ValueError as exc:
        raise ControlError(str(exc), 400) from None


async def _period_data(request: web.Request) -> dict[str, Any]:
    period = _period(request)
    assert period is not None
    try:
        return await asyncio.to_thread(period_data, _svc(request), *period, request.query.get("feed") or None)
    except ValueError as exc:
        raise ControlError(str(exc), 400) from None


async def signoff(request: web.Request) -> web.Response:
    """The period form; with ``since`` and ``until``, the period's summary and a link to its document."""
    p = await _period_data(request) if _period(request, required=False) else None
    today = datetime.now(UTC).date()
    since = p["since"] if p else (today - timedelta(days=13)).isoformat()
    until = p["until"] if p else today.isoformat()
    return _html(render("signoff_form.html", await page_context(request), title="Sign-off for a period",
                              p=p, since=since, until=until))


async def signoff_report(request: web.Request) -> web.Response:
    return _html(render_period(await _period_data(request)))


async def api_signoff(request: web.Request) -> web.Response:
    return web.json_response(await _period_data(request))


def routes() -> list[web.RouteDef]:
    return [web.get("/", overview), web.get("/windows", page_windows), web.get("/windows/{window_id}", page_window),
            web.get("/api/windows/{window_id}", api_window), web.get("/signoff", signoff),
            web.get("/signoff/report", signoff_report), web.get("/api/signoff", api_signoff)]
