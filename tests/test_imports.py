"""The import graph of our packages: no circles, and every arrow points the allowed way.

Every import statement counts: module level, function level and under ``TYPE_CHECKING``. ``from
pkg import name`` imports ``pkg`` (its ``__init__`` runs) and, when ``name`` is a module, that module
too. Allowed arrows: ``stream`` may use ``core`` and ``db``; ``core`` and ``db`` use nothing of ours
(not each other); ``migrations`` uses ``db`` only. ``bench/`` and ``tests/`` may use the packages, and
neither imports the other (their shared harness is :mod:`stream.testing`).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("core", "stream", "db", "migrations")
ALLOWED = {"core": {"core"}, "db": {"db"}, "migrations": {"migrations", "db"},
           "stream": {"stream", "core", "db", "migrations"}}


def _modules(folders: tuple[str, ...]) -> dict[str, Path]:
    out: dict[str, Path] = {}
    for folder in folders:
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


def _imported(module: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The modules of ours that ``module`` imports, anywhere in its body."""
    def resolve(name: str) -> str | None:
        while name and name not in known:
            name = name.rpartition(".")[0]
        return name or None

    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            targets.add(base)
            targets.update(f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in known)
    found = {resolve(t) for t in targets}
    return {t for t in found if t is not None and t != module}


def _graph(folders: tuple[str, ...], known: dict[str, Path]) -> dict[str, set[str]]:
    return {m: _imported(m, p, known) for m, p in _modules(folders).items()}


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            nxt = next((e for e in edges if e in graph), None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in graph[node]:
                    found.append(sorted(component))
    return found


KNOWN = _modules(PACKAGES)
GRAPH = _graph(PACKAGES, KNOWN)


def test_the_walk_sees_function_level_and_type_checking_imports() -> None:
    # core.engines.registry imports the engines lazily and the types under TYPE_CHECKING only
    assert "core.engines.base" in GRAPH["core.engines.registry"]
    assert "core.encoding" in GRAPH["core.engines.registry"]
    assert len(GRAPH) > 200


def test_no_import_circles() -> None:
    circles = _circles(GRAPH)
    assert not circles, "import circles:\n" + "\n".join(" <-> ".join(c) for c in circles)


def test_a_planted_circle_is_found() -> None:
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


@pytest.mark.parametrize("top", sorted(ALLOWED))
def test_arrows_point_the_allowed_way(top: str) -> None:
    upward = sorted(f"{m} -> {t}" for m, targets in GRAPH.items() if m.split(".")[0] == top
                    for t in targets if t.split(".")[0] not in ALLOWED[top])
    assert not upward, f"{top} may use only {sorted(ALLOWED[top])}:\n" + "\n".join(upward)


@pytest.mark.parametrize(("folder", "forbidden"), [("bench", "tests"), ("tests", "bench")])
def test_benchmarks_and_tests_do_not_import_each_other(folder: str, forbidden: str) -> None:
    known = {**KNOWN, **_modules(("bench", "tests"))}
    bad = sorted(f"{m} -> {t}" for m, targets in _graph((folder,), known).items()
                 for t in targets if t.split(".")[0] == forbidden)
    assert not bad, "\n".join(bad)
