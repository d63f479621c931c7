"""Alembic environment: metadata from :mod:`db`, URL from the config or from the environment (db.url)."""

from __future__ import annotations

from alembic import context
from sqlalchemy import engine_from_config, pool

from db import metadata

cfg = context.config


def _url() -> str:
    url = cfg.get_main_option("sqlalchemy.url")
    if url:
        return url
    from db.url import url_from_environment

    return url_from_environment()


def run_offline() -> None:
    url = _url()
    context.configure(url=url, target_metadata=metadata, literal_binds=True, compare_type=True,
                      render_as_batch=url.startswith("sqlite"))
    with context.begin_transaction():
        context.run_migrations()


def run_online() -> None:
    url = _url()
    if url.startswith("sqlite"):
        from pathlib import Path

        path = url.split(":///", 1)[-1]
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
    engine = engine_from_config({"sqlalchemy.url": url}, prefix="sqlalchemy.", poolclass=pool.NullPool)
    with engine.connect() as conn:
        context.configure(connection=conn, target_metadata=metadata, compare_type=True,
                          render_as_batch=conn.dialect.name == "sqlite")
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()


if context.is_offline_mode():
    run_offline()
else:
    run_online()
