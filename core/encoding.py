"""Encode a batch once into integer codes per quasi-identifier, with per-level lookup tables.

:class:`Schema` is a validated :class:`~core.schema.DatasetSpec` with its hierarchy objects.
:func:`encode` turns a DataFrame into an :class:`EncodedBatch`; engines then work on numpy arrays.
"""

from __future__ import annotations

import dataclasses
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pandas as pd

from core.codes import carried
from core.errors import InputDataError, SpecError, preview
from core.hierarchies import EncodedQI, Hierarchy, build_hierarchy
from core.hierarchies.base import UnknownPolicy, factorize, stripped
from core.schema import DatasetSpec


@dataclass(frozen=True, eq=False)
class Schema:
    """A dataset spec bound to its hierarchy objects."""

    spec: DatasetSpec
    hierarchies: dict[str, Hierarchy] = field(default_factory=dict)

    @classmethod
    def from_spec(cls, spec: DatasetSpec) -> Schema:
        return cls(spec=spec, hierarchies={q.name: build_hierarchy(q) for q in spec.qi})

    @property
    def qi_names(self) -> list[str]:
        return self.spec.qi_names

    @property
    def sensitive(self) -> str | None:
        return self.spec.sensitive.name if self.spec.sensitive else None

    @property
    def severity(self) -> dict[str, float] | None:
        return self.spec.sensitive.severity if self.spec.sensitive else None

    def restrict(self, names: list[str]) -> Schema:
        """The same schema with only the named QIs, in that order."""
        return Schema(spec=self.spec.with_qis(names), hierarchies={n: self.hierarchies[n] for n in names})


@dataclass(frozen=True, eq=False)
class EncodedBatch:
    """A batch with identifiers dropped and QIs encoded.

    ``frame`` keeps the used columns of the input (QIs, sensitive, pass-through) with the input's
    index, so a release can refer back to input rows.
    """

    schema: Schema
    frame: pd.DataFrame
    qis: tuple[EncodedQI, ...]
    weights: np.ndarray
    sensitive_codes: np.ndarray | None
    sensitive_labels: np.ndarray | None
    severity: np.ndarray | None

    @property
    def n(self) -> int:
        return len(self.frame)

    @property
    def d(self) -> int:
        return len(self.qis)

    @cached_property
    def heights(self) -> np.ndarray:
        return np.array([q.height for q in self.qis], dtype=np.int64)

    @cached_property
    def leaf_matrix(self) -> np.ndarray:
        """Leaf codes, shape (n, d)."""
        return np.stack([q.codes for q in self.qis], axis=1) if self.qis else np.zeros((self.n, 0), np.int32)

    def generalize(self, levels: np.ndarray | Sequence[int]) -> np.ndarray:
        """Generalized codes of every row at the lattice node ``levels``, shape (n, d)."""
        return np.stack([q.at(int(lv)) for q, lv in zip(self.qis, levels, strict=True)], axis=1)

    def labels_at(self, levels: np.ndarray | Sequence[int]) -> pd.DataFrame:
        """Generalized labels of every row at node ``levels`` as a DataFrame of strings."""
        cols = {q.name: q.labels[int(lv)][q.at(int(lv))] for q, lv in zip(self.qis, levels, strict=True)}
        return pd.DataFrame(cols, index=self.frame.index)

    def row_cost(self, levels: np.ndarray | Sequence[int], rows: np.ndarray | None = None) -> np.ndarray:
        """Per-row, per-QI information-loss cost at node ``levels``, shape (n, d) (or of ``rows`` only)."""
        out = np.empty((self.n if rows is None else len(rows), self.d), np.float64)
        for a, (q, lv) in enumerate(zip(self.qis, levels, strict=True)):
            leaf_cost = q.cost[int(lv)][q.maps[int(lv)]]  # per leaf: one gather per row below
            out[:, a] = leaf_cost[q.codes if rows is None else q.codes[rows]]
        return out

    def released_frame(self, levels: np.ndarray | Sequence[int], rows: np.ndarray | None = None) -> pd.DataFrame:
        """The used columns of ``rows`` (all rows if None) with every QI replaced by its label at ``levels``.

        Labels are gathered per leaf first, then once per released row; other columns keep their dtype.
        Each column is an array of its own (new, never the input's), not copied again into one block.
        """
        level_of = {q.name: (q, int(lv)) for q, lv in zip(self.qis, levels, strict=True)}
        data: dict[str, object] = {}
        for col in self.frame.columns:
            if col in level_of:
                q, lv = level_of[col]
                leaf_label = q.labels[lv][q.maps[lv]]
                data[col] = leaf_label[q.codes if rows is None else q.codes[rows]]
            else:
                values = self.frame[col].array
                data[col] = values.copy() if rows is None else values.take(rows)
        index = self.frame.index if rows is None else self.frame.index.take(rows)
        return pd.DataFrame(data, index=index, columns=self.frame.columns, copy=False)

    def take(self, rows: np.ndarray) -> EncodedBatch:
        """A sub-batch of the given positional rows, sharing the hierarchies' lookup tables."""
        qis = tuple(
            EncodedQI(name=q.name, kind=q.kind, codes=q.codes[rows], maps=q.maps, labels=q.labels, cost=q.cost,
                      leaves_under=q.leaves_under, leaf_values=q.leaf_values, low=q.low, high=q.high,
                      domain=q.domain)
            for q in self.qis
        )
        return EncodedBatch(
            schema=self.schema, frame=self.frame.iloc[rows], qis=qis, weights=self.weights,
            sensitive_codes=None if self.sensitive_codes is None else self.sensitive_codes[rows],
            sensitive_labels=self.sensitive_labels, severity=self.severity,
        )


def check_columns(frame: pd.DataFrame, spec: DatasetSpec) -> None:
    missing = [c for c in spec.used_columns() if c not in frame.columns]
    if missing:
        raise InputDataError(
            f"input lacks column(s) named in the spec: {preview(missing)}; input columns are: "
            f"{preview(list(frame.columns), 12)}",
            reason="missing-field",
        )


def encode(frame: pd.DataFrame, schema: Schema) -> EncodedBatch:
    """Drop identifiers, validate columns and encode every QI and the sensitive attribute."""
    spec = schema.spec
    if len(frame) == 0:
        raise InputDataError("input is empty: no rows to anonymize", reason="empty-input")
    check_columns(frame, spec)
    names = spec.used_columns()  # the input's columns side by side, as views: no copy of the rows' cells
    used = pd.DataFrame({c: frame[c] for c in names}, copy=False) if frame.columns.is_unique else frame[names]
    qis = tuple(_encode_qi(schema.hierarchies[q.name], frame, q.name, spec.unknown) for q in spec.qi)
    weights = np.array(spec.weights, dtype=np.float64)
    s_codes = s_labels = severity = None
    if spec.sensitive is not None:
        col = used[spec.sensitive.name]
        if col.isna().any():
            raise InputDataError(f"sensitive column '{spec.sensitive.name}' has missing values", reason="missing-field")
        raw, distinct = _factorized(frame, spec.sensitive.name)  # strip and sort the distinct values only
        labels_of, uniq = pd.factorize(stripped(distinct), sort=True)
        s_codes, s_labels = labels_of.astype(np.int32)[raw], np.asarray(uniq, dtype=object)
        table = spec.sensitive.severity
        if table is not None:
            missing = [v for v in s_labels if v not in table]
            if missing and spec.sensitive.default_severity is None:
                raise SpecError(
                    f"severity table lacks offence(s) present in the data: {preview(missing)}",
                    reason="unknown-offence",
                )
            default = spec.sensitive.default_severity or 0.0
            severity = np.array([table.get(v, default) for v in s_labels], dtype=np.float64)
    return EncodedBatch(schema=schema, frame=used, qis=qis, weights=weights, sensitive_codes=s_codes,
                        sensitive_labels=s_labels, severity=severity)


def _factorized(frame: pd.DataFrame, name: str) -> tuple[np.ndarray, np.ndarray]:
    """:func:`core.hierarchies.base.factorize` of a column, from the codes the frame carries if any."""
    got = carried(frame, name)
    if got is None:
        return factorize(frame[name])
    if not got.missing:
        return got.codes.astype(np.int64, copy=False), got.uniques
    return np.where(got.codes < 0, got.size, got.codes), np.append(got.uniques, np.array([np.nan], dtype=object))


def _encode_qi(hierarchy: Hierarchy, frame: pd.DataFrame, name: str, unknown: UnknownPolicy) -> EncodedQI:
    """``hierarchy.encode(frame[name])``; with the column's codes carried, the hierarchy encodes its distinct
    values only (in order of first appearance, as it would factorize the column) and the rows take theirs."""
    got = carried(frame, name)
    if got is None:
        return hierarchy.encode(frame[name], unknown)
    rows, distinct = _factorized(frame, name)
    encoded = hierarchy.encode(pd.Series(distinct, dtype=object), unknown)
    return dataclasses.replace(encoded, codes=encoded.codes[rows], _up_cache={})


class EncodingCache:
    """Reuse the encoding of a frame across runs of the same batch (several engines, settings or repeats).

    Entries are keyed by the identity of the frame and of the schema object, hold the frame only
    weakly and are checked to be the very same objects on a hit. Callers must treat a cached frame
    as immutable: after changing a frame in place, call :meth:`forget` (or use a new frame).
    """

    def __init__(self, size: int = 4) -> None:
        self.size = size
        self._items: OrderedDict[tuple[int, int], tuple[weakref.ref[pd.DataFrame], Schema, EncodedBatch]] = (
            OrderedDict())
        self.hits = self.misses = 0

    def encode(self, frame: pd.DataFrame, schema: Schema) -> EncodedBatch:
        key = (id(frame), id(schema))
        hit = self._items.get(key)
        if hit is not None and hit[0]() is frame and hit[1] is schema:
            self.hits += 1
            self._items.move_to_end(key)
            return hit[2]
        self.misses += 1
        batch = encode(frame, schema)
        self._items[key] = (weakref.ref(frame), schema, batch)
        while len(self._items) > self.size:
            self._items.popitem(last=False)
        return batch

    def forget(self, frame: pd.DataFrame) -> None:
        """Drop every encoding of ``frame``."""
        for key in [k for k in self._items if k[0] == id(frame)]:
            del self._items[key]
