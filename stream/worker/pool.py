"""Releases computed in child processes, so a worker's event loop never shares its GIL with them.

A worker's faust event loop, its ingest validation and the Python parts of a release (loading the
candidates, encoding the batch, the engine's driver loop, verification, encoding 10,000 records)
all need the one GIL of the worker process; only the numba kernels and the database driver release
it. Measured on 2 cores with releases in threads, the worker process averaged about one core while
the machine had idle capacity, and ingest slowed down whenever a window was being released.

:class:`ReleasePool` runs :meth:`Orchestrator.release_window` in ``RELEASE_CONCURRENCY`` child
processes, each with its own database connection and orchestrator. The parent claims the window
(so the scheduling is unchanged), the child samples, anonymizes, verifies and writes the ledger
exactly as the thread did, and hands back the release id with the encoded messages; the parent
publishes them. A child signals verification through a queue, so the release slot is freed at the
same point as with threads. A child that dies leaves its window claimed in the database (it is
retried after ``CLAIM_TIMEOUT_S``, as for a crashed worker) and the pool is rebuilt; a worker that
dies takes its release processes with it.

The children are forked from a fork server (``multiprocessing``'s ``forkserver``: a clean process,
started without the worker's threads, that imports this module once, with pandas, SQLAlchemy, numba,
the risk models and the configured engine's module, and loads numba's own tables:
:mod:`stream.worker.fork_preload`). The worker process itself never imports numba or the engine. Spawned
children each imported all of that again: about 2 s of CPU per release process, at every start and
at every rebuild; a forked child starts in milliseconds and shares the imported code with its
siblings. A child is started from a thread, never on the worker's event loop: the fork server's
first start takes seconds, and ingest must not wait for it.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
import select
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from datetime import datetime
from typing import Any

from core.dp_spec import DPSpec
from db.models import Window
from stream.config.settings import Settings
from stream.ops.locate import pid_alive
from stream.ops.logs import ctx
from stream.worker.engine_choice import default_engine, engine_module_of
from stream.worker.fork_warm import DP_VARIABLE, ENGINE_VARIABLE, dp_budgets
from stream.worker.release import Orchestrator

log = logging.getLogger(__name__)

Encoded = tuple[bytes, list[bytes]]

# --- the child side ---------------------------------------------------------------------------------
_CHILD: dict[str, Any] = {}


def _child_init(settings: Settings, worker: str, verified: Any, barrier: Any, log_level: int, parent: int) -> None:
    from db import Database
    from stream.io.specs import load_schema
    from stream.ops import logs
    from stream.worker.release import Orchestrator

    _exit_with_parent(parent)
    # a terminal's Ctrl-C reaches the whole process group: the worker stops its release processes itself
    # (close), so a child never dies of it mid-release and hands a KeyboardInterrupt back to the worker
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    logs.setup(fmt=settings.log_format, level=log_level)
    db = Database(settings.db_url())
    _CHILD.update(orchestrator=Orchestrator(settings, db, load_schema(settings.spec), worker, keep_encoded=True),
                  verified=verified, barrier=barrier)


def _exit_with_parent(parent: int) -> None:
    """A worker killed hard (SIGKILL, ``os._exit``) never shuts its pool down: its release processes
    notice that it ended and exit (an open ledger transaction rolls back; the window stays claimed and
    is retried after the claim timeout).

    ``parent`` is the worker's pid as the worker saw it (a forked child's parent is the fork server,
    which outlives the worker as long as a child holds its pipe). On Linux a pidfd of the worker
    becomes readable the moment it ends, zombie or not; elsewhere its pid is polled every second. A
    worker that died before this point, while the child was starting, is caught here too."""
    try:
        handle = os.pidfd_open(parent) if hasattr(os, "pidfd_open") else None
    except ProcessLookupError:
        os._exit(0)
    except OSError:  # no pidfd support in this kernel: poll
        handle = None

    def watch() -> None:
        if handle is not None:
            select.select([handle], [], [])
        else:
            while pid_alive(parent):
                time.sleep(1.0)
        os._exit(0)

    if handle is None and not pid_alive(parent):
        os._exit(0)
    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


def _child_warm_up(rows: list[dict[str, Any]]) -> float | None:
    elapsed = _CHILD["orchestrator"].warm_up(rows)
    _CHILD["barrier"].wait(timeout=120)  # every child takes exactly one warm-up task
    return elapsed


def _child_release(window_id: str, now: datetime) -> tuple[str | None, Encoded | None]:
    orchestrator = _CHILD["orchestrator"]
    window = orchestrator.repo.window(window_id)
    if window is None:
        return None, None
    rid = orchestrator.release_window(window, now, lambda: _CHILD["verified"].put(window_id))
    return rid, (orchestrator.take_encoded(rid) if rid is not None else None)


# --- the parent side --------------------------------------------------------------------------------
def _start_fork_server() -> None:
    """Start the fork server with SIGINT blocked, as ``multiprocessing`` starts its resource tracker: a
    terminal's Ctrl-C reaches the whole process group, and the server would die of it with a traceback on
    the worker's output while it still imports ``site``, before its preload ignores SIGINT
    (:mod:`stream.worker.fork_preload`, which then unblocks it)."""
    from multiprocessing import forkserver, resource_tracker

    resource_tracker.ensure_running()  # first: starting it unblocks SIGINT in this thread whatever was blocked
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        forkserver.ensure_running()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


class ReleasePool:
    """``processes`` child processes that release windows; see the module docstring."""

    def __init__(self, settings: Settings, worker: str, processes: int, dp: DPSpec | None = None) -> None:
        """``dp``: the spec's ``[dp]`` table, whose ε budgets the fork server converts to ρ once."""
        self.settings, self.worker, self.processes = settings, worker, processes
        self._ctx = multiprocessing.get_context("forkserver")
        # the server imports this module once, with numba's tables (fork_preload.py), and the engine's module
        # (if it fails to, the children import their engine themselves), then loads its kernels (fork_warm.py)
        os.environ[ENGINE_VARIABLE] = settings.engine or default_engine(settings)
        os.environ[DP_VARIABLE] = dp_budgets([(dp.epsilon, dp.delta), (dp.cap_epsilon, dp.delta)] if dp else [])
        self._ctx.set_forkserver_preload(["stream.worker.fork_preload", engine_module_of(settings),
                                          "stream.worker.fork_warm"])
        self._callbacks: dict[str, Callable[[], None]] = {}
        self._lock = threading.Lock()
        self._pool_lock = threading.Lock()  # the pool is built and rebuilt from threads (see _submit)
        self._executor: ProcessPoolExecutor | None = None
        self._verified: Any = None  # queue and reader thread start with the first child
        self._closed = False
        self._reader: threading.Thread | None = None

    def _pool(self) -> ProcessPoolExecutor:
        with self._pool_lock:
            return self._pool_locked()

    def _pool_locked(self) -> ProcessPoolExecutor:
        if self._closed:  # the worker is stopping: no child is started after close() (it would outlive us)
            raise BrokenProcessPool("the release processes are stopped")
        if self._verified is None:
            self._verified = self._ctx.Queue()
            self._reader = threading.Thread(target=self._read_verified, name="release-pool-verified", daemon=True)
            self._reader.start()
        if self._executor is None:
            barrier = self._ctx.Barrier(self.processes)
            self._executor = ProcessPoolExecutor(
                self.processes, mp_context=self._ctx, initializer=_child_init,
                initargs=(self.settings, self.worker, self._verified, barrier, logging.getLogger().level,
                          os.getpid()))
        return self._executor

    async def start(self) -> None:
        """Start the fork server now (its preload runs in the background, in its own process): a worker
        calls this as it starts, so the imports and the engine's kernels are loaded before the first batch
        arrives, not while it is ingested, and a window due early does not wait for them."""
        await asyncio.to_thread(_start_fork_server)

    async def _submit(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run ``fn(*args)`` in a child. ``ProcessPoolExecutor.submit`` starts a child when none is idle,
        and starting one waits for the fork server (its first start imports the engines: seconds on a
        loaded machine), so the submission is made from a thread: the worker's event loop, and with it
        ingest, never waits for a child to start."""
        future = await asyncio.to_thread(self._submit_locked, fn, *args)
        return await asyncio.wrap_future(future)

    def _submit_locked(self, fn: Callable[..., Any], *args: Any) -> Any:
        # under the pool lock: a child being started by this submission is registered before close() lists
        # the children to stop (else a child forked while the worker stops outlives it, and fails to read
        # the semaphores the stopped worker removed)
        with self._pool_lock:
            pool = self._pool_locked()  # raises once the pool is closed
            # the fork server as start() starts it (SIGINT blocked), also when it died and is started again
            # or start() was never called; a running server costs a check
            _start_fork_server()
            return pool.submit(fn, *args)

    def _read_verified(self) -> None:
        while True:
            window_id = self._verified.get()
            if window_id is None:
                return
            with self._lock:
                callback = self._callbacks.pop(window_id, None)
            if callback is not None:
                callback()

    async def warm_up(self, rows: list[dict[str, Any]]) -> None:
        """Run the engine once in every child (the numba kernels load there, not in the first window)."""
        done = await asyncio.gather(*(self._submit(_child_warm_up, rows) for _ in range(self.processes)),
                                    return_exceptions=True)
        times = [t for t in done if isinstance(t, float)]
        if times:
            log.info("engine warmed up in %d of %d release processes (%.2fs at most)", len(times), self.processes,
                     max(times))

    async def release(self, window: Window, now: datetime,
                      on_verified: Callable[[], None]) -> tuple[str | None, Encoded | None]:
        """Release a claimed window in a child; ``on_verified`` runs (in a thread) once it is verified."""
        window_id = window.id
        with self._lock:
            self._callbacks[window_id] = on_verified
        try:
            result: tuple[str | None, Encoded | None] = await self._submit(_child_release, window_id, now)
            return result
        except BrokenProcessPool:
            if self._closed:  # the worker is stopping: it hands the window back (WorkerService.close)
                raise
            log.error("a release process died while releasing window %s; restarting the release processes",
                      window_id, extra=ctx(window=window_id))
            self._restart()
            raise
        finally:
            with self._lock:
                self._callbacks.pop(window_id, None)

    def pids(self) -> list[int]:
        """The release processes' pids (metrics: their memory)."""
        executor = self._executor
        procs = getattr(executor, "_processes", None) or {}  # ProcessPoolExecutor keeps them by pid
        return [p for p in list(procs) if isinstance(p, int)]

    def _restart(self, kill: bool = False, closing: bool = False) -> None:
        with self._pool_lock:  # no submission is under way (see _submit_locked), and none starts a child after
            self._closed = self._closed or closing
            executor, self._executor = self._executor, None
            procs = list((getattr(executor, "_processes", None) or {}).values())
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)
            if kill:  # a stopping worker takes its release processes with it, busy or not
                for proc in procs:
                    if proc.is_alive():
                        proc.terminate()
                for proc in procs:  # gone before the queue's semaphores are (close)
                    proc.join(timeout=10)

    def close(self) -> None:
        """Stop the release processes, busy or not, and the queue they report to (its semaphores released)."""
        self._restart(kill=True, closing=True)
        if self._verified is not None:
            self._verified.put(None)
            if self._reader is not None:
                self._reader.join(timeout=5)
            if self._reader is None or not self._reader.is_alive():  # closed once read to its end
                self._verified.close()
                self._verified.join_thread()


class ThreadReleases:
    """The same interface as :class:`ReleasePool`, releasing in threads of the worker process
    (``RELEASE_PROCESSES=false``): less memory, but the release shares the worker's GIL."""

    def __init__(self, orchestrator: Orchestrator) -> None:
        self.orchestrator = orchestrator

    async def start(self) -> None:
        """Nothing to start: the engine runs in this process."""

    async def warm_up(self, rows: list[dict[str, Any]]) -> None:
        await asyncio.to_thread(self.orchestrator.warm_up, rows)

    async def release(self, window: Window, now: datetime,
                      on_verified: Callable[[], None]) -> tuple[str | None, Encoded | None]:
        """The encoded messages stay with the orchestrator (``take_encoded``): None is returned for them."""
        return await asyncio.to_thread(self.orchestrator.release_window, window, now, on_verified), None

    def close(self) -> None:
        pass
