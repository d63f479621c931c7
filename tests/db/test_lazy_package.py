"""``db`` loads its names on first use: the settings and the feeds import ``db.url`` and ``db.window_policy``
without SQLAlchemy, and ``db.metadata`` holds every table whatever was imported before."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import db
from tests.conftest import ROOT


def _fresh(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True,
                          timeout=120).stdout.strip()


def test_the_settings_load_no_sqlalchemy_and_the_metadata_is_whole() -> None:
    out = _fresh("import sys; import stream.config.settings, stream.config.feeds; print('sqlalchemy' in sys.modules); "
                 "from db.models import metadata as partial; n = len(partial.tables); "
                 "from db import metadata; print(n < len(metadata.tables), len(metadata.tables))")
    no_sqlalchemy, grew, tables = out.split()
    assert no_sqlalchemy == "False"
    assert grew == "True" and int(tables) == len(db.metadata.tables)


def test_every_module_that_declares_tables_is_listed() -> None:
    declaring = sorted(f"db.{p.stem}" for p in Path(db.__file__).parent.glob("*.py")
                       if any(isinstance(n, ast.Assign) and any(getattr(t, "id", None) == "__tablename__"
                                                                for t in n.targets)
                              for n in ast.walk(ast.parse(p.read_text()))))
    assert declaring == sorted(db.TABLE_MODULES)


def test_every_exported_name_resolves() -> None:
    for name in db.__all__:
        assert getattr(db, name) is not None, name
    assert set(db.__all__) == set(db._HOME)
