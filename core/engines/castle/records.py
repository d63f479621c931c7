"""The plain records of the CASTLE stream: its settings, a waiting tuple and a departing one."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Settings:
    """The algorithm's parameters (see :class:`core.engines.castle.engine.CastleParams`)."""

    k: int
    l: int = 1  # noqa: E741
    delta_tuples: int = 5000
    delta_seconds: float | None = None
    mu: int = 100
    beta: int | None = None
    omega_max: int = 10_000
    reuse: bool = True
    suppress_outliers: bool = False


@dataclass
class Departure:
    """A tuple leaving the stream: with ``nodes`` (d, 2: level and code per QI) and ``cluster`` id, or
    suppressed (``nodes`` None, ``cluster`` -1) for ``reason``. ``how``: cluster, split, merge(+split),
    reuse, last-resort or suppressed. ``latency``: tuples that arrived after it before it left."""

    tuple_id: Hashable
    cluster: int
    nodes: np.ndarray | None
    how: str
    latency: int
    reason: str = ""


@dataclass
class Waiting:
    """A tuple waiting in an open cluster (``slot``) since tuple number ``arrival``; ``row``: its row in the
    stream's :class:`~core.engines.castle.merge.TupleTable`."""

    leaves: np.ndarray
    pid: Hashable
    sens: Hashable
    arrival: int
    time: float | None
    slot: int
    row: int = -1
