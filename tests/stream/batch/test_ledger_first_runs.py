"""Batch runs opening one new SQLite ledger at the same moment (``anonymize`` / ``aggregate --ledger
new.db`` started together): every one opens it, the schema is migrated once, and they share one
fingerprint key."""

from __future__ import annotations

import hashlib
import multiprocessing
import os
from pathlib import Path
from typing import Any

PROCESSES = 5


def _open(target: str, barrier: Any, results: Any) -> None:
    """A child process: wait for the others, open the ledger as the batch CLI does, report the key's digest."""
    os.environ.pop("ANONSTREAM_FINGERPRINT_KEY", None)
    from stream.batch.history import open_ledger
    from stream.config.settings import load_settings

    barrier.wait()
    try:
        db, settings = open_ledger(target, load_settings())
        db.dispose()
        results.put(("ok", hashlib.sha256(settings.key_bytes()).hexdigest()))
    except Exception as exc:  # reported to the test, which shows it
        results.put((f"{type(exc).__name__}: {exc}", ""))


def test_first_runs_at_once_open_one_new_ledger(tmp_path: Path) -> None:
    import migrations
    from stream.batch.history import ledger_url

    target = str(tmp_path / "var" / "new.db")
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(PROCESSES), ctx.Queue()
    procs = [ctx.Process(target=_open, args=(target, barrier, results)) for _ in range(PROCESSES)]
    for p in procs:
        p.start()
    out = [results.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    assert [status for status, _ in out] == ["ok"] * PROCESSES
    assert len({digest for _, digest in out}) == 1  # one fingerprint key, not one per first run
    key = tmp_path / "var" / "fingerprint.key"
    assert key.stat().st_mode & 0o777 == 0o600
    assert sorted(p.name for p in key.parent.iterdir() if "fingerprint" in p.name) == ["fingerprint.key"]
    from alembic.script import ScriptDirectory

    head = ScriptDirectory.from_config(migrations.config()).get_current_head()
    assert migrations.current(ledger_url(target)[0]) == head
