"""The folders of ``core`` import one way: each folder (or top-level module) uses only those below it.

Every import statement counts, as in tests/test_imports.py: module level, function level and under
``TYPE_CHECKING``. A unit is a top-level module of ``core`` (``core.schema``), a folder (``core.dp``)
or, under ``core/engines/``, an engine family's folder (``core.engines.kgen``); ``core.engines`` itself
is the modules beside the families (the contract, the registry, the lattice engines' base). LAYERS
lists the units from the bottom up; a unit may use units of lower layers only, never one of its own
layer or above, so the folders form no circle (``core.schema`` and ``core.dp``, ``fulldomain`` and
``kgen`` once did). A new folder or top-level module must be placed in a layer; a new engine family
sits with the families that use only ``core.engines`` and below, unless listed higher.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LAYERS: list[tuple[str, ...]] = [
    ("core.codes",),  # a table's columns factorized once: numpy and pandas only, read by risk, verify, metrics
    ("core.parallel",),  # the second thread the running process allows: the standard library only
    ("core", "core.errors", "core.contract", "core.privacy", "core.risk", "core.dp_spec"),
    ("core.schema", "core.generators"),
    ("core.hierarchies",),
    ("core.canonical", "core.checks", "core.encoding", "core.dp"),
    ("core.columns", "core.attacks", "core.lattice"),
    ("core.metrics",),
    ("core.engines",),
    ("core.engines.castle", "core.engines.hetero", "core.engines.kgen", "core.engines.mondrian",
     "core.engines.pbg"),
    ("core.engines.cg", "core.engines.fulldomain"),
    ("core.verify",),
]
LAYER = {unit: i for i, units in enumerate(LAYERS) for unit in units}
FAMILIES = LAYER["core.engines.mondrian"]  # an engine family not listed (a new engine's folder) sits here


def layer_of(unit: str) -> int | None:
    """The layer of ``unit``: listed, or an engine family's folder (None: not placed)."""
    return LAYER.get(unit, FAMILIES if unit.startswith("core.engines.") else None)


def modules() -> dict[str, Path]:
    """Every module of ``core`` by dotted name (a package by its own name)."""
    out: dict[str, Path] = {}
    for path in sorted((ROOT / "core").rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


KNOWN = modules()


def unit(module: str) -> str:
    """The folder-level unit of a module of ``core`` (see the module docstring)."""
    parts = module.split(".")
    if len(parts) >= 3 and parts[1] == "engines" and (ROOT / "core" / "engines" / parts[2]).is_dir():
        return ".".join(parts[:3])
    return ".".join(parts[:2])


def imported(module: str, path: Path) -> set[str]:
    """The modules of ``core`` that ``module`` imports, anywhere in its body (``from pkg import name``
    imports ``pkg`` and, when ``name`` is a module, that module)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            targets.add(base)
            targets.update(f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in KNOWN)
    found = set()
    for name in targets:
        while name and name not in KNOWN:
            name = name.rpartition(".")[0]
        if name and name != module and name.split(".")[0] == "core":
            found.add(name)
    return found


def folder_edges() -> dict[tuple[str, str], list[str]]:
    """Each arrow between two units, with the module imports behind it."""
    edges: dict[tuple[str, str], list[str]] = {}
    for module, path in KNOWN.items():
        for target in imported(module, path):
            if unit(module) != unit(target):
                edges.setdefault((unit(module), unit(target)), []).append(f"{module} -> {target}")
    return edges


EDGES = folder_edges()


def wrong_way(edges: dict[tuple[str, str], list[str]]) -> list[str]:
    """The arrows that do not point to a lower layer."""
    return sorted(f"{a} -> {b}: " + ", ".join(sorted(why)) for (a, b), why in edges.items()
                  if (lb if (lb := layer_of(b)) is not None else len(LAYERS)) >= (layer_of(a) or 0))


def test_every_unit_of_core_is_placed_in_a_layer() -> None:
    units = {unit(m) for m in KNOWN}
    assert {u for u in units if layer_of(u) is None} == set(), "place these in LAYERS"
    assert set(LAYER) - units == set(), "LAYERS names units that no longer exist"


def test_the_walk_sees_function_level_imports() -> None:
    # warm_up_all imports the registry inside the function; the registry its types under TYPE_CHECKING
    assert "core.engines.registry" in imported("core.engines.warmup", KNOWN["core.engines.warmup"])
    assert "core.encoding" in imported("core.engines.registry", KNOWN["core.engines.registry"])
    assert ("core.engines.fulldomain", "core.engines.kgen") in EDGES  # random search uses KGEN's bounds


@pytest.mark.parametrize("layer", range(len(LAYERS)), ids=[" ".join(u) for u in LAYERS])
def test_folders_of_core_import_downwards_only(layer: int) -> None:
    mine = {e: why for e, why in EDGES.items() if layer_of(e[0]) == layer}
    bad = wrong_way(mine)
    assert not bad, "arrows to the same layer or above:\n" + "\n".join(bad)


def test_a_planted_upward_arrow_is_found() -> None:
    planted = {("core.schema", "core.dp"): ["core.schema -> core.dp.mechanism"],
               ("core.engines.kgen", "core.engines.fulldomain"): ["k -> f"], ("core.dp", "core.schema"): ["ok"]}
    assert wrong_way(planted) == ["core.engines.kgen -> core.engines.fulldomain: k -> f",
                                  "core.schema -> core.dp: core.schema -> core.dp.mechanism"]
