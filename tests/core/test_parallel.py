"""core's second thread: given only when allowed, spare and free; ``beside`` keeps one thread's order and errors."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Callable, Iterator

import pytest

from core import parallel
from tests.conftest import ROOT


@pytest.fixture
def two_threads(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(parallel, "spare_core", lambda: True)
    previous = parallel.set_threads(2)
    yield
    parallel.set_threads(previous)


def test_one_thread_runs_there_after_here_and_only_when_asked() -> None:
    previous = parallel.set_threads(1)
    try:
        done: list[str] = []

        def step(name: str, value: int) -> int:
            done.append(name)
            return value

        first, second = parallel.beside(lambda: step("here", 1), lambda check: step("there", 2))
        assert (first, done) == (1, ["here"])  # nothing of there() yet: the one-thread order
        assert second() == 2 and done == ["here", "there"]
    finally:
        parallel.set_threads(previous)


def test_the_second_thread_runs_there_and_its_error_is_raised_when_read(two_threads: None) -> None:
    names: list[str] = []

    def there(check: object) -> int:
        names.append(threading.current_thread().name)
        raise ValueError("there failed")

    first, second = parallel.beside(lambda: 1, there)
    assert first == 1 and names and names[0] != threading.current_thread().name
    with pytest.raises(ValueError, match="there failed"):
        second()


def test_an_error_here_stops_there_at_its_next_check_and_hands_the_thread_back(two_threads: None) -> None:
    started = threading.Event()
    ended: list[str] = []

    def there(check: Callable[[float, str], None]) -> None:
        started.set()
        try:
            for _ in range(10**8):  # an engine's loop, asking its progress callback between steps
                check(0.5, "working")
            ended.append("ran to its end")
        except parallel.Abandoned:
            ended.append("abandoned")
            raise

    def here() -> None:
        started.wait(timeout=300)  # set at once by there(); the timeout only keeps a broken beside from hanging
        raise KeyboardInterrupt  # a Ctrl-C during the run on this thread

    with pytest.raises(KeyboardInterrupt):
        parallel.beside(here, there)
    assert ended == ["abandoned"]  # stopped, and done before beside returned
    with parallel.second_thread() as pool:
        assert pool is not None  # the lock was released


def test_no_second_thread_while_busy_held_or_not_allowed(two_threads: None, monkeypatch: pytest.MonkeyPatch) -> None:
    with parallel.second_thread() as held:
        assert held is not None
        with parallel.second_thread() as other:
            assert other is None  # one caller at a time
    monkeypatch.setattr(parallel, "spare_core", lambda: False)
    with parallel.second_thread() as busy:
        assert busy is None
    with pytest.raises(ValueError, match="1 or 2"):
        parallel.set_threads(3)


def test_a_forked_child_gets_its_own_second_thread_even_if_the_parent_held_it() -> None:
    code = ("import os, sys; from core import parallel; parallel.configure(2, lambda: True)\n"
            "with parallel.second_thread() as held:\n"
            "    assert held is not None\n"
            "    pid = os.fork()\n"
            "    if pid == 0:\n"
            "        first, second = parallel.beside(lambda: 1, lambda check: 2)\n"
            "        with parallel.second_thread() as mine:\n"
            "            os._exit(0 if mine is not None and (first, second()) == (1, 2) else 1)\n"
            "    sys.exit(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))\n")
    assert subprocess.run([sys.executable, "-c", code], cwd=ROOT, timeout=120).returncode == 0
