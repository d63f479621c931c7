"""The import graph of our packages: no circles, and every arrow points the allowed way.

Every import statement counts: module level, function level and under ``TYPE_CHECKING``. ``from
pkg import name`` imports ``pkg`` (its ``__init__`` runs) and, when ``name`` is a module, that module
too. Allowed arrows: ``stream`` may use ``core`` and ``db``; ``core`` and ``db`` use nothing of ours
(not each other); ``migrations`` uses ``db`` only. ``bench/`` and ``tests/`` may use the packages, and
neither imports the other (their shared harness is :mod:`stream.testing`).

Inside ``stream``, the role folders are layered: :data:`ROLE_LAYERS` lists them from the bottom up, and
a role may use only roles of lower layers (never one of its own layer or above). docs/architecture.md
draws the same order.
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


def _imports(module: str, path: Path, known: dict[str, Path]) -> list[tuple[int, str]]:
    """``(line, module)`` for each module of ours that ``module`` imports, anywhere in its body."""
    def resolve(name: str) -> str | None:
        while name and name not in known:
            name = name.rpartition(".")[0]
        return name or None

    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    targets: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            targets.append((node.lineno, base))
            targets.extend((node.lineno, f"{base}.{alias.name}") for alias in node.names
                           if f"{base}.{alias.name}" in known)
    found = sorted({(line, resolve(t)) for line, t in targets}, key=lambda x: (x[0], x[1] or ""))
    return [(line, t) for line, t in found if t is not None and t != module]


def _imported(module: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The modules of ours that ``module`` imports, anywhere in its body."""
    return {t for _, t in _imports(module, path, known)}


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


# stream's roles from the bottom up: files; settings (a feed's spec is read through io); report intake
# (its limits are settings); the wire formats; operations plumbing (broker, clients, fault points, start-up);
# the three sides of the service; what is built on them; the console; the commands; the test harness.
ROLE_LAYERS: list[tuple[str, ...]] = [
    ("io",),
    ("config",),
    ("intake",),
    ("wire",),
    ("ops",),
    ("station", "worker", "analyst"),
    ("specdraft", "batch"),
    ("console",),
    ("cli",),
    ("testing",),
]
ROLE_LAYER = {role: i for i, roles in enumerate(ROLE_LAYERS) for role in roles}


def _role(module: str) -> str | None:
    """``stream.<role>...``: the role (a folder of stream/, or a module beside them); None outside stream."""
    parts = module.split(".")
    return parts[1] if parts[0] == "stream" and len(parts) > 1 else None


def _upward(modules: dict[str, Path], known: dict[str, Path]) -> list[str]:
    """Each import of ``modules`` whose role is not below the importer's: ``file:line from -> to (module)``."""
    bad = []
    for module, path in sorted(modules.items()):
        here = _role(module)
        for line, target in _imports(module, path, known):
            there = _role(target)
            if here is None or there is None or there == here:
                continue
            if ROLE_LAYER.get(there, len(ROLE_LAYERS)) >= ROLE_LAYER.get(here, -1):
                where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
                bad.append(f"{where}:{line} {here} -> {there} ({target})")
    return bad


def _roles_in_tree() -> set[str]:
    """Every folder of stream/ that holds code, and any module beside them."""
    return {p.relative_to(ROOT / "stream").with_suffix("").parts[0] for p in (ROOT / "stream").rglob("*.py")
            if p != ROOT / "stream" / "__init__.py"}


def test_every_stream_role_is_in_one_layer() -> None:
    listed = [role for roles in ROLE_LAYERS for role in roles]
    assert len(listed) == len(set(listed))
    assert set(listed) == _roles_in_tree(), "place each stream/ folder with code in ROLE_LAYERS (and the doc)"


def test_stream_roles_import_only_lower_layers() -> None:
    bad = _upward({m: p for m, p in KNOWN.items() if m.startswith("stream.")}, KNOWN)
    order = " -> ".join(" | ".join(roles) for roles in ROLE_LAYERS)
    assert not bad, f"stream's roles, lowest first: {order}; these imports go sideways or up:\n" + "\n".join(bad)


def test_a_planted_back_import_is_named_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "rows.py"
    path.write_text('"""A file reader that needs a command."""\n\n\ndef read():\n    from stream.cli.main import main\n'
                    "    from stream.io.text import detect\n    return main, detect\n")
    known = {**KNOWN, "stream.io.rows": path}
    assert _upward({"stream.io.rows": path}, known) == [f"{path}:5 io -> cli (stream.cli.main)"]
    worker = {"stream.worker.x": path}
    path.write_text("from stream.station.batch import Marker\nfrom stream.ops.faults import crash_at\n")
    assert _upward(worker, {**KNOWN, **worker}) == [f"{path}:1 worker -> station (stream.station.batch)"]


def test_the_architecture_page_draws_the_declared_order() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if line.startswith("roles, lowest first:")]
    assert len(lines) == 1, "docs/architecture.md: one line 'roles, lowest first: io → config → ...'"
    drawn = [tuple(r.strip().removeprefix("stream/") for r in layer.split("|"))
             for layer in lines[0].removeprefix("roles, lowest first:").split("→")]
    assert drawn == ROLE_LAYERS
