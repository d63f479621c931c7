"""Which engines a batch run without a ledger names as most exposed to linking (docs/privacy.md).

Each engine's class says it (``linking_exposed``, set where bench/linking_attack.py found separately
anonymized overlapping batches easiest to intersect). The warning reads it from the engines' source
instead of importing them: the engine modules load numpy, numba and scipy, about a second for all of
them, before a run that may need none of it.
"""

from __future__ import annotations

import ast
from typing import Any


def exposed_engines() -> list[str]:
    """The engines whose class sets ``linking_exposed`` (bench/linking_attack.py measured them, docs/privacy.md),
    read from their source (:func:`declared`)."""
    from core.engines.registry import engine_names

    return [name for name in engine_names() if declared(name, "linking_exposed") is True]


def declared(name: str, attribute: str) -> Any:
    """The constant that engine ``name``'s class (the class of its module whose body sets ``name = "<name>"``)
    assigns to ``attribute``, None if it assigns none; read from the module's source without importing it
    or its family's package: the engine modules load numpy, numba and scipy (about a second for all of
    them), too much for the warning of a run without a ledger. tests/stream/batch/test_run.py checks it
    against the imported classes."""
    import importlib.util
    from pathlib import Path

    from core.engines.registry import engine_module

    package, _, leaf = engine_module(name).rpartition(".")
    found = importlib.util.find_spec(package)  # imports core.engines only, not the family's __init__
    if found is None or not found.submodule_search_locations:
        return None
    source = Path(next(iter(found.submodule_search_locations)), f"{leaf}.py").read_text(encoding="utf-8")
    for node in ast.parse(source).body:
        if isinstance(node, ast.ClassDef):
            body = dict(_constants(node))
            if body.get("name") == name:
                return body.get(attribute)
    return None


def _constants(cls: ast.ClassDef) -> list[tuple[str, Any]]:
    """The ``NAME = constant`` (or ``NAME: type = constant``) assignments of a class body."""
    out: list[tuple[str, Any]] = []
    for stmt in cls.body:
        target: ast.expr
        value: ast.expr | None
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target, value = stmt.targets[0], stmt.value
        elif isinstance(stmt, ast.AnnAssign):
            target, value = stmt.target, stmt.value
        else:
            continue
        if isinstance(target, ast.Name) and isinstance(value, ast.Constant):
            out.append((target.id, value.value))
    return out
