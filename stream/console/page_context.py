"""What every console page needs besides its own data: the deployment's verdict and whether the reader is
the operator.

* ``verdict``: :func:`stream.console.verdict.deployment_verdict` as a dict; when it is not healthy every page
  shows it as a banner (the first finding and its one action) and the Health link carries a badge.
* ``operator``: the request carries a valid operator token (``Authorization: Bearer``, ``X-Operator-Token``
  or the session cookie from ``/login``). Only then are control forms (and their token boxes) shown. A
  wrong token is checked through the console's :class:`stream.console.auth.TokenGuard`, so guessing by
  reading pages is slowed down exactly like guessing by posting controls.
"""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import web

from stream.console import auth
from stream.console.control_routes import GUARD, _svc


async def is_operator(request: web.Request) -> bool:
    """Whether the request carries the operator token or a valid session cookie."""
    guard = request.app[GUARD]
    token, cookie = auth.supplied_token(request), request.cookies.get(auth.COOKIE, "")
    if not guard.configured or not (token or cookie):
        return False
    try:
        await guard.check(auth.client_address(request), token or cookie, cookie=not token)
    except auth.WrongToken:
        return False
    return True


async def page_context(request: web.Request, verdict: dict[str, Any] | None = None) -> dict[str, Any]:
    """``verdict`` (computed unless given, e.g. by the Health page from its own health view), ``operator``
    and ``request_path`` for the sign-in link."""
    if verdict is None:
        from stream.console.verdict import deployment_verdict

        verdict = (await asyncio.to_thread(deployment_verdict, _svc(request))).as_dict()
    return {"verdict": verdict, "operator": await is_operator(request), "request_path": request.path_qs}
