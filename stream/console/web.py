"""The console's aiohttp application: HTML pages, the JSON API behind each page, and the controls.

Every ``POST`` is a control and needs the operator token (``ANONSTREAM_OPERATOR_TOKEN``), sent as
``Authorization: Bearer <token>``, ``X-Operator-Token`` or, from the HTML forms, a ``token`` form
field. No token: 401. A wrong token, or no token configured (controls disabled): 403. Reads are open
in embedded mode; in production they need the token too (:mod:`stream.console.auth`, which also
slows down repeated wrong tokens). Tokens are compared in constant time and never logged.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web
from sqlalchemy.exc import SQLAlchemyError

from db.console_queries import ReleaseFilter
from stream.console import auth, budget, pages, views
from stream.console.control_routes import (
    GUARD,
    SERVICE,
    _svc,
    login,
    login_form,
    registry_control,
    release_window,
    station_control,
    verify_release,
)
from stream.console.controls import ControlError
from stream.console.health_page import health_page
from stream.console.page_context import page_context
from stream.console.service import ConsoleService, parse_when

log = logging.getLogger(__name__)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
API_INDEX = {
    "GET /api/releases?station=&since=YYYY-MM-DD&until=YYYY-MM-DD&engine=&limit=&offset=": "releases list",
    "GET /api/releases/{id}": "release detail with class sizes, offence frequencies, loss per attribute",
    "GET /api/releases/{id}/front": "PBG-EA front (stored, or recomputed from the stored sample and seed)",
    "GET /api/health": "pool, DLQ, windows held/carried, consumer lag, worker status",
    "GET /api/windows?state=held,carried": "windows by state",
    "GET /api/windows/{id}": "one window: state, reason, release, audit trail",
    "GET /api/signoff?since=YYYY-MM-DD&until=YYYY-MM-DD&feed=": "sign-off for a period: totals, requirements, "
                                                               "risk, utility, budget per block, held windows",
    "GET /api/stations": "stations with their pool counts and pause flag",
    "GET /api/audit?limit=": "audit trail",
    "GET /api/budget": "privacy budget per block (cap, spent, remaining) and releases whose counts were refused",
    "POST /api/stations/{station}/pause|resume|flush": "control (token); flush: release what waits below "
                                                         "min_release_rows now",
    "POST /api/registry/add|remove (form or JSON: stations, note)": "station registry control (token)",
    "POST /api/releases/{id}/verify": "control (token): re-verify from the output topic",
    "POST /api/windows/{id}/release (mode=retry|carry)": "control (token): release a held window",
}


_CONTROL_CHARS = re.compile(r"[\x00-\x1f\x7f]")


def _json_error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message, "status": status}, status=status)


@web.middleware
async def errors_and_headers(request: web.Request, handler: Handler) -> web.StreamResponse:
    html = ((request.method == "GET" and not request.path.startswith("/api/"))
            or (request.method == "POST" and "text/html" in request.headers.get("Accept", "")))
    try:
        if _CONTROL_CHARS.search(request.path) or any(_CONTROL_CHARS.search(k + v) for k, v in request.query.items()):
            raise ControlError("control characters are not allowed in the address", 400)
        resp = await handler(request)
    except ControlError as exc:
        resp = (web.Response(text=pages.error_page(exc.status, str(exc)), status=exc.status, content_type="text/html")
                if html else _json_error(exc.status, str(exc)))
    except SQLAlchemyError as exc:
        log.warning("console: database error %s", type(exc).__name__)
        msg = "the ledger database is unreachable or not migrated yet (anonstream migrate)"
        resp = (web.Response(text=pages.error_page(503, msg), status=503, content_type="text/html")
                if html else _json_error(503, msg))
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        msg = exc.text or exc.reason
        resp = (web.Response(text=pages.error_page(exc.status, msg), status=exc.status, content_type="text/html")
                if html else _json_error(exc.status, msg))
        for h in ("WWW-Authenticate", "Location"):
            if h in exc.headers:
                resp.headers[h] = exc.headers[h]
    resp.headers["X-Content-Type-Options"] = "nosniff"
    resp.headers["Content-Security-Policy"] = ("default-src 'none'; img-src 'self'; style-src 'unsafe-inline'; "
                                               "form-action 'self'; frame-ancestors 'none'")
    resp.headers["Cache-Control"] = "no-store"
    return resp


async def _call(request: web.Request, fn: Callable[..., Any], *args: Any) -> Any:
    return await asyncio.to_thread(fn, *args)


# --- reads ---------------------------------------------------------------------------------------------
def _release_filter(request: web.Request) -> ReleaseFilter:
    qs = request.query
    try:
        limit = min(max(int(qs.get("limit", 100)), 1), 1000)
        offset = max(int(qs.get("offset", 0)), 0)
    except ValueError:
        raise ControlError("limit and offset must be integers", 400) from None
    return ReleaseFilter(station=qs.get("station") or None, since=parse_when(qs.get("since")),
                         until=parse_when(qs.get("until"), end_of_day=True), engine=qs.get("engine") or None,
                         feed=qs.get("feed") or None,
                         limit=limit, offset=offset)


async def api_releases(request: web.Request) -> web.Response:
    return web.json_response(await _call(request, _svc(request).releases, _release_filter(request)))


async def page_releases(request: web.Request) -> web.Response:
    data = await _call(request, _svc(request).releases, _release_filter(request))
    data["query"] = {k: request.query.get(k, "") for k in ("station", "since", "until", "feed")}
    return web.Response(text=pages.releases_page(data, await page_context(request)), content_type="text/html")


async def _release(request: web.Request) -> dict[str, Any]:
    detail = await _call(request, _svc(request).release, request.match_info["release_id"])
    if detail is None:
        raise ControlError("no such release", 404)
    return detail


async def api_release(request: web.Request) -> web.Response:
    return web.json_response(await _release(request))


async def page_release(request: web.Request) -> web.Response:
    d = await _release(request)
    return web.Response(text=pages.release_page(d, await page_context(request)), content_type="text/html")


async def page_report(request: web.Request) -> web.Response:
    """The release's sign-off report (stream/console/report.py), one self-contained page."""
    from stream.console.report import render

    return web.Response(text=render(await _release(request)), content_type="text/html")


async def api_front(request: web.Request) -> web.Response:
    out = await _call(request, _svc(request).front, request.match_info["release_id"])
    if out is None:
        raise ControlError("no such release", 404)
    return web.json_response(out)


async def plot(request: web.Request) -> web.Response:
    svg = await _call(request, _svc(request).plot, request.match_info["release_id"], request.match_info["name"])
    if svg is None:
        raise ControlError("no such release or plot", 404)
    return web.Response(text=svg, content_type="image/svg+xml")


async def api_health(request: web.Request) -> web.Response:
    h = await _call(request, _svc(request).health)
    return web.json_response(h, status=200 if h["verdict"]["ok"] else 503)  # 503: the verdict is not healthy


async def page_health(request: web.Request) -> web.Response:
    h = await _call(request, _svc(request).health)
    ctx = await page_context(request, h["verdict"])
    return web.Response(text=health_page(h, ctx), content_type="text/html", status=200 if h["verdict"]["ok"] else 503)


async def api_windows(request: web.Request) -> web.Response:
    states = tuple(s.strip() for s in request.query.get("state", "held,carried").split(",") if s.strip())
    return web.json_response({"windows": await _call(request, _svc(request).windows, states)})


async def api_stations(request: web.Request) -> web.Response:
    health = await _call(request, _svc(request).health)
    return web.json_response({"stations": health["pool"]["stations"]})


def _limit(request: web.Request, default: int = 100) -> int:
    try:
        return min(max(int(request.query.get("limit", default)), 1), 1000)
    except ValueError:
        raise ControlError("limit must be an integer", 400) from None


async def api_audit(request: web.Request) -> web.Response:
    return web.json_response({"audit": await _call(request, _svc(request).audit, _limit(request))})


async def page_audit(request: web.Request) -> web.Response:
    rows = await _call(request, _svc(request).audit, _limit(request))
    return web.Response(text=pages.audit_page(rows, await page_context(request)), content_type="text/html")


async def api_index(_request: web.Request) -> web.Response:
    return web.json_response({"endpoints": API_INDEX})


def create_app(service: ConsoleService, reads_need_token: bool = False) -> web.Application:
    guard = auth.TokenGuard(service.settings, reads_need_token=reads_need_token)
    app = web.Application(middlewares=[errors_and_headers, auth.make_auth_middleware(guard)], client_max_size=64 * 1024)
    app[SERVICE] = service
    app[GUARD] = guard
    app.add_routes([
        web.get("/login", login_form), web.post("/login", login),
        web.get("/releases", page_releases), web.get("/releases/{release_id}", page_release),
        web.get("/releases/{release_id}/report", page_report),
        web.get("/releases/{release_id}/plots/{name}.svg", plot), web.get("/health", page_health),
        web.get("/audit", page_audit), web.get("/api", api_index), web.get("/api/releases", api_releases),
        web.get("/api/releases/{release_id}", api_release), web.get("/api/releases/{release_id}/front", api_front),
        web.get("/api/health", api_health), web.get("/api/windows", api_windows),
        web.get("/api/stations", api_stations), web.get("/api/audit", api_audit),
        web.post("/api/stations/{station}/{action}", station_control),
        web.post("/api/registry/{action}", registry_control),
        web.post("/api/releases/{release_id}/verify", verify_release),
        web.post("/api/windows/{window_id}/release", release_window), *budget.routes(), *views.routes(),
    ])
    return app
