"""Starting and stopping the console: in-process (:func:`start_console`) or standalone (:func:`serve`)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import threading
from collections.abc import Callable
from typing import Any, Self

from aiohttp import web

from core.errors import ParamsError
from db.session import Database
from stream.config.settings import Settings, secret_value
from stream.console.service import ConsoleService
from stream.console.web import create_app

log = logging.getLogger(__name__)
DEFAULT_PORT = 6067


async def start_console(settings: Settings, db: Database | None = None, *, host: str | None = None,
                        port: int | None = None, status_provider: Callable[[], dict[str, Any]] | None = None,
                        broker_timeout_s: float = 8.0) -> web.AppRunner:
    """Serve the console on ``host:port`` (default ``settings.web_host``:6067; port 0 picks a free one)
    in the running event loop and return the runner; ``await runner.cleanup()`` stops it.

    ``db`` lets the worker share its :class:`~db.session.Database`; ``status_provider`` (a cheap,
    non-blocking callable returning a JSON-able dict, e.g. the worker's counters) is shown on the
    health page as the in-process worker status. Bound to an address other than loopback, every page
    needs the operator token, in any mode; without one configured it refuses to start.
    """
    bind = host or settings.web_host
    exposed = check_bind(settings, bind)
    service = ConsoleService(settings, db, status_provider=status_provider, broker_timeout_s=broker_timeout_s)
    runner = web.AppRunner(create_app(service, reads_need_token=exposed), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, bind, DEFAULT_PORT if port is None else port)
    await site.start()
    log.info("operator console on %s", console_url(runner))
    return runner


def check_bind(settings: Settings, bind: str) -> bool:
    """Whether the console on ``bind`` is exposed beyond loopback (then every read needs the token); in
    embedded mode without a token, :class:`ParamsError` (production answers 403 everywhere instead)."""
    exposed = not is_loopback(bind)
    if exposed and secret_value(settings.operator_token) is None and settings.mode != "production":
        raise ParamsError(f"the console on {bind} would serve the ledger to other machines without a token: set "
                          "ANONSTREAM_OPERATOR_TOKEN (generate one with `anonstream keys generate`) or bind 127.0.0.1",
                          reason="missing-setting")
    return exposed


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address or ``localhost`` (not ``0.0.0.0``, ``::`` or a name)."""
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def console_url(runner: web.AppRunner) -> str:
    """``http://host:port`` the runner listens on (the first address)."""
    host, port = runner.addresses[0][:2]
    return f"http://{host}:{port}"


def serve(settings: Settings, host: str | None = None, port: int | None = None,
          on_ready: Callable[[str], None] | None = None) -> int:
    """Run the console standalone until SIGINT / SIGTERM (``anonstream console``)."""

    async def main() -> None:
        runner = await start_console(settings, host=host, port=port)
        if on_ready is not None:
            on_ready(console_url(runner))
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            # no signal handlers on Windows (NotImplementedError) or outside the main thread (RuntimeError):
            # the console then stops with the process, as any asyncio program does
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, stop.set)
        try:
            await stop.wait()
        finally:
            await runner.cleanup()

    asyncio.run(main())
    return 0


class ConsoleThread:
    """The console on its own event loop in a daemon thread, for synchronous callers (``anonstream demo``,
    tests). ``ConsoleThread(settings, port=0).url`` is where it listens; :meth:`close` stops it."""

    def __init__(self, settings: Settings, db: Database | None = None, **kwargs: Any) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="anonstream-console", daemon=True)
        self.thread.start()
        try:
            fut = asyncio.run_coroutine_threadsafe(start_console(settings, db, **kwargs), self.loop)
            self.runner = fut.result(timeout=60)
        except BaseException:
            self._stop_loop()
            raise
        self.url = console_url(self.runner)

    def _stop_loop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)
        self.loop.close()

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(timeout=30)
        self._stop_loop()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
