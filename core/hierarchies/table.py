"""Table hierarchies: ARX-style rows ``leaf;level1;...;*``, also used by trees and masks."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from core.errors import HierarchyError
from core.hierarchies.base import (
    TOP,
    EncodedQI,
    Hierarchy,
    UnknownPolicy,
    factorize,
    stripped,
    unknown_error,
    validate_nesting,
)


def parse_arx_csv(text: str, sep: str = ";") -> list[list[str]]:
    """Parse the text of an ARX hierarchy CSV into rows (pure: the caller reads the file)."""
    rows = [[cell.strip() for cell in line.split(sep)] for line in text.splitlines() if line.strip()]
    if not rows:
        raise HierarchyError("hierarchy CSV is empty", reason="invalid-hierarchy")
    return rows


class TableHierarchy(Hierarchy):
    """A hierarchy given as a full table over a fixed leaf domain.

    The information-loss cost of a generalized value is (leaves under it - 1) / (leaves - 1),
    the categorical loss of the CG paper (eq. 2) and of ARX's loss metric.
    """

    def __init__(self, name: str, rows: Sequence[Sequence[str]], kind: str = "categorical") -> None:
        super().__init__(name)
        if not rows:
            raise HierarchyError(f"hierarchy of '{name}' has no rows", reason="invalid-hierarchy")
        width = max(len(r) for r in rows)
        if any(len(r) != width for r in rows):
            raise HierarchyError(
                f"hierarchy of '{name}': every row needs {width} columns (leaf plus levels)",
                reason="invalid-hierarchy",
            )
        table = np.array([list(r) for r in rows], dtype=object)
        leaves = table[:, 0]
        if len(set(leaves)) != len(leaves):
            dup = pd.Series(leaves)[pd.Series(leaves).duplicated()].tolist()
            raise HierarchyError(f"hierarchy of '{name}' lists leaves twice: {dup[:5]}", reason="invalid-hierarchy")
        if len(set(table[:, -1])) > 1:
            table = np.concatenate([table, np.full((len(table), 1), TOP, dtype=object)], axis=1)
        self.kind = kind
        self.table = table
        self.leaf_index = pd.Index(leaves.astype(str))
        maps, labels = [], []
        for level in range(table.shape[1]):
            codes, uniq = pd.factorize(pd.Series(table[:, level]), sort=False)
            maps.append(codes.astype(np.int32))
            labels.append(np.asarray(uniq, dtype=object))
        validate_nesting(name, maps)
        self._maps = maps
        self._labels = labels
        n = len(leaves)
        self._under = [np.bincount(m, minlength=len(lbl)) for m, lbl in zip(maps, labels, strict=True)]
        self._cost = [((u - 1) / (n - 1) if n > 1 else np.zeros(len(u))) for u in self._under]
        self._cost[-1] = np.ones_like(self._cost[-1])

    @property
    def height(self) -> int:
        return len(self._maps) - 1

    def leaf_codes(self, values: pd.Series, unknown: UnknownPolicy,
                   factorized: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[np.ndarray, bool]:
        """Leaf code per row (vectorized: one hierarchy lookup per distinct value) and whether any
        value is outside the hierarchy (mapped to the synthetic leaf ``len(leaves)``).

        ``factorized`` is ``factorize(values)`` when the caller already has it."""
        raw, uniq = factorized if factorized is not None else factorize(values)
        keys = stripped(uniq)
        lut = self.leaf_index.get_indexer(keys).astype(np.int32)
        missing = lut < 0
        if missing.any():
            if unknown == "error":
                raise unknown_error(self.name, keys[missing])
            lut[missing] = len(self.leaf_index)
        return lut[raw], bool(missing.any())

    def check_value(self, value: str, unknown: UnknownPolicy = "error") -> None:
        """Refuses a value that is not a leaf (when ``unknown`` is ``error``), as :meth:`encode` does."""
        key = str(value).strip()
        if unknown == "error" and key not in self.leaf_index:
            raise unknown_error(self.name, [key])

    def encode(self, values: pd.Series, unknown: UnknownPolicy = "error",
               factorized: tuple[np.ndarray, np.ndarray] | None = None) -> EncodedQI:
        codes, has_unknown = self.leaf_codes(values, unknown, factorized)
        maps, labels, cost, under = list(self._maps), list(self._labels), list(self._cost), list(self._under)
        if has_unknown:
            # One synthetic leaf labelled '*' at every level below the top, costing 1 everywhere.
            for lvl in range(len(maps)):
                top_level = lvl == len(maps) - 1
                new_code = 0 if top_level else len(labels[lvl])
                maps[lvl] = np.append(maps[lvl], np.int32(new_code))
                if not top_level:
                    labels[lvl] = np.append(labels[lvl], np.array([TOP], dtype=object))
                    cost[lvl] = np.append(cost[lvl], 1.0)
                    under[lvl] = np.append(under[lvl], 1)
        return EncodedQI(
            name=self.name, kind=self.kind, codes=codes, maps=tuple(maps), labels=tuple(labels),
            cost=tuple(cost), leaves_under=tuple(under),
        )

    def covers(self, label: str, value: object) -> bool:
        if label.startswith("{") and label.endswith("}"):  # a value set (heterogeneous engines)
            return str(value).strip() in {v.strip() for v in label[1:-1].split(",")}
        pos = self.leaf_index.get_indexer([str(value).strip()])[0]
        if pos < 0:
            return label == TOP
        return label in set(self.table[pos])
