"""A second thread for core's work, only when the process running core allows it and a core is spare.

core/ reads nothing of the machine it runs on. The process that runs it says what it may use through
:func:`configure` (stream/ops/cores.py: two threads on a machine of two cores or more, and a core
counts as spare while the load leaves one free); alone, core uses one thread. Two users of the second
thread: a lattice search's large roll-ups (core/lattice/threads.py) and the free-bands run beside a
nested release (core/engines/nesting.py for CG, core/engines/hetero/fallback.py for kmember, lgreedy
and ils). One caller at a time holds it (a lock, tried without
waiting); any other runs its work on its own thread.

Whatever runs on the second thread computes exactly what it would on the first: it is given its own
inputs (a copy of the random generator, its own arrays) and its budgets count work, not time, so a
result never depends on the threads (each user's tests run both ways).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor, wait
from contextlib import contextmanager
from typing import TypeVar

A = TypeVar("A")
B = TypeVar("B")

_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_threads = 1  # core reads nothing of its machine: the process that runs it says what it may use (configure)
_spare: Callable[[], bool] = lambda: True


def threads() -> int:
    """Threads core's work may use (1 unless :func:`configure` or :func:`set_threads` said 2)."""
    return _threads


def set_threads(count: int) -> int:
    """Use ``count`` threads (1 or 2) from now on; returns the previous count."""
    global _threads
    if count not in (1, 2):
        raise ValueError(f"core uses 1 or 2 threads, not {count}")
    previous, _threads = _threads, count
    return previous


def configure(count: int, spare: Callable[[], bool]) -> None:
    """What this process may use: ``count`` threads, and ``spare``, asked before each use of the second,
    whether a core is free for it now."""
    global _spare
    set_threads(count)
    _spare = spare


def spare_core() -> bool:
    """Is a core spare for the second thread now (the predicate :func:`configure` was given)?"""
    return _spare()


def _executor() -> ThreadPoolExecutor:
    global _pool
    if _pool is None:
        _pool = ThreadPoolExecutor(1, thread_name_prefix="core")
    return _pool


def _after_fork() -> None:
    """A forked child has no pool thread and must not inherit a lock held by one of its parent's threads."""
    global _lock, _pool
    _lock, _pool = threading.Lock(), None


os.register_at_fork(after_in_child=_after_fork)


@contextmanager
def second_thread() -> Iterator[ThreadPoolExecutor | None]:
    """The second thread's executor while the caller may use it (two threads allowed, a core spare, no
    other caller holding it), else None. Whatever the caller submits must be done before the block ends."""
    if _threads < 2 or not spare_core() or not _lock.acquire(blocking=False):
        yield None
        return
    try:
        yield _executor()
    finally:
        _lock.release()


class Abandoned(Exception):
    """Raised by the check :func:`beside` gives the work beside: the work it ran beside has failed."""


def _never(_done: float, _message: str) -> None:
    return None


def beside(here: Callable[[], A], there: Callable[[Callable[[float, str], None]], B]) -> tuple[A, Callable[[], B]]:
    """``here()`` on this thread while ``there(check)`` runs on the second thread if :func:`second_thread` gives it.

    Returns ``here()``'s result and a callable that gives ``there``'s (raising its exception, if it
    raised). Without the second thread, ``there`` runs on this thread when that callable is called,
    after ``here()``: the order of the one-thread code. ``check`` has the signature of an engine's
    progress callback (core/engines/base.py), so an engine run can take it as its progress: it raises
    :class:`Abandoned` once ``here()`` has raised, and ``beside`` waits for ``there`` to end before
    raising ``here()``'s exception (a Ctrl-C stops both runs, not one; the second thread is never left busy).
    """
    with second_thread() as pool:
        if pool is None:
            return here(), lambda: there(_never)
        stop = threading.Event()

        def check(_done: float, _message: str) -> None:
            if stop.is_set():
                raise Abandoned("the work this ran beside failed")

        later = pool.submit(there, check)
        try:
            first = here()
        except BaseException:
            stop.set()
            raise
        finally:
            wait([later])  # done, failed or abandoned before the second thread is handed back
    return first, later.result
