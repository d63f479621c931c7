"""The interface of a label interpreter and the published column description (see :mod:`core.columns.interpret`)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

import pandas as pd

from core.hierarchies import TOP, Hierarchy
from core.schema import QISpec

RANGE, SET = "range", "set"


@dataclass(frozen=True)
class Column:
    """A published column: its name, type (string, integer, number, date, boolean) and meaning."""

    name: str
    type: str
    meaning: str

    def as_dict(self) -> dict[str, str]:
        return {"name": self.name, "type": self.type, "meaning": self.meaning}


def set_members(label: str) -> list[str] | None:
    """Members of a set label ``{a,b}`` (heterogeneous engines), None for any other label."""
    if len(label) >= 2 and label[0] == "{" and label[-1] == "}":
        return [v.strip() for v in label[1:-1].split(",")]
    return None


class Interpreter(ABC):
    """Reads the labels of one QI. Subclasses work once per distinct label."""

    kind: str

    def __init__(self, qi: QISpec, hierarchy: Hierarchy) -> None:
        self.qi, self.name, self.hierarchy = qi, qi.name, hierarchy

    @abstractmethod
    def columns(self) -> list[Column]:
        """The typed columns published after the label column (not the label itself)."""

    @abstractmethod
    def values(self, label: str) -> tuple[Any, ...]:
        """The typed values of one label, in :meth:`columns` order (None for null)."""

    @abstractmethod
    def level(self, label: str) -> int | str | None:
        """Hierarchy level of a label (int), ``"range"`` / ``"set"`` off the levels, None if unknown."""

    @abstractmethod
    def levels(self) -> list[str]:
        """Names of the hierarchy levels, level 0 (the original value) first, ``*`` last."""

    def label_meaning(self) -> str:
        return f"'{self.name}' as released: a value of its hierarchy ({self.qi.hierarchy.kind}); * = any value"

    def frame(self, labels: pd.Series) -> pd.DataFrame:
        """The typed columns for a column of labels (same index)."""
        text = labels.astype(object).where(labels.notna(), TOP).astype(str)
        codes, uniq = pd.factorize(text)
        table = [self.values(u) for u in uniq]
        out = {}
        for j, col in enumerate(self.columns()):  # typed once per distinct label, then taken (code -1: the None)
            small = pd.array([row[j] for row in table] + [None], dtype=_DTYPES[col.type])
            out[col.name] = pd.Series(small.take(codes), index=labels.index)
        return pd.DataFrame(out, index=labels.index)


_DTYPES = {"integer": "Int64", "number": "Float64", "date": "string", "string": "string", "boolean": "boolean"}
