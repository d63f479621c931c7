"""Alembic migrations of the ledger, run by ``anonstream migrate`` or the worker's start-up step.

Nothing here runs at import. :func:`upgrade`, :func:`downgrade` and :func:`check` build an Alembic
config pointing at this package; ``env.py`` takes the metadata from :mod:`db` and the URL from the
config (set here) or else from the environment (:func:`db.url.url_from_environment`).

:func:`upgrade` and :func:`downgrade` hold the ledger's schema lock (:func:`db.session.schema_lock`: a
file lock beside a SQLite file, an advisory lock on PostgreSQL) while Alembic reads the revision and
migrates, so any number of processes opening a new ledger at once migrate it once: the first one
migrates, the others wait, then find it at the revision asked for.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from alembic.config import Config

HERE = Path(__file__).resolve().parent


def config(url: str | None = None) -> Config:
    from alembic.config import Config

    cfg = Config(str(HERE / "alembic.ini"), stdout=sys.stdout)  # the current stdout, not the one at import
    cfg.set_main_option("script_location", str(HERE))
    if url:
        cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def upgrade(url: str | None = None, revision: str = "head") -> None:
    """Upgrade the database at ``url`` (default: the settings' URL) to ``revision``, under the schema lock."""
    from alembic import command

    from db.session import schema_lock

    url = url or _settings_url()
    with schema_lock(url):
        command.upgrade(config(url), revision)


def downgrade(url: str | None = None, revision: str = "base") -> None:
    """Downgrade the database at ``url`` (default: the settings' URL) to ``revision``, under the schema lock."""
    from alembic import command

    from db.session import schema_lock

    url = url or _settings_url()
    with schema_lock(url):
        command.downgrade(config(url), revision)


def check(url: str | None = None) -> None:
    """Raise if the models and the migrated schema differ (``alembic check``)."""
    from alembic import command

    command.check(config(url))


def current(url: str | None = None) -> str | None:
    from alembic.runtime.migration import MigrationContext
    from sqlalchemy import create_engine

    engine = create_engine(url or _settings_url())
    with engine.connect() as conn:
        rev = MigrationContext.configure(conn).get_current_revision()
    engine.dispose()
    return rev


def _settings_url() -> str:
    from db.url import url_from_environment

    return url_from_environment()
