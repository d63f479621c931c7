"""The release processes' fork server loads numba's tables once: a release process starts with them."""

from __future__ import annotations

import asyncio
from pathlib import Path

import migrations
from stream.config.settings import Settings
from stream.testing.reports import spec_ref
from stream.worker.pool import ReleasePool


def _numba_tables_loaded() -> int:
    """In a release process: how many lowering registries numba's CPU target holds before any kernel runs."""
    from numba.core.registry import cpu_target

    return len(cpu_target.target_context._registries)


def test_a_release_process_starts_with_numbas_tables_loaded(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    migrations.upgrade(url)
    settings = Settings(database_url=url, data_dir=tmp_path, spec=spec_ref(), fingerprint_key="preload-test-key",
                        release_concurrency=1)
    pool = ReleasePool(settings, "w1", 1)
    try:
        loaded = asyncio.run(pool._submit(_numba_tables_loaded))
    finally:
        pool.close()
    assert loaded > 0  # a process that loaded nothing has none; loading them is ~0.8 s of CPU per process
