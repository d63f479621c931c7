"""The console's control routes: the operator token check, sign-in, and every ``POST`` control.

A control needs the operator token (``Authorization: Bearer``, ``X-Operator-Token`` or a ``token``
form field): none is 401, a wrong one (or none configured) 403, and wrong tokens are slowed down
(:mod:`stream.console.auth`). Each control runs one :mod:`stream.console.controls` function in a
thread and answers JSON, or an HTML result page for the console's own forms.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from typing import Any

from aiohttp import web

from stream.console import auth, pages
from stream.console.controls import ControlError
from stream.console.service import ConsoleService

SERVICE: web.AppKey[ConsoleService] = web.AppKey("console_service", ConsoleService)
GUARD: web.AppKey[auth.TokenGuard] = web.AppKey("token_guard", auth.TokenGuard)


def _svc(request: web.Request) -> ConsoleService:
    return request.app[SERVICE]


# --- token ---------------------------------------------------------------------------------------------
async def _form(request: web.Request) -> dict[str, str]:
    if request.content_type in ("application/x-www-form-urlencoded", "multipart/form-data"):
        try:
            return _no_nul({k: str(v) for k, v in (await request.post()).items()})
        except ValueError:  # e.g. multipart without a boundary, or a body that is not a form
            raise ControlError("request body is not a valid form", 400) from None
    if request.content_type == "application/json" and request.can_read_body:
        try:
            body = await request.json()
        except (ValueError, RecursionError):
            raise ControlError("request body is not valid JSON", 400) from None
        return _no_nul({str(k): str(v) for k, v in body.items()}) if isinstance(body, dict) else {}
    return {}


def _no_nul(form: dict[str, str]) -> dict[str, str]:
    if any("\x00" in k or "\x00" in v for k, v in form.items()):
        raise ControlError("NUL characters are not allowed in a form", 400)
    return form


async def check_token(request: web.Request, form: dict[str, str]) -> None:
    supplied = auth.supplied_token(request, form)
    if not supplied:
        raise web.HTTPUnauthorized(text="operator token required for controls",
                                   headers={"WWW-Authenticate": 'Bearer realm="anonstream console"'})
    guard = request.app[GUARD]
    if not guard.configured:
        raise web.HTTPForbidden(text="controls are disabled: no operator token is configured")
    try:
        await guard.check(auth.client_address(request), supplied)
    except auth.WrongToken:
        raise web.HTTPForbidden(text="wrong operator token") from None


async def login_form(request: web.Request) -> web.Response:
    return web.Response(text=pages.login_page(auth.safe_next(request.query.get("next"))), content_type="text/html")


async def login(request: web.Request) -> web.Response:
    form = await _form(request)
    target = auth.safe_next(form.get("next"))
    guard = request.app[GUARD]
    if not guard.configured:
        raise web.HTTPForbidden(text="the console has no operator token configured")
    if not form.get("token", "").strip():
        return web.Response(text=pages.login_page(target, "enter the operator token"), status=401,
                            content_type="text/html")
    try:
        await guard.check(auth.client_address(request), form.get("token", "").strip())
    except auth.WrongToken:
        return web.Response(text=pages.login_page(target, "wrong operator token"), status=403,
                            content_type="text/html")
    resp = web.HTTPSeeOther(target)
    resp.set_cookie(auth.COOKIE, guard.session_value(), httponly=True, samesite="Strict", path="/")
    raise resp


def actor_of(request: web.Request, form: dict[str, str]) -> str:
    name = form.get("actor") or request.headers.get("X-Operator") or ""
    name = re.sub(r"[^A-Za-z0-9 ._@-]", "", name).strip()[:60]
    return f"operator:{name}" if name else "operator"


async def _control(request: web.Request, fn: Callable[[dict[str, str], str], Any], title: str,
                   back: str) -> web.Response:
    form = await _form(request)
    await check_token(request, form)
    result = await asyncio.to_thread(fn, form, actor_of(request, form))
    if request.content_type == "application/x-www-form-urlencoded" and "text/html" in request.headers.get("Accept", ""):
        return web.Response(text=pages.result_page(title, result, back), content_type="text/html")
    return web.json_response(result)


# --- controls ------------------------------------------------------------------------------------------
async def station_control(request: web.Request) -> web.Response:
    station, action = request.match_info["station"], request.match_info["action"]
    if action not in ("pause", "resume", "flush"):
        raise ControlError("action must be pause, resume or flush", 404)
    svc = _svc(request)
    if action == "flush":  # release what waits below min_release_rows now (anonstream windows flush)
        return await _control(request, lambda _form, actor: svc.flush(station, actor), f"Station {station}: flush",
                              "/health")
    return await _control(request, lambda form, actor: svc.pause(station, action == "pause", actor, form.get("note")),
                          f"Station {station}: {action}", "/health")


async def registry_control(request: web.Request) -> web.Response:
    action = request.match_info["action"]
    if action not in ("add", "remove"):
        raise ControlError("action must be add or remove", 404)
    svc = _svc(request)
    if action == "add":
        return await _control(request, lambda form, actor: svc.register(form.get("stations", ""), actor,
                                                                        form.get("note")),
                              "Register stations", "/health")
    return await _control(request, lambda form, actor: svc.unregister(form.get("stations", ""), actor),
                          "Unregister stations", "/health")


async def verify_release(request: web.Request) -> web.Response:
    rid = request.match_info["release_id"]
    svc = _svc(request)
    return await _control(request, lambda _form, actor: svc.reverify(rid, actor), f"Re-verify {rid}",
                          f"/releases/{rid}")


async def release_window(request: web.Request) -> web.Response:
    wid = request.match_info["window_id"]
    svc = _svc(request)
    return await _control(request, lambda form, actor: svc.release_window(wid, actor, form.get("mode", "retry"),
                                                                          form.get("note")),
                          f"Release window {wid}", "/health")
