"""Categorical taxonomies written as nested tables in the spec.

``{"Violent" = {"Homicide" = ["Murder"]}, "Property" = ["Theft", "Burglary"]}`` is a tree under
``*``. Leaves shallower than the deepest one keep their own value on the missing levels.
"""

from __future__ import annotations

from typing import Any

from core.errors import HierarchyError
from core.hierarchies.table import TableHierarchy


def tree_rows(tree: dict[str, Any]) -> list[list[str]]:
    paths: list[list[str]] = []

    def walk(node: Any, ancestors: list[str]) -> None:
        if isinstance(node, dict):
            for key, child in node.items():
                walk(child, [key, *ancestors])
        elif isinstance(node, list | tuple):
            for leaf in node:
                if isinstance(leaf, dict):
                    walk(leaf, ancestors)
                else:
                    paths.append([str(leaf), *ancestors])
        else:
            raise HierarchyError(f"tree node {node!r} must be a table or a list of leaves", reason="invalid-hierarchy")

    walk(tree, [])
    depth = max(len(p) for p in paths)
    return [[p[0]] * (depth - len(p) + 1) + p[1:] + ["*"] for p in paths]


def tree_hierarchy(name: str, tree: dict[str, Any]) -> TableHierarchy:
    return TableHierarchy(name, tree_rows(tree))
