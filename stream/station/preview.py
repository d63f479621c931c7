"""What ``anonstream push`` can tell a station about its reports before the worker sees them: how many
the ledger already holds (duplicates) and how many correct a known report (replacing a pending one, or
counted and never released because the report was released: :mod:`db.corrections`).

It needs the ledger and the fingerprint key, as the worker has them: ``ANONSTREAM_DATABASE_URL`` (or
the embedded instance's SQLite file) and ``ANONSTREAM_FINGERPRINT_KEY`` (or the embedded instance's key
file). Without them push says nothing about duplicates (the worker still counts them: ``status``). The
reports are compared by keyed fingerprint and content hash only; nothing identifying is printed.
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import Any

from stream.config.settings import Settings

log = logging.getLogger(__name__)


class LedgerPreview:
    """Callable on each chunk of validated reports, before it is sent; accumulates :attr:`counts`."""

    def __init__(self, db: Any, key: bytes, settings: Settings) -> None:
        self.db, self.key, self.settings = db, key, settings
        self.counts: Counter[str] = Counter()

    @classmethod
    def open(cls, settings: Settings) -> LedgerPreview | None:
        """A preview when this machine has the ledger and the key (a station usually has neither)."""
        from stream.ops.locate import resolve

        settings = resolve(settings)
        key_file = settings.data_dir / "fingerprint.key"
        has_key = bool(settings.fingerprint_key and settings.fingerprint_key.get_secret_value()) or key_file.exists()
        has_db = bool(settings.database_url) or (settings.data_dir / "anonstream.db").exists()
        if not (has_key and has_db):
            return None
        try:
            from sqlalchemy import text

            from db import Database

            db = Database(settings.db_url())
            with db.read() as s:
                s.execute(text("SELECT 1"))
        except Exception as exc:  # the ledger is optional here: push goes on without the preview
            log.warning("ledger not reachable (%s); push cannot tell duplicates and corrections", type(exc).__name__)
            return None
        return cls(db, settings.key_bytes(), settings)

    def __call__(self, cleans: list[Any]) -> None:
        from db.corrections import preview
        from stream.intake.validate import to_incoming

        incoming = [to_incoming(c, self.key, self.settings.window_key_for(c.station_id), False) for c in cleans]
        items = [(r.fingerprint, r.content_hash, r.event_time) for r in incoming]  # exactly as the worker keys them
        with self.db.read() as s:
            self.counts += preview(s, items)

    def summary(self) -> str:
        """One line: how many of the pushed reports the ledger knew, by kind (counts only)."""
        c = self.counts
        known = c["duplicate"] + c["replaced"] + c["released"] + c["reused"]
        return (f"push: {known} of them already known to the ledger: {c['duplicate']} duplicate(s), "
                f"{c['replaced']} correction(s) replacing pending reports, {c['released']} correction(s) of "
                f"released reports (counted, never released again), {c['reused']} reused id(s) (dead-lettered)")

    def close(self) -> None:
        self.db.dispose()
