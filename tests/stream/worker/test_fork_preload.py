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
