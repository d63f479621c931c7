"""The release processes' fork server loads numba's tables once: a release process starts with them. The
worker process itself never loads numba or the engine: its release processes run the engine."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from pydantic import SecretStr

import migrations
from stream.config.settings import Settings
from stream.testing.reports import spec_ref
from stream.worker.pool import ReleasePool


def _numba_tables_loaded() -> int:
    """In a release process: how many lowering registries numba's CPU target holds before any kernel runs."""
    from numba.core.registry import cpu_target

    return len(cpu_target.target_context._registries)


def _settings(tmp_path: Path, **extra: Any) -> Settings:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    migrations.upgrade(url)
    return Settings(database_url=url, data_dir=tmp_path, spec=spec_ref(), fingerprint_key=SecretStr("preload-test-key"),
                    release_concurrency=1, **extra)


def test_a_release_process_starts_with_numbas_tables_loaded(tmp_path: Path) -> None:
    pool = ReleasePool(_settings(tmp_path), "w1", 1)
    try:
        loaded = asyncio.run(pool._submit(_numba_tables_loaded))
    finally:
        pool.close()
    assert loaded > 0  # a process that loaded nothing has none; loading them is ~0.8 s of CPU per process


def test_the_worker_process_never_imports_numba_or_the_engine(tmp_path: Path) -> None:
    settings = _settings(tmp_path, broker_url="kafka://127.0.0.1:9")  # the app is built, never started
    script = textwrap.dedent(f"""
        import sys
        from stream.config.settings import Settings
        from stream.worker.app import create_app
        settings = Settings.model_validate_json({settings.model_dump_json()!r})
        app, service = create_app(settings)
        print(sorted(m for m in ("numba", "scipy", "core.engines.cg.diverse") if m in sys.modules))
        print(service.orchestrator.engine_name)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["[]", "cg-diverse"]  # the default engine under the default l = 2


def _segment_signatures() -> int:
    """In a release process: how many compiled signatures CG's segmentation kernel holds before any run."""
    from core.engines.cg import kernels

    return len(kernels.segment.signatures)


def test_a_release_process_starts_with_its_engines_kernels_loaded(tmp_path: Path) -> None:
    pool = ReleasePool(_settings(tmp_path), "w1", 1)  # the default engine, cg-diverse
    try:
        compiled = asyncio.run(pool._submit(_segment_signatures))
    finally:
        pool.close()
    assert compiled > 0  # loaded once in the fork server (fork_warm.py), not again in each release process


def _rho_conversions() -> int:
    """In a release process: how many ε-to-ρ conversions it holds before any release."""
    from core.dp_spec import rho_from_epsilon

    return rho_from_epsilon.cache_info().currsize


def test_the_fork_server_starts_ahead_of_the_first_release_and_converts_the_dp_budgets_once(tmp_path: Path) -> None:
    """A worker starts its fork server as it starts (:meth:`ReleasePool.start`), before any release, and the
    server converts the spec's ε budgets to ρ once: a release process starts with both in its cache. A
    Ctrl-C that reaches the server while it starts (it is in the worker's process group) does not stop it.
    In a fresh process: the fork server is started once per process, with the environment of that time."""
    settings = _settings(tmp_path)
    script = textwrap.dedent(f"""
        import asyncio, os, signal
        from pathlib import Path
        signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal (a CI job may ignore it)
        from stream.config.settings import Settings
        from stream.io.specs import load_schema
        from stream.worker.pool import ReleasePool
        from tests.stream.worker.test_fork_preload import _rho_conversions

        def children():
            return {{int(c) for t in Path("/proc/self/task").iterdir()
                     for c in (t / "children").read_text().split()}}

        settings = Settings.model_validate_json({settings.model_dump_json()!r})
        dp = load_schema(settings.spec).spec.dp
        before = children()
        pool = ReleasePool(settings, "w1", 1, dp)
        asyncio.run(pool.start())
        started = [c for c in children() - before  # the fork server, started before any release was asked for
                   if b"multiprocessing.forkserver" in Path(f"/proc/{{c}}/cmdline").read_bytes()]
        for pid in started:  # a terminal's Ctrl-C as the worker starts: the server, still starting, outlives it
            os.kill(pid, signal.SIGINT)
        def running(pid):  # neither gone nor a zombie (a server that died would be replaced by a new one)
            status = Path(f"/proc/{{pid}}/status")
            return status.exists() and not status.read_text().split("State:")[1].lstrip().startswith("Z")

        try:
            conversions = asyncio.run(pool._submit(_rho_conversions))
            print(len(started), conversions, dp.epsilon != dp.cap_epsilon, all(running(p) for p in started))
        finally:
            pool.close()
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    # one server, still the same after the Ctrl-C; (epsilon, delta) and (cap_epsilon, delta) already converted
    assert done.stdout.split() == ["1", "2", "True", "True"], done.stderr


def test_dp_budgets_are_written_and_converted_as_given() -> None:
    from core.dp_spec import rho_from_epsilon
    from stream.worker.fork_warm import dp_budgets, warm_dp

    value = dp_budgets([(0.75, 1e-7), (7.5, 1e-7)])
    assert value == "0.75,1e-07;7.5,1e-07"
    before = rho_from_epsilon.cache_info().currsize
    warm_dp(value)
    warm_dp("")  # no [dp] table: nothing to convert
    hits = rho_from_epsilon.cache_info().hits
    assert rho_from_epsilon(0.75, 1e-7) == rho_from_epsilon(0.75, 1e-7)
    assert rho_from_epsilon.cache_info().hits == hits + 2  # both already converted by warm_dp
    assert rho_from_epsilon.cache_info().currsize >= before + 2


def test_only_the_fork_server_warms_up_not_any_python_c_process() -> None:
    """The warm-up runs in the fork server alone: a ``python -c`` process has the server's ``sys.argv`` and
    may have loaded ``multiprocessing.forkserver`` and inherited the engine variable, and still loads nothing."""
    script = textwrap.dedent("""
        import multiprocessing.forkserver, os, sys
        os.environ["ANONSTREAM_FORK_WARM_ENGINE"] = "cg-diverse"
        import stream.worker.fork_warm
        print(sorted(m for m in ("numba", "core.engines.cg.diverse") if m in sys.modules))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[0] == "[]"
