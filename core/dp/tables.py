"""A published count table: its cells, noisy counts and the 95 % interval half-width of every cell."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd


@dataclass(frozen=True)
class CountTable:
    """Noisy counts of one grouping over its whole public domain (zero cells included).

    ``counts[i]`` is the post-processed noisy count of ``groups[i]`` (values of the ``by`` columns);
    ``count ± ci95`` covers the exact count with probability at least 95 % per cell. ``rho`` is what
    this table spent (zCDP) on every block its rows fall in; ``unit`` is ``"report"`` or ``"person"``
    (then each person is bounded to ``max_contributions`` reports per block)."""

    by: tuple[str, ...]
    groups: tuple[tuple[str, ...], ...]
    counts: tuple[int, ...]
    ci95: float
    mechanism: str
    rho: float
    unit: str
    max_contributions: int = 1

    def __post_init__(self) -> None:
        if len(self.groups) != len(self.counts):
            raise ValueError(f"{len(self.groups)} groups but {len(self.counts)} counts")
        if any(len(g) != len(self.by) for g in self.groups):
            raise ValueError(f"every group needs {len(self.by)} values ({', '.join(self.by)})")

    @property
    def name(self) -> str:
        """``offence`` or ``suburb_region x offence``: how docs, manifests and files name the table."""
        return " x ".join(self.by)

    def to_json(self) -> dict[str, Any]:
        return {"by": list(self.by), "groups": [list(g) for g in self.groups], "counts": list(self.counts),
                "ci95": self.ci95, "mechanism": self.mechanism, "rho": self.rho, "unit": self.unit,
                "max_contributions": self.max_contributions}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CountTable:
        return cls(by=tuple(data["by"]), groups=tuple(tuple(str(v) for v in g) for g in data["groups"]),
                   counts=tuple(int(c) for c in data["counts"]), ci95=float(data["ci95"]),
                   mechanism=str(data["mechanism"]), rho=float(data["rho"]), unit=str(data["unit"]),
                   max_contributions=int(data.get("max_contributions", 1)))

    def to_frame(self) -> pd.DataFrame:
        """The group columns, ``count`` and ``ci95``, one row per cell."""
        frame = pd.DataFrame(list(self.groups), columns=list(self.by), dtype=object)
        frame["count"] = pd.Series(self.counts, dtype="int64")
        frame["ci95"] = int(self.ci95) if float(self.ci95).is_integer() else self.ci95
        return frame
