"""One group of CASTLE departures as a :class:`~core.engines.base.Release` the worker verifies and stores.

Before anything is published each class of the group (the departures released with the same
generalisation) is checked here, by distinct persons and distinct sensitive values: a class below k persons
or l values is suppressed, with the reason ``class-below-k`` / ``class-below-l`` counted in the manifest.
The stream's own suppressions (e.g. ``too-few-waiting``: fewer than k persons waited when a report's delay
ran out) keep CASTLE's reason. Then the independent verifier (:func:`core.verify.verify_release`) checks the
release like any window's.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import pandas as pd

from core.encoding import Schema, encode
from core.engines.base import EngineParams, Release
from core.engines.castle.records import Departure
from core.engines.castle.space import Space
from core.metrics import summarize
from core.privacy import achieved


def tid(d: Departure) -> int:
    """A departure's tuple id: the report's pool id."""
    return int(cast(int, d.tuple_id))


@dataclass
class Group:
    """The departures of one step: ``kept`` (released), ``suppressed`` (pool id -> reason)."""

    kept: list[Departure]
    suppressed: dict[int, str]


def check_classes(deps: list[Departure], pid: dict[Hashable, Hashable], sens: dict[Hashable, Hashable],
                  k: int, ell: int) -> Group:
    """Split departures into released and suppressed: a class (same nodes) below k distinct persons or l
    distinct values is suppressed whole."""
    classes: dict[bytes, list[Departure]] = {}
    suppressed: dict[int, str] = {}
    for d in deps:
        if d.nodes is None:
            suppressed[tid(d)] = d.reason or "suppressed"
        else:
            classes.setdefault(np.asarray(d.nodes, np.int64).tobytes(), []).append(d)
    kept: list[Departure] = []
    for members in classes.values():
        persons = {pid[d.tuple_id] for d in members}
        values = {sens[d.tuple_id] for d in members}
        if len(persons) < k or len(values) < ell:
            why = "class-below-k" if len(persons) < k else "class-below-l"
            suppressed.update({tid(d): why for d in members})
        else:
            kept.extend(members)
    return Group(kept, suppressed)


def build_release(schema: Schema, space: Space, frame: pd.DataFrame, group: Group, params: EngineParams,
                  diagnostics: dict[str, Any]) -> Release:
    """The release of ``group``: ``frame`` holds every departing report's data (index: pool ids); a
    class id per distinct generalisation, labels the smallest hierarchy nodes covering each class."""
    kept = sorted(group.kept, key=lambda d: tid(d))
    ids = [tid(d) for d in kept]
    batch = encode(frame.loc[ids], schema) if ids else None
    released = batch.frame.copy() if batch is not None else frame[schema.spec.used_columns()].iloc[:0].copy()
    nodes = np.stack([np.asarray(d.nodes, np.int64) for d in kept]) if kept else np.zeros((0, space.d, 2), np.int64)
    keys = [n.tobytes() for n in nodes]
    cls = np.array([sorted(set(keys)).index(x) for x in keys], dtype=np.int64)
    cost = np.zeros((len(ids), space.d))
    for a, name in enumerate(schema.qi_names):
        lv, code = nodes[:, a, 0], nodes[:, a, 1]
        labels = np.empty(len(ids), dtype=object)
        for level in np.unique(lv):
            at = lv == level
            labels[at] = space.labels[a][int(level)][code[at]]
        released[name] = labels
        cost[:, a] = space.cost[a, lv, code]
    sens = batch.sensitive_codes if batch is not None else None
    severity = None if batch is None or batch.severity is None or sens is None else batch.severity[sens]
    metrics = summarize(cost, np.asarray(space.weights), cls, len(group.suppressed), params.k, schema.qi_names,
                        severity)
    level = achieved(cls, sens, c=params.c, t_distance=params.t_distance)
    return Release(engine="castle", params=params.model_dump(), requirement=params.requirement(), rows=released,
                   class_ids=cls, suppressed=np.array(sorted(group.suppressed), dtype=np.int64), metrics=metrics,
                   privacy=level.as_dict(), diagnostics=diagnostics, runtime_s=0.0)


def reasons(group: Group) -> dict[str, int]:
    """Suppressions of a group by reason."""
    return dict(sorted(Counter(group.suppressed.values()).items()))
