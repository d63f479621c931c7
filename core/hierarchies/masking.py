"""Right-masking of codes such as postcodes: ``80015`` -> ``8001*`` -> ... -> ``*****``.

Leaves are the distinct codes in the batch, so the categorical cost (leaves under - 1) /
(leaves - 1) is computed over the codes actually seen; this is documented in docs/hierarchies.md.
"""

from __future__ import annotations

import pandas as pd

from core.hierarchies.base import EncodedQI, Hierarchy, UnknownPolicy, factorize, stripped, unknown_error
from core.hierarchies.table import TableHierarchy


def mask_rows(codes: list[str], length: int | None, char: str = "*") -> list[list[str]]:
    width = length or max(len(c) for c in codes)
    rows = []
    for code in codes:
        c = code[:width]
        rows.append([c] + [c[: max(len(c) - i, 0)] + char * min(i, len(c)) for i in range(1, width + 1)])
    return rows


class MaskHierarchy(Hierarchy):
    def __init__(self, name: str, length: int | None = None, char: str = "*") -> None:
        super().__init__(name)
        self.length, self.char = length, char

    def encode(self, values: pd.Series, unknown: UnknownPolicy = "error") -> EncodedQI:
        factorized = factorize(values)  # once: the table is built over the distinct codes, then looked up
        codes = sorted(set(stripped(factorized[1])))
        table = TableHierarchy(self.name, mask_rows(codes, self.length, self.char), kind="masked")
        return table.encode(values, unknown, factorized)

    def check_value(self, value: str, unknown: UnknownPolicy = "error") -> None:
        """A code is its own leaf, cut to ``length``: only a longer code is outside the hierarchy."""
        key = str(value).strip()
        if unknown == "error" and self.length is not None and len(key) > self.length:
            raise unknown_error(self.name, [key])

    def covers(self, label: str, value: object) -> bool:
        v = str(value).strip()
        if label.startswith("{") and label.endswith("}"):
            return v in {x.strip() for x in label[1:-1].split(",")}
        if set(label) == {self.char}:
            return True
        keep = label.rstrip(self.char)
        return v.startswith(keep) and len(label) == len(v[: len(label)]) and len(v) == len(label)
