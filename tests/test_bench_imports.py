"""What every benchmark script imports from our packages exists (a move cannot break a benchmark
silently). Checked from the source: no benchmark is imported or run here."""

from __future__ import annotations

import ast
import importlib
import importlib.util
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"
OURS = ("core", "stream", "db", "migrations")


@pytest.mark.parametrize("script", sorted(p.name for p in BENCH.glob("*.py")))
def test_what_a_benchmark_imports_exists(script: str) -> None:
    missing = []
    for node in ast.walk(ast.parse((BENCH / script).read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in OURS:
            module = importlib.import_module(node.module)
            missing += [f"{node.module}.{a.name}" for a in node.names if not hasattr(module, a.name)
                        and importlib.util.find_spec(f"{node.module}.{a.name}") is None]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in OURS:
                    importlib.import_module(alias.name)
    assert not missing, f"bench/{script} imports names that do not exist: {missing}"
