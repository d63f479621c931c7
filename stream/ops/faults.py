"""Crash injection for the recovery tests: ``ANONSTREAM_FAULT_POINT`` kills the worker hard at one point.

Points (see docs/stream.md, "Failure model"): ``claim`` (a window was just claimed), ``anonymize``
(inside a release, before the engine runs; in a release process it kills the worker that owns it),
``after-noise`` (a release's differentially private counts are drawn, nothing is stored),
``after-ledger-write`` (the release is stored, nothing published), ``mid-publish`` (the records
are sent, the manifest is not) and ``mid-republish`` (a re-publish from the ledger sent half of a
release's records, not its manifest: stream/ops/republish.py); ``aggregate-after-charge`` and
``aggregate-mid-write`` kill ``anonstream aggregate`` after its spend committed, before the noise and
while its output is being written. The kill is SIGKILL, as from the
kernel's OOM killer: no clean-up runs, no transaction commits, nothing is flushed but the log line saying so.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal

log = logging.getLogger(__name__)


def crash_at(point: str, configured: str | None) -> None:
    """SIGKILL the worker (and this process, if it is one of the worker's release processes) when the
    configured fault point is ``point``; a no-op otherwise (always in production)."""
    if configured != point:
        return
    log.critical("fault point %s: killing the worker (testing)", point)
    for handler in logging.getLogger().handlers:
        handler.flush()
    worker = multiprocessing.parent_process()
    if worker is not None and worker.pid is not None:  # a release process (forked by the fork server): the worker
        os.kill(worker.pid, signal.SIGKILL)
    os.kill(os.getpid(), signal.SIGKILL)


_STOPPED: set[str] = set()


def stop_at(point: str, configured: str | None) -> None:
    """SIGSTOP this process (a test resumes it with SIGCONT) when the configured fault point is ``point``:
    ``stop-after-ingest`` freezes the worker right after its first batch is in the pending pool, so a test
    can act while the rest of a push is still unread, whatever the machine's load."""
    if configured != point or point in _STOPPED:
        return
    _STOPPED.add(point)  # once: a resumed worker goes on
    log.critical("fault point %s: stopping the worker (testing)", point)
    for handler in logging.getLogger().handlers:
        handler.flush()
    os.kill(os.getpid(), signal.SIGSTOP)
