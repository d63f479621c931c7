"""The encoded form every hierarchy produces: integer codes plus per-level lookup tables.

Engines never touch Python objects per row. A QI column is encoded once into ``codes`` (leaf
index per row). Generalizing the column to level ``l`` is ``maps[l][codes]``; the label, the
information-loss cost and (for ordered types) the numeric bounds of a generalized value are
lookups by its code at that level.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import pandas as pd

from core.errors import HierarchyError, preview

UnknownPolicy = Literal["error", "top"]
TOP = "*"


@dataclass(frozen=True, eq=False)
class EncodedQI:
    """One quasi-identifier encoded against its hierarchy.

    Attributes:
        name: column name.
        kind: ``numeric``, ``categorical``, ``date`` or ``masked``.
        codes: leaf code per row (int32).
        maps: per level ``l`` (0 = leaf level), an int32 array mapping leaf code -> code at ``l``.
        labels: per level, the label of each generalized code (object array of ``str``).
        cost: per level, the information loss of each generalized code in [0, 1]: for categorical
            values (leaves under it - 1) / (leaves in domain - 1), CG paper eq. 2 / ILS eq. 2; for
            ordered values (high - low) / (domain high - domain low), CG eq. 3 / ILS eq. 1.
        leaves_under: per level, how many domain leaves each generalized code covers.
        leaf_values: for ordered types, the numeric value of each leaf (dates as days), else None.
        low, high: for ordered types, per level, the numeric bounds of each generalized code.
        domain: for ordered types, ``(low, high)`` of the domain used to normalise costs.
    """

    name: str
    kind: str
    codes: np.ndarray
    maps: tuple[np.ndarray, ...]
    labels: tuple[np.ndarray, ...]
    cost: tuple[np.ndarray, ...]
    leaves_under: tuple[np.ndarray, ...]
    leaf_values: np.ndarray | None = None
    low: tuple[np.ndarray, ...] | None = None
    high: tuple[np.ndarray, ...] | None = None
    domain: tuple[float, float] | None = None
    _up_cache: dict[tuple[int, int], np.ndarray] = field(default_factory=dict, repr=False)

    @property
    def height(self) -> int:
        """Number of generalization steps above the leaves (the top level index)."""
        return len(self.maps) - 1

    @property
    def n_leaves(self) -> int:
        return len(self.maps[0])

    @property
    def ordered(self) -> bool:
        return self.leaf_values is not None

    def n_codes(self, level: int) -> int:
        return len(self.labels[level])

    def at(self, level: int) -> np.ndarray:
        """Generalized code per row at ``level``."""
        return self.maps[level][self.codes]

    def up(self, src: int, dst: int) -> np.ndarray:
        """Map from codes at level ``src`` to codes at level ``dst >= src`` (hierarchies nest)."""
        key = (src, dst)
        if key not in self._up_cache:
            table = np.zeros(self.n_codes(src), dtype=np.int32)
            table[self.maps[src]] = self.maps[dst]
            self._up_cache[key] = table
        return self._up_cache[key]

    def lca_level(self, leaf_codes: np.ndarray) -> int:
        """Lowest level at which all the given leaves share one generalized value."""
        for level in range(self.height + 1):
            mapped = self.maps[level][leaf_codes]
            if (mapped == mapped[0]).all():
                return level
        return self.height

    def row_cost(self, level: int) -> np.ndarray:
        """Information-loss cost per row at ``level``."""
        return self.cost[level][self.at(level)]


def factorize(values: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Per-row code into the column's distinct raw values, and those values (object array).

    Hashing runs in C (pandas factorization, or the codes of a categorical column); callers then
    do their Python work (stripping, parsing, lookups) once per distinct value, never per row.
    Missing values are kept as one distinct value (``nan``), as ``astype(str)`` would render them.
    """
    if isinstance(values.dtype, pd.CategoricalDtype):
        values = values.cat.remove_unused_categories()
        codes = values.cat.codes.to_numpy().astype(np.int64)
        uniq = np.asarray(values.cat.categories, dtype=object)
        if len(codes) and codes.min() < 0:
            codes = np.where(codes < 0, len(uniq), codes)
            uniq = np.append(uniq, np.array([np.nan], dtype=object))
        return codes, uniq
    codes, uniq = pd.factorize(values.to_numpy())
    codes, uniq = codes.astype(np.int64, copy=False), np.asarray(uniq, dtype=object)
    if len(codes) and codes.min() < 0:  # missing values: one more distinct value
        codes = np.where(codes < 0, len(uniq), codes)
        uniq = np.append(uniq, np.array([np.nan], dtype=object))
    return codes, uniq


def stripped(uniq: np.ndarray) -> np.ndarray:
    """``str(value).strip()`` of each distinct value (object array of ``str``)."""
    return np.array([str(v).strip() for v in uniq], dtype=object)


def validate_nesting(name: str, maps: list[np.ndarray]) -> None:
    """Check that every value at level ``l`` has exactly one parent at ``l + 1``."""
    for level in range(len(maps) - 1):
        child, parent = maps[level], maps[level + 1]
        pairs = np.unique(np.stack([child, parent], axis=1), axis=0)
        if len(pairs) != len(np.unique(child)):
            raise HierarchyError(
                f"hierarchy of '{name}' is not a tree: a value at level {level} has several parents "
                f"at level {level + 1}",
                reason="invalid-hierarchy",
            )


def unknown_error(name: str, unknown: Iterable[object]) -> HierarchyError:
    values = sorted({str(v) for v in unknown})
    return HierarchyError(
        f"column '{name}' has {len(values)} value(s) not in its hierarchy: {preview(values)} "
        f"(set unknown = \"top\" in the spec to map them to '*')"
    )


class Hierarchy(ABC):
    """A generalization hierarchy that can encode a column of raw values."""

    def __init__(self, name: str) -> None:
        self.name = name

    @abstractmethod
    def encode(self, values: pd.Series, unknown: UnknownPolicy = "error") -> EncodedQI:
        """Encode ``values`` into an :class:`EncodedQI`; unknown values raise or map to ``*``."""

    def check(self, values: pd.Series, unknown: UnknownPolicy = "error") -> None:
        """Raise what :meth:`encode` raises for ``values``, else nothing (intake checks one report's value at a
        time; a hierarchy whose encoding does more than refuse values overrides this with its refusing part)."""
        self.encode(values, unknown)

    def check_value(self, value: str, unknown: UnknownPolicy = "error") -> None:
        """:meth:`check` of one value (a report's field at intake): the same refusals, the same errors.

        The default builds a one-row column; hierarchies whose refusal is a lookup or a parse override
        it so that a stream's intake does not pay a pandas column per report."""
        self.check(pd.Series([value]), unknown)

    def covers(self, label: str, value: object) -> bool:
        """True if the generalized ``label`` is a generalization of the raw ``value``.

        Used by the independent verifier; the default implementation encodes the single value.
        """
        enc = self.encode(pd.Series([value]), unknown="top")
        leaf = enc.codes[0]
        return any(enc.labels[lvl][enc.maps[lvl][leaf]] == label for lvl in range(enc.height + 1))
