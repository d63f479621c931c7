"""Generalization hierarchies and the factory that builds one from a QI spec."""

from __future__ import annotations

from core.errors import SpecError
from core.hierarchies.base import TOP, EncodedQI, Hierarchy, UnknownPolicy
from core.hierarchies.dates import DateHierarchy
from core.hierarchies.intervals import IntervalHierarchy
from core.hierarchies.masking import MaskHierarchy
from core.hierarchies.table import TableHierarchy, parse_arx_csv
from core.hierarchies.tree import tree_hierarchy
from core.schema import (
    DateHierarchySpec,
    IntervalHierarchySpec,
    MaskHierarchySpec,
    QISpec,
    TableHierarchySpec,
    TreeHierarchySpec,
)

__all__ = ["TOP", "DateHierarchy", "EncodedQI", "Hierarchy", "IntervalHierarchy", "MaskHierarchy",
           "TableHierarchy", "UnknownPolicy", "build_hierarchy", "parse_arx_csv"]


def build_hierarchy(qi: QISpec) -> Hierarchy:
    """Build the hierarchy object for a validated QI spec (table rows must be inline by now)."""
    h = qi.hierarchy
    if isinstance(h, TableHierarchySpec):
        if h.rows is None:
            raise SpecError(f"spec field 'qi[{qi.name}].hierarchy.csv': file was not loaded (use stream.io.specs)")
        return TableHierarchy(qi.name, h.rows, kind=qi.type.value)
    if isinstance(h, TreeHierarchySpec):
        return tree_hierarchy(qi.name, h.tree)
    if isinstance(h, IntervalHierarchySpec):
        return IntervalHierarchy(qi.name, widths=h.widths, edges=h.edges, auto=h.auto, domain=h.domain,
                                 integer=h.integer)
    if isinstance(h, DateHierarchySpec):
        return DateHierarchy(qi.name, levels=h.levels, domain=h.domain, fmt=h.format)
    if isinstance(h, MaskHierarchySpec):
        return MaskHierarchy(qi.name, length=h.mask, char=h.char)
    raise SpecError(f"unsupported hierarchy for '{qi.name}'")  # pragma: no cover
