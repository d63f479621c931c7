"""The interface of a label interpreter and the published column description (see :mod:`core.columns.interpret`)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

import numpy as np
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

    def frame(self, labels: pd.Series, coded: tuple[np.ndarray, list[str]] | None = None) -> pd.DataFrame:
        """The typed columns for a column of labels (same index); ``coded``: its :func:`label_codes`, if known."""
        codes, texts = coded if coded is not None else label_codes(labels)
        table = [self.values(u) for u in texts]
        out = {}
        for j, col in enumerate(self.columns()):  # typed once per distinct label, then taken
            small = pd.array([row[j] for row in table], dtype=_DTYPES[col.type])
            out[col.name] = pd.Series(small.take(codes), index=labels.index)
        return pd.DataFrame(out, index=labels.index)


def label_codes(labels: pd.Series) -> tuple[np.ndarray, list[str]]:
    """Each row's code into the distinct label texts (``str`` of the value, ``*`` where missing), as
    ``labels.astype(object).where(labels.notna(), TOP).astype(str)`` would give them, judged once
    per distinct value (a text may repeat: a missing label and a ``*``)."""
    codes, uniq = pd.factorize(labels, use_na_sentinel=True)
    if labels.dtype == object and len(uniq) and pd.api.types.infer_dtype(uniq, skipna=False) != "string":
        text = labels.astype(object).where(labels.notna(), TOP).astype(str)  # 1, 1.0, True hash alike
        codes, uniq = pd.factorize(text)
        return codes, [str(u) for u in uniq]
    texts = [str(u) for u in uniq]
    if (codes < 0).any():
        texts.append(TOP)
        codes = np.where(codes < 0, len(texts) - 1, codes)
    return codes, texts


_DTYPES = {"integer": "Int64", "number": "Float64", "date": "string", "string": "string", "boolean": "boolean"}
