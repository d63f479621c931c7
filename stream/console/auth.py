"""The operator token: who may read and control the console, and how wrong tokens are slowed down.

* Controls (every ``POST``) always need the token, sent as ``Authorization: Bearer <token>``,
  ``X-Operator-Token`` or a ``token`` form field.
* In production (``ANONSTREAM_MODE=production``) every page and API read needs it too: the header,
  or the session cookie a browser gets from ``/login`` (an HMAC of the token, HttpOnly,
  SameSite=Strict, so a cross-site form can never use it). Without a configured token the
  production console answers 403 everywhere. In embedded mode reads stay open on loopback only: a
  console bound to any other address needs the token for every read too (``reads_need_token``), and
  refuses to start without one (:func:`stream.console.server.start_console`).
* Wrong tokens are slowed down per client address (:class:`TokenGuard`): the first few cost
  nothing, then each one waits twice as long as the previous one (up to a cap) and a client's
  guesses are checked one at a time, so parallel connections do not help; the failures are logged,
  one line per client per interval with a count. A right token resets the client's count.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from urllib.parse import quote

from aiohttp import web
from aiohttp.typedefs import Middleware

from stream.config.settings import Settings, secret_value
from stream.worker.throttle import FailureLog

log = logging.getLogger(__name__)
COOKIE = "anonstream_session"
OPEN_PATHS = ("/login",)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass
class _Client:
    failures: int = 0
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


class WrongToken(Exception):
    """The supplied token is wrong (after the guard's delay)."""


class TokenGuard:
    """Checks supplied tokens in constant time, slowing down and logging repeated wrong ones per client."""

    def __init__(self, settings: Settings, free: int = 3, base_s: float = 0.5, cap_s: float = 30.0,
                 max_clients: int = 10_000, reads_need_token: bool = False) -> None:
        self.expected = secret_value(settings.operator_token) or ""
        self.production = settings.mode == "production" or reads_need_token  # every read needs the token
        self.free, self.base_s, self.cap_s, self.max_clients = free, base_s, cap_s, max_clients
        self._clients: OrderedDict[str, _Client] = OrderedDict()
        self.failures = FailureLog(log, interval_s=60.0)

    @property
    def configured(self) -> bool:
        return bool(self.expected)

    def session_value(self) -> str:
        """The session cookie's value: derived from the token, so changing the token ends every session."""
        return hmac.new(self.expected.encode(), b"anonstream-console-session", "sha256").hexdigest()

    def delay_for(self, failures: int) -> float:
        """Seconds a client waits before its next guess is answered, after ``failures`` wrong tokens."""
        over = failures - self.free
        return 0.0 if over <= 0 else min(self.base_s * 2 ** (over - 1), self.cap_s)

    def _client(self, address: str) -> _Client:
        c = self._clients.pop(address, None) or _Client()
        self._clients[address] = c  # most recent last; the oldest are forgotten past max_clients
        while len(self._clients) > self.max_clients:
            self._clients.popitem(last=False)
        return c

    async def check(self, address: str, supplied: str, cookie: bool = False) -> None:
        """Return if ``supplied`` is the token (or, with ``cookie``, the session value); else wait and raise."""
        client = self._client(address)
        async with client.lock:  # one guess at a time per client
            await asyncio.sleep(self.delay_for(client.failures))
            expected = self.session_value() if cookie else self.expected
            given = supplied.encode("utf-8", "surrogateescape")  # headers may carry any byte
            if self.expected and hmac.compare_digest(given, expected.encode()):
                client.failures = 0
                return
            client.failures += 1
            self.failures.failed(f"wrong token from {address}", WrongToken(f"{client.failures} in a row"),
                                 f"console: wrong operator token from {address}", logging.WARNING)
        raise WrongToken


def supplied_token(request: web.Request, form: dict[str, str] | None = None) -> str:
    auth = request.headers.get("Authorization", "")
    return ((auth[7:].strip() if auth.lower().startswith("bearer ") else "")
            or request.headers.get("X-Operator-Token", "").strip() or (form or {}).get("token", "").strip())


def client_address(request: web.Request) -> str:
    return request.remote or "unknown"


def _wants_html(request: web.Request) -> bool:
    return request.method in ("GET", "HEAD") and not (request.path == "/api" or request.path.startswith("/api/"))


def make_auth_middleware(guard: TokenGuard) -> Middleware:
    """Production: every read needs the token (header) or the session cookie; controls check it themselves."""

    @web.middleware
    async def require_token(request: web.Request, handler: Handler) -> web.StreamResponse:
        if not guard.production or request.path in OPEN_PATHS or request.method == "POST":
            return await handler(request)
        if not guard.configured:
            raise web.HTTPForbidden(text="the console is disabled: production needs ANONSTREAM_OPERATOR_TOKEN")
        token, cookie = supplied_token(request), request.cookies.get(COOKIE, "")
        if not token and not cookie:
            if _wants_html(request):
                raise web.HTTPSeeOther(f"/login?next={quote(request.path_qs, safe='')}")
            raise web.HTTPUnauthorized(text="operator token required",
                                       headers={"WWW-Authenticate": 'Bearer realm="anonstream console"'})
        try:
            await guard.check(client_address(request), token or cookie, cookie=not token)
        except WrongToken:
            raise web.HTTPForbidden(text="wrong operator token") from None
        return await handler(request)

    return require_token


def safe_next(value: str | None) -> str:
    """A local path to return to after logging in (never another site)."""
    if not value or not value.startswith("/") or value.startswith("//") or "\\" in value:
        return "/releases"
    return value
