"""Shared fixtures: paths to the benchmark data beside the repo, and bundled specs; the test processes'
cache folder.

The suite runs in parallel (pytest-xdist, ``-n auto --dist loadfile`` in pyproject.toml; auto is two workers
per core, :func:`pytest_xdist_auto_num_workers`): every worker
is a process of its own, with its own PostgreSQL cluster and broker (:mod:`stream.testing.services`),
its own ``tmp_path`` tree and its own cache folder (:func:`pytest_configure`). The tests of one file
run on one worker, so a fixture a module builds once (a generated window, a data sample, a whole
stream run) is built once. ``-n 0`` runs everything in the pytest process itself.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd
import pytest

if TYPE_CHECKING:
    from core.encoding import Schema
    from stream.intake.validate import ReportValidator

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = ROOT.parent / "shared" / "data"


def shared(*parts: str) -> Path:
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"benchmark data not found at {path}")
    return path


@pytest.fixture(scope="session")
def adult_df() -> pd.DataFrame:
    return pd.read_csv(shared("adult", "adult.csv"), sep=";", dtype=str)


@pytest.fixture(scope="session")
def adult_schema() -> Schema:
    from stream.io.specs import load_schema

    return load_schema("adult")


@pytest.fixture(scope="module")
def validator() -> ReportValidator:
    """The stream's report validator on the crime spec, default input limits (tests/stream and tests/db)."""
    from stream.intake.guards import Limits
    from stream.intake.validate import ReportValidator
    from stream.io.specs import load_schema
    from stream.testing.reports import spec_ref

    return ReportValidator(load_schema(spec_ref()), ("name", "dob"), Limits())


@pytest.fixture(scope="module")
def good() -> dict:
    """One valid generated crime report."""
    from stream.testing.reports import day_of_reports

    return day_of_reports(1, 5, seed=5)["S1"][0]


def pytest_configure(config: pytest.Config) -> None:
    """Keep the CLI's cached files (``ANONSTREAM_CACHE_DIR``, e.g. the ``engines`` listing) in a
    temporary folder per test process rather than the user's cache. The numba kernel cache stays the
    user's one, set as the CLI sets it (:func:`stream.ops.kernel_cache.use_kernel_cache`): compiling
    costs minutes, numba writes its cache atomically, keyed by source and signature, so processes (and
    the README tour's fresh clone) share it.

    A parallel run first fills that cache, as the README's install step does (``anonstream warmup``),
    unless it already holds every kernel of these sources (:func:`_warm_kernels`).

    The run's first process also writes the bytecode of our packages (:func:`_compile_sources`) and,
    for a parallel run, of the test modules as pytest rewrites them (:func:`_rewrite_tests`)."""
    from stream.ops.kernel_cache import use_kernel_cache, warm_marker

    use_kernel_cache()
    if not hasattr(config, "workerinput"):
        _compile_sources()
        if config.getoption("numprocesses", None):
            _rewrite_tests(config)
    marker = warm_marker()
    if (config.getoption("numprocesses", None) and not hasattr(config, "workerinput")
            and marker is not None and not os.path.exists(marker)):
        _warm_kernels(config)
    tmp = tempfile.mkdtemp(prefix="anonstream-test-cache-")
    config.add_cleanup(lambda: shutil.rmtree(tmp, ignore_errors=True))
    os.environ["ANONSTREAM_CACHE_DIR"] = tmp
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        # started in the background by a shell (`cmd &` ignores SIGINT, and children inherit that): the
        # CLI processes the Ctrl-C tests start would ignore the SIGINT they send, so Python's handler is
        # put back (an exec'd child then starts with SIGINT at its default, as from a terminal)
        signal.signal(signal.SIGINT, signal.default_int_handler)


# The engine slowest to compile: on an empty cache, ILS's family (its search with k-member and l-greedy)
# takes about 33 s of the 51 s `anonstream warmup --jobs 1` takes; every other family is ready within 20 s.
SLOWEST = "ils"


def _warm_kernels(config: pytest.Config) -> None:
    """Compile every other family's kernels before the workers start, and the slowest family's in the
    background meanwhile (then the marker: ``anonstream warmup`` loads the rest from the cache).

    Compiling everything first kept one of 2 cores idle for about 35 s while ILS compiled alone. The
    slow files that use ILS are marked ``ils_kernels`` and handed out after the other slow files
    (:func:`pytest_collection_modifyitems`), by when its kernels are in the cache; a test that needs
    them earlier compiles them itself (numba writes the cache atomically; budgets count work, so its
    result is the same)."""
    from core.engines.registry import engine_names
    from stream.cli.warmup import families

    started = time.monotonic()
    slowest = next(family for family in families(engine_names()) if SLOWEST in family)
    first = [f"--engine={name}" for name in engine_names() if name not in slowest]
    done = subprocess.run([sys.executable, "-m", "stream.cli.main", "warmup", *first], capture_output=True,
                          text=True)
    print(f"anonstream warmup (kernels compiled once for the run): exit {done.returncode}, "
          f"{time.monotonic() - started:.0f}s; {', '.join(slowest)} in the background")
    rest = subprocess.Popen([sys.executable, "-m", "stream.cli.main", "warmup", "--jobs", "1"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def stop() -> None:  # a short run does not wait for it; what it compiled is cached, the next run goes on
        rest.terminate()
        rest.wait()

    config.add_cleanup(stop)


def _compile_sources() -> None:
    """Write the bytecode (``__pycache__``, gitignored) of our packages once, before any test starts.

    The suite starts several hundred Python processes (workers, their release processes, CLI commands),
    each importing most of ``core``, ``stream`` and ``db``. Where ``PYTHONDONTWRITEBYTECODE`` is set, as
    on the CI machines, none of them writes bytecode, so each compiled the same 30,000 lines again:
    about 0.3 s of CPU per process. A process still reads bytecode that is there."""
    import compileall

    for package in ("core", "stream", "db", "migrations"):
        compileall.compile_dir(ROOT / package, quiet=1)


def _rewrite_tests(config: pytest.Config) -> None:
    """Write the test modules' assertion-rewritten bytecode once, for every worker to read.

    pytest rewrites each test module's asserts when importing it and caches the result in
    ``__pycache__``, but not where ``PYTHONDONTWRITEBYTECODE`` is set, as on the CI machines: there
    every worker rewrote all 265 modules while collecting, about 5 s of CPU each (a collection took
    11.6 s rewriting them, 6.4 s reading them from the cache). pytest reads a cached file even when it
    does not write one, and the file is keyed by the source's hash, so this writes the missing ones as
    pytest would. It uses pytest's own (private) functions: if they move, nothing is written and the
    workers rewrite as before; a module that does not parse is left to the collection to report."""
    if not sys.dont_write_bytecode:
        return  # the workers write and share pytest's cache themselves
    try:
        from _pytest.assertion.rewrite import (
            PYC_TAIL,
            _read_pyc,
            _rewrite_test,
            _write_pyc,
            assertstate_key,
            get_cache_dir,
        )
        state = config.stash[assertstate_key]
    except (ImportError, KeyError):
        return
    chosen = [Path(arg.split("::")[0]).resolve() for arg in config.args] or [ROOT / "tests"]
    for path in sorted((ROOT / "tests").rglob("*.py")):  # the modules this run collects, and conftest files
        if not (path.name == "conftest.py" or (path.name.startswith("test_") and any(
                path == c or c in path.parents for c in chosen))):
            continue
        cache = get_cache_dir(path)
        pyc = cache / (path.name[:-3] + PYC_TAIL)
        if _read_pyc(path, pyc) is not None:
            continue  # written by an earlier run, for this very source
        try:
            source_hash, code = _rewrite_test(path, config)
        except SyntaxError:
            continue
        cache.mkdir(exist_ok=True)
        _write_pyc(state, code, source_hash, pyc)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """``-n auto``: two workers per core this process may use.

    Most of a stream test's time is spent waiting on the processes it started (a worker subprocess joining
    its consumer group, the broker, PostgreSQL), not computing. Measured on 2 cores, same tree, warm
    kernel cache: 3 workers 10 min 45 s, 4 workers 9 min 56 s, 5 workers 10 min 37 s (about 1.5 of 2
    cores busy with 4 or 5). PYTEST_XDIST_AUTO_NUM_WORKERS still decides when set."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None  # xdist's own hook reads it
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return 2 * cores


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Files with a ``slow`` test first, each file's tests in their own order, the rest after them.

    ``--dist loadfile`` hands out whole files in collection order; a minutes-long file handed out last
    (tests/test_readme_tour.py is collected after tests/stream) runs while the other worker has nothing
    left, so the long files go first and the short ones fill in at the end (longest first)."""
    slow = {item.path for item in items if item.get_closest_marker("slow") is not None}
    ils = {item.path for item in items if item.get_closest_marker("ils_kernels") is not None}
    # a stable sort: the order within each group stays; slow files using ILS after the other slow ones
    items.sort(key=lambda item: (item.path not in slow, item.path in ils))


@pytest.fixture(autouse=True)
def _no_kafka_client_outlives_its_test() -> Iterator[None]:
    """A kafka-python client's IO thread started by a test ends with it (waited on, up to 30 s).

    A leaked client keeps retrying its broker from a background thread, drawing jitter from the global
    ``random`` module; a Hypothesis test that runs next in the same worker then fails as flaky."""
    before = {t.ident for t in threading.enumerate()}
    yield
    leaked = [t for t in threading.enumerate() if t.ident not in before and t.name.startswith("kafka-io-")]
    deadline = time.monotonic() + 30
    for t in leaked:
        t.join(max(0.0, deadline - time.monotonic()))
    alive = [t.name for t in leaked if t.is_alive()]
    assert not alive, f"kafka-python IO threads outlived the test: {alive}"
