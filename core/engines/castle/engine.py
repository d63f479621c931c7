"""``castle``: delay-bounded stream anonymization by adaptive clustering (CASTLE: Cao, Carminati, Ferrari
and Tan, ICDE 2008 / IEEE TDSC 8(3) 2011; its l-diverse extension from the same paper; reuse window and
choices where the paper is loose from Prink, the Flink implementation, ARES 2025).

Guarantee: every released tuple leaves in a cluster (all tuples released with the same generalisation,
i.e. one class of the release) holding at least k distinct persons and at least l distinct sensitive
values; a tuple leaves at most ``delta_tuples`` tuples after it arrived (and, when ``delta_seconds`` is
set, once event time is ``delta_seconds`` past it, when the next tuple or tick arrives) or is
suppressed and counted with its reason. Released labels are nodes of the spec's hierarchies (the
smallest node covering the cluster), so labels nest like every local-recoding engine's.

The batch path replays the batch as a stream in its row order (one person per row unless
``person_column`` names a pass-through column with person ids) and ends it with a flush; what the
stream suppressed is the release's suppression, refused (InfeasibleError) beyond ``max_suppression``.
The algorithm is in :mod:`core.engines.castle.stream`, the streaming API a worker uses there too, its
persistable state in :mod:`core.engines.castle.state`. docs/engines/castle.md has the details.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pandas as pd
from pydantic import Field, model_validator

from core.encoding import EncodedBatch
from core.engines.base import (
    Engine,
    EngineParams,
    Progress,
    Release,
    no_progress,
    require_models,
    require_rows,
    require_sensitive,
)
from core.engines.castle.records import Settings
from core.engines.castle.space import Space
from core.engines.castle.stream import CastleStream
from core.errors import InfeasibleError, ParamsError
from core.metrics import summarize
from core.privacy import achieved


class CastleParams(EngineParams):
    delta_tuples: int = Field(default=5000, ge=1, description="a tuple leaves at most this many tuples after it "
                                                                "arrived (CASTLE's delta)")
    delta_seconds: float | None = Field(default=None, gt=0, description="also leave once event time is this many "
                                                                          "seconds past the tuple (needs time_column)")
    time_column: str | None = Field(default=None, description="column with each tuple's event time (batch path)")
    person_column: str | None = Field(default=None, description="pass-through column with person ids: k counts "
                                                                  "distinct persons (default: one person per row)")
    mu: int = Field(default=100, ge=1, description="tau is the mean loss of the last mu published clusters")
    beta: int | None = Field(default=None, ge=1, description="most open clusters at once (unset: unbounded)")
    omega_max: int = Field(default=10_000, ge=0, description="published clusters kept for reuse (Prink's zeta)")
    reuse: bool = Field(default=True, description="release an expiring tuple through a published cluster "
                                                  "covering it")
    suppress_outliers: bool = Field(default=False, description="the paper's rule: suppress an expiring tuple whose "
                                                               "cluster is smaller than most open ones")

    @model_validator(mode="after")
    def _distinct_l_only(self) -> CastleParams:
        if self.l is not None and self.l > 1 and self.l_kind != "distinct":
            raise ValueError("castle enforces distinct l-diversity only (l_kind = distinct)")
        if self.delta_seconds is not None and self.time_column is None:
            raise ValueError("delta_seconds needs time_column")
        return self

    def settings(self) -> Settings:
        return Settings(k=self.requirement().k_min, l=max(self.l or 1, 1), delta_tuples=self.delta_tuples,
                        delta_seconds=self.delta_seconds, mu=self.mu, beta=self.beta, omega_max=self.omega_max,
                        reuse=self.reuse, suppress_outliers=self.suppress_outliers)


def _column(batch: EncodedBatch, name: str | None, what: str) -> pd.Series | None:
    if name is None:
        return None
    if name not in batch.frame.columns:
        raise ParamsError(f"engine 'castle' parameter '{what}': no column '{name}' among the spec's used columns "
                          f"({', '.join(batch.frame.columns)})")
    return batch.frame[name]


def _times(col: pd.Series | None) -> np.ndarray | None:
    if col is None:
        return None
    ts = pd.to_datetime(col, utc=True, errors="coerce")
    if ts.isna().any():
        raise InfeasibleError("time_column has values that are not dates or times", reason="invalid-params")
    return (ts - pd.Timestamp(0, tz="UTC")).dt.total_seconds().to_numpy()


class CastleEngine(Engine[CastleParams]):
    name = "castle"
    summary = "delay-bounded stream clustering (CASTLE): each row leaves within delta rows, k persons, l values"
    paper = "Cao, Carminati, Ferrari, Tan 2008/2011 (CASTLE); Prink 2025"
    Params = CastleParams
    models = ("k", "l", "max_risk")

    def anonymize(self, batch: EncodedBatch, params: CastleParams, rng: np.random.Generator,
                  progress: Progress = no_progress) -> Release:
        started = time.perf_counter()
        require_models(self, params)
        s = params.settings()
        require_rows(batch, s.k)
        require_sensitive(batch, params)
        pids_col = _column(batch, params.person_column, "person_column")
        pids = np.arange(batch.n) if pids_col is None else pids_col.astype(str).to_numpy()
        times = _times(_column(batch, params.time_column, "time_column"))
        sens = batch.sensitive_codes if s.l > 1 else None
        if len(set(pids.tolist())) < s.k:
            raise InfeasibleError(f"k={s.k} exceeds the number of persons ({len(set(pids.tolist()))})",
                                  reason="batch-too-small")
        if sens is not None and len(np.unique(sens)) < s.l:
            raise InfeasibleError(f"l={s.l} exceeds the distinct sensitive values of the batch", reason="infeasible")
        space = Space.from_batch(batch)
        stream = CastleStream(space, s, rng)
        leaves = batch.leaf_matrix.astype(np.int32)
        out = []
        for i in range(batch.n):
            out.extend(stream.push(i, leaves[i], pids[i], None if sens is None else int(sens[i]),
                                   None if times is None else float(times[i])))
            if i % 2000 == 1999:
                progress(i / batch.n, f"{i + 1} tuples")
        out.extend(stream.flush())
        return self._release(batch, params, space, stream, out, started)

    def _release(self, batch: EncodedBatch, params: CastleParams, space: Space, stream: CastleStream,
                 out: list, started: float) -> Release:
        kept = [o for o in out if o.nodes is not None]
        rows = np.array([o.tuple_id for o in kept], dtype=np.int64)
        order = np.argsort(rows, kind="stable")  # release in the batch's row order
        rows = rows[order]
        nodes = np.stack([kept[i].nodes for i in order]) if kept else np.zeros((0, batch.d, 2), np.int64)
        cls = np.array([kept[i].cluster for i in order], dtype=np.int64)
        suppressed_pos = np.array(sorted(o.tuple_id for o in out if o.nodes is None), dtype=np.int64)
        if len(suppressed_pos) > params.requirement().max_suppressed_rows(batch.n):
            raise InfeasibleError(
                f"the stream suppressed {len(suppressed_pos)} of {batch.n} rows (reasons: "
                f"{ {k: v for k, v in stream.stats.items() if k.startswith('suppressed')} }), more than "
                f"max_suppression={params.max_suppression} allows; raise delta_tuples or max_suppression",
                reason="infeasible")
        released = batch.frame.iloc[rows].copy()
        cost = np.zeros((len(rows), batch.d))
        for a, q in enumerate(batch.qis):
            lv, code = nodes[:, a, 0], nodes[:, a, 1]
            labels = np.empty(len(rows), dtype=object)
            for level in np.unique(lv):
                at = lv == level
                labels[at] = q.labels[int(level)][code[at]]
            released[q.name] = labels
            cost[:, a] = space.cost[a, lv, code]
        sens = batch.sensitive_codes[rows] if batch.sensitive_codes is not None else None
        level = achieved(cls, sens, c=params.c, t_distance=params.t_distance)
        metrics = summarize(cost, batch.weights, cls, len(suppressed_pos), params.k, batch.schema.qi_names,
                            None if batch.severity is None or sens is None else batch.severity[sens])
        latency = np.array([o.latency for o in out], dtype=np.int64)
        late = int((latency > params.delta_tuples).sum())
        diag: dict[str, Any] = {
            "clusters": stream.next_cluster, "departures": dict(sorted(stream.stats.items())),
            "late": late, "latency_p50": float(np.percentile(latency, 50)) if len(latency) else 0.0,
            "latency_p99": float(np.percentile(latency, 99)) if len(latency) else 0.0,
            "latency_max": int(latency.max()) if len(latency) else 0, "tau": round(stream.tau, 6),
        }
        return Release(
            engine=self.name, params=params.model_dump(), requirement=params.requirement(), rows=released,
            class_ids=cls, suppressed=batch.frame.index.take(suppressed_pos).to_numpy(), metrics=metrics,
            privacy=level.as_dict(), diagnostics=diag, runtime_s=time.perf_counter() - started,
        )
