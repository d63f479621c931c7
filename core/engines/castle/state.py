"""What a worker persists to resume a CASTLE stream: :class:`CastleState`, a plain dataclass.

:func:`snapshot` reads it off a running :class:`~core.engines.castle.stream.CastleStream`; :func:`restore`
builds an equal stream from it (the same departures follow for the same input). Leaf codes refer to the
:class:`~core.engines.castle.space.Space` the stream was built on: a worker must rebuild the same space
(same spec, a leaf domain that does not depend on the data seen) before restoring. The state is
JSON-ready when tuple ids, person ids and sensitive values are ``str`` or ``int``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from core.engines.castle.records import Settings, Waiting
from core.engines.castle.space import Space
from core.engines.castle.stream import CastleStream


@dataclass
class CastleState:
    """A CASTLE stream's state.

    * ``settings``: the algorithm's parameters (:class:`~core.engines.castle.records.Settings` as a dict);
    * ``seq``: tuples pushed so far; ``watermark``: newest event time seen (seconds) or None;
      ``next_cluster``: the next cluster id; ``opened``: open clusters created so far (their ``born``
      order breaks ties); ``stats``: the counters (departures by how, suppressions by
      reason, merges);
    * ``recent_losses``: losses of the last mu published clusters (tau is their mean);
    * ``waiting``: the waiting tuples in arrival order: ``id``, ``leaves`` (leaf code per QI), ``pid``,
      ``sens``, ``arrival`` (its ``seq``), ``time`` and ``cluster`` (index into ``clusters``);
    * ``clusters``: the open clusters: ``lo``, ``hi``, ``lvl`` per QI (see :mod:`.space`), ``loss``, ``born``;
    * ``published``: the clusters kept for reuse, oldest first: ``id``, ``levels``, ``codes``, ``loss``;
    * ``rng``: the generator's ``bit_generator.state``.
    """

    settings: dict[str, Any]
    seq: int = 0
    watermark: float | None = None
    next_cluster: int = 0
    opened: int = 0
    stats: dict[str, int] = field(default_factory=dict)
    recent_losses: list[float] = field(default_factory=list)
    waiting: list[dict[str, Any]] = field(default_factory=list)
    clusters: list[dict[str, Any]] = field(default_factory=list)
    published: list[dict[str, Any]] = field(default_factory=list)
    rng: dict[str, Any] = field(default_factory=dict)


def _plain(v: Any) -> Any:
    return v.item() if isinstance(v, np.generic) else v


def snapshot(stream: CastleStream) -> CastleState:
    pool = stream.pool
    slots = pool.slots()
    index = {slot: i for i, slot in enumerate(slots)}
    clusters = [{"lo": pool.lo[s].tolist(), "hi": pool.hi[s].tolist(), "lvl": pool.lvl[s].tolist(),
                 "loss": float(pool.il[s]), "born": int(pool.born[s])} for s in slots]
    waiting = [{"id": _plain(tid), "leaves": w.leaves.tolist(), "pid": _plain(w.pid), "sens": _plain(w.sens),
                "arrival": w.arrival, "time": w.time, "cluster": index[w.slot]}
               for tid in stream.queue if (w := stream.tuples.get(tid)) is not None]
    om = stream.omega
    n = min(om.count, om.size)
    order = [(om.count - n + i) % om.size for i in range(n)] if om.size > 0 else []
    published = [{"id": int(om.ids[j]), "levels": om.lvl[j].tolist(), "codes": om.code[j].tolist(),
                  "loss": float(om.loss[j])} for j in order]
    return CastleState(settings=asdict(stream.s), seq=stream.seq, watermark=stream.watermark,
                       next_cluster=stream.next_cluster, opened=pool.created, stats=dict(stream.stats),
                       recent_losses=list(stream.recent), waiting=waiting, clusters=clusters, published=published,
                       rng=dict(stream.rng.bit_generator.state))


def restore(state: CastleState, space: Space, rng: np.random.Generator) -> CastleStream:
    """A stream equal to the one ``state`` was taken from (``rng`` is set to the saved state)."""
    stream = CastleStream(space, Settings(**state.settings), rng)
    if state.rng:
        rng.bit_generator.state = state.rng
    pool = stream.pool
    slots = []
    for cl in state.clusters:
        slot = pool.new(np.asarray(cl["lo"], np.int32))
        pool.hi[slot], pool.lvl[slot], pool.il[slot], pool.born[slot] = cl["hi"], cl["lvl"], cl["loss"], cl["born"]
        slots.append(slot)
    for t in state.waiting:
        slot = slots[t["cluster"]]
        stream.admit(t["id"], Waiting(np.asarray(t["leaves"], np.int32), t["pid"], t["sens"], t["arrival"],
                                      t["time"], slot))
    for p in state.published:
        stream.omega.add(p["id"], np.stack([p["levels"], p["codes"]], axis=1), p["loss"])
    stream.recent.extend(state.recent_losses)
    stream.seq, stream.watermark, stream.next_cluster = state.seq, state.watermark, state.next_cluster
    stream.stats.update(state.stats)
    pool.created = state.opened
    return stream
