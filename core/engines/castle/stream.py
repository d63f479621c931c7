"""The CASTLE stream: feed tuples one by one (or in batches), get back the tuples leaving now.

Cao, Carminati, Ferrari and Tan, "CASTLE: Continuously Anonymizing Data Streams", IEEE TDSC 8(3), 2011
(ICDE 2008), with the choices of its Flink implementation Prink (ARES 2025) where the paper is loose.
Per arriving tuple (:meth:`CastleStream.push`):

1. *best selection*: the open cluster whose loss grows least when it takes the tuple; among those, one
   whose loss afterwards is at most tau joins it; else a new cluster is opened, unless beta clusters are
   open already, when the least-enlarged one takes it (lowest slot on ties: deterministic);
2. *delay*: every waiting tuple that has seen ``delta_tuples`` tuples arrive after it (or whose event time
   is ``delta_seconds`` behind the newest one) expires: :meth:`_expire`.

An expiring tuple leaves (a) with its whole cluster if that cluster holds >= k distinct persons and
>= l distinct sensitive values (split first when it holds >= 2k persons, :mod:`.split`); else (b) with
the generalisation of the cheapest published cluster that covers it, if that one's loss is below tau
(tau: mean loss of the last mu published clusters); else (c) its cluster takes in the nearest waiting
tuples until it is valid (:mod:`.merge`; whole clusters, the paper's merge, when that cannot work) and
leaves, unless a covering published cluster costs at most ``REUSE_OVER_MERGE`` times the merged loss,
when the tuple leaves through that one; else, if all open tuples together hold
fewer than k persons or l values, (d) it leaves through the cheapest covering published cluster whatever
its loss (suppression would cost more) or is suppressed, with a counted reason. Published clusters are
kept for reuse (the last ``omega_max``, Prink's zeta). :meth:`flush` ends the stream: every waiting
tuple expires, and a final merge also takes the open tuples that could not make a valid cluster alone.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Hashable, Iterable

import numpy as np

from core.engines.castle.merge import TupleTable, plan_clusters, plan_nearest, rest_too_small
from core.engines.castle.pool import Open, OpenPool, Published
from core.engines.castle.records import Departure, Settings, Waiting
from core.engines.castle.space import Space
from core.engines.castle.split import split_k, split_l

REUSE_OVER_MERGE = 2.0
"""An expiring tuple whose cluster is too small leaves through the cheapest published cluster covering it
when that one's loss is at most this many times the merged cluster's: the reuse moves one tuple, the merge
at least k (Adult, k=5, delta=5000: NCP 0.0660 at 1, 0.0618 at 2, 0.0625 at 3; docs/engines/castle.md)."""


class CastleStream:
    """CASTLE over a :class:`Space`; deterministic given the ``rng``. State: :mod:`.state`."""

    def __init__(self, space: Space, settings: Settings, rng: np.random.Generator) -> None:
        self.space, self.s, self.rng = space, settings, rng
        self.pool = OpenPool(space)
        self.omega = Published(space, settings.omega_max)
        self.tuples: dict[Hashable, Waiting] = {}
        self.table = TupleTable(space.d)
        self.queue: deque[Hashable] = deque()
        self.open_pids: Counter = Counter()
        self.open_sens: Counter = Counter()
        self.recent: deque[float] = deque(maxlen=settings.mu)
        self.seq = 0
        self.watermark: float | None = None
        self.next_cluster = 0
        self.stats: Counter = Counter()

    # ---- public API -------------------------------------------------------------------------------
    @property
    def tau(self) -> float:
        """Mean loss of the last mu published clusters (0 before the first)."""
        return sum(self.recent) / len(self.recent) if self.recent else 0.0

    def push(self, tuple_id: Hashable, leaves: np.ndarray, pid: Hashable, sens: Hashable = None,
             time: float | None = None) -> list[Departure]:
        """Add one tuple (leaf codes per QI, person id, sensitive value, event time in seconds); returns
        the tuples that leave now."""
        if tuple_id in self.tuples:
            raise ValueError("tuple id already waiting")
        self.seq += 1
        x = np.asarray(leaves, dtype=np.int32)
        if time is not None:
            self.watermark = time if self.watermark is None else max(self.watermark, time)
        slot = self._best_selection(x)
        if self.pool.get(slot).members:
            self.pool.enlarge(slot, x, x, np.zeros_like(x))
        self.admit(tuple_id, Waiting(x, pid, sens, self.seq, time, slot))
        out: list[Departure] = []
        self._expire(out, final=False)
        return out

    def push_many(self, rows: Iterable[tuple[Hashable, np.ndarray, Hashable, Hashable, float | None]]
                  ) -> list[Departure]:
        """:meth:`push` each ``(tuple_id, leaves, pid, sens, time)``; all departures in order."""
        return [d for row in rows for d in self.push(*row)]

    def tick(self, now: float) -> list[Departure]:
        """Advance event time to ``now`` (a worker's timer) and expire what waited ``delta_seconds``."""
        self.watermark = now if self.watermark is None else max(self.watermark, now)
        out: list[Departure] = []
        self._expire(out, final=False)
        return out

    def flush(self) -> list[Departure]:
        """End of stream: every waiting tuple leaves (or is suppressed), oldest first."""
        out: list[Departure] = []
        self._expire(out, final=True)
        return out

    def admit(self, tid: Hashable, w: Waiting) -> None:
        """Register a waiting tuple in its cluster ``w.slot`` (whose generalisation already covers it)."""
        self.tuples[tid] = w
        self.queue.append(tid)
        w.row = self.table.add(tid, w.leaves, w.pid, w.sens, w.arrival)
        c = self.pool.get(w.slot)
        c.members.append(tid)
        self.pool.size[w.slot] += 1
        for counter, key in ((c.pids, w.pid), (c.sens, w.sens), (self.open_pids, w.pid), (self.open_sens, w.sens)):
            counter[key] += 1

    # ---- clusters ---------------------------------------------------------------------------------
    def _best_selection(self, x: np.ndarray) -> int:
        n_open = self.pool.count
        if n_open:
            new = self.pool.join_costs(x, x, np.zeros_like(x))
            enl = new - self.pool.il
            at_min = enl <= enl.min() + 1e-12
            ok = np.flatnonzero(at_min & (new <= self.tau + 1e-12))
            if len(ok):
                return self.pool.oldest(ok)
            if self.s.beta is not None and n_open >= self.s.beta:
                return self.pool.oldest(np.flatnonzero(at_min))
        return self.pool.new(x)

    def _valid(self, c: Open) -> bool:
        return len(c.pids) >= self.s.k and len(c.sens) >= self.s.l

    # ---- delay ------------------------------------------------------------------------------------
    def _expired(self, w: Waiting) -> bool:
        if self.seq - w.arrival >= self.s.delta_tuples:
            return True
        return (self.s.delta_seconds is not None and w.time is not None and self.watermark is not None
                and self.watermark - w.time >= self.s.delta_seconds)

    def _expire(self, out: list[Departure], final: bool) -> None:
        while self.queue:
            tid = self.queue[0]
            w = self.tuples.get(tid)
            if w is None:  # left earlier with its cluster
                self.queue.popleft()
                continue
            if not final and not self._expired(w):
                return
            self._delay_constraint(tid, w, out, final)

    def _delay_constraint(self, tid: Hashable, w: Waiting, out: list[Departure], final: bool) -> None:
        c = self.pool.get(w.slot)
        if self._valid(c):
            self._output(w.slot, "cluster", out)
            return
        j = self.omega.best_cover(w.leaves) if self.s.reuse else -1
        reusable = j >= 0 and (not final or self._rest_valid_without(w))
        if reusable and self.omega.loss[j] < self.tau:
            self._leave_via(tid, j, "reuse", out, "reuse:below-tau")
            return
        if self.s.suppress_outliers:  # the paper: a cluster smaller than most open ones is an outlier
            sizes = [len(self.pool.get(i).pids) for i in self.pool.slots()]
            if sum(len(c.pids) < s for s in sizes) > len(sizes) / 2:
                self._last_resort(tid, "outlier", out)
                return
        if len(self.open_pids) < self.s.k or len(self.open_sens) < self.s.l:
            self._last_resort(tid, "too-few-waiting", out)
            return
        give_up = self.omega.loss[j] / REUSE_OVER_MERGE if reusable and not final else np.inf
        nearest = plan_nearest(self, w.slot, give_up)  # stops where the reuse below wins anyway
        if nearest is not None and final and rest_too_small(self, w.slot, nearest[0]):
            nearest = None  # the end of the stream: what stays out could not leave on its own
        chain, merged_loss = plan_clusters(self, w.slot, final) if nearest is None else ([], nearest[1])
        if reusable and self.omega.loss[j] <= REUSE_OVER_MERGE * merged_loss:
            self._leave_via(tid, j, "reuse", out, "reuse:cheaper-than-merge")
            return
        if nearest is None:
            self._merge(w.slot, chain)
        else:
            self._take(w.slot, nearest[0])
        if self._valid(self.pool.get(w.slot)):
            self._output(w.slot, "merge", out)
        else:  # cannot happen: all open tuples together are valid (checked above)
            self._last_resort(tid, "merge-failed", out)

    def _last_resort(self, tid: Hashable, reason: str, out: list[Departure]) -> None:
        """Leave through the cheapest covering published cluster whatever its loss, else suppressed."""
        j = self.omega.best_cover(self.tuples[tid].leaves) if self.s.reuse else -1
        if j >= 0:
            self._leave_via(tid, j, "reuse", out, "reuse:last-resort")
            return
        w = self._remove(tid)
        self.stats["suppressed:" + reason] += 1
        out.append(Departure(tid, -1, None, "suppressed", self.seq - w.arrival, reason))

    def _remove(self, tid: Hashable) -> Waiting:
        """Take one waiting tuple out of its open cluster (the cluster keeps its generalisation)."""
        w = self.tuples.pop(tid)
        self._detach(tid, w)
        self._uncount(w)
        return w

    def _detach(self, tid: Hashable, w: Waiting) -> None:
        """Take ``tid`` out of its open cluster's members and counts; drop the cluster when empty."""
        c = self.pool.get(w.slot)
        c.members.remove(tid)
        self.pool.size[w.slot] -= 1
        for counter, key in ((c.pids, w.pid), (c.sens, w.sens)):
            counter[key] -= 1
            if counter[key] == 0:
                del counter[key]
        if not c.members:
            self.pool.drop(w.slot)

    def _take(self, slot: int, tids: list[Hashable]) -> None:
        """Move the waiting tuples ``tids`` from their open clusters into ``slot`` (see :func:`plan_nearest`)."""
        c = self.pool.get(slot)
        for tid in tids:
            w = self.tuples[tid]
            self._detach(tid, w)
            self.pool.enlarge(slot, w.leaves, w.leaves, np.zeros_like(w.leaves))
            w.slot = slot
            c.members.append(tid)
            self.pool.size[slot] += 1
            c.pids[w.pid] += 1
            c.sens[w.sens] += 1
            self.stats["merged-tuples"] += 1

    def _uncount(self, w: Waiting) -> None:
        self.table.drop(w.row)
        for counter, key in ((self.open_pids, w.pid), (self.open_sens, w.sens)):
            counter[key] -= 1
            if counter[key] == 0:
                del counter[key]

    def _leave_via(self, tid: Hashable, j: int, how: str, out: list[Departure], why: str) -> None:
        w = self._remove(tid)
        self.stats[why] += 1
        out.append(Departure(tid, int(self.omega.ids[j]), self.omega.nodes(j), how, self.seq - w.arrival))

    def _merge(self, slot: int, chain: list[int]) -> None:
        """Merge the open clusters ``chain`` into ``slot``."""
        pool, c = self.pool, self.pool.get(slot)
        for j in chain:
            other = pool.get(j)
            pool.enlarge(slot, pool.lo[j], pool.hi[j], pool.lvl[j])
            for tid in other.members:
                self.tuples[tid].slot = slot
            c.members.extend(other.members)
            pool.size[slot] += pool.size[j]
            c.pids.update(other.pids)
            c.sens.update(other.sens)
            pool.drop(j)
            self.stats["merged-clusters"] += 1

    def _rest_valid_without(self, w: Waiting) -> bool:
        """Would the other open tuples (if any) still hold k persons and l values without ``w``?"""
        persons = len(self.open_pids) - (self.open_pids[w.pid] == 1)
        values = len(self.open_sens) - (self.open_sens[w.sens] == 1)
        return len(self.tuples) == 1 or (persons >= self.s.k and values >= self.s.l)

    def _parts(self, members: list[Hashable]) -> list[list[int]]:
        """Positions of ``members`` per sub-cluster: split (:mod:`.split`) when >= 2k persons."""
        first: dict[Hashable, int] = {}
        for i, tid in enumerate(members):
            first.setdefault(self.tuples[tid].pid, i)
        if len(first) < 2 * self.s.k:
            return [list(range(len(members)))]
        reps = list(first.values())
        leaves = np.stack([self.tuples[members[i]].leaves for i in reps])
        if self.s.l > 1:
            sens = [self.tuples[members[i]].sens for i in reps]
            groups = split_l(self.space, leaves, sens, self.s.k, self.s.l, self.rng)
        else:
            groups = split_k(self.space, leaves, self.s.k, self.rng)
        part_of = {self.tuples[members[reps[r]]].pid: g for g, grp in enumerate(groups) for r in grp}
        parts: list[list[int]] = [[] for _ in groups]
        for i, tid in enumerate(members):
            parts[part_of[self.tuples[tid].pid]].append(i)
        return parts

    def _output(self, slot: int, how: str, out: list[Departure]) -> None:
        """Release an open cluster (split first when large); publish each part for reuse."""
        members = list(self.pool.get(slot).members)
        parts = self._parts(members)
        if len(parts) > 1:
            how = "split" if how == "cluster" else how + "+split"
        for part in parts:
            tids = [members[i] for i in part]
            nodes = self.space.nodes(np.stack([self.tuples[t].leaves for t in tids]))
            cid, loss = self.next_cluster, self.space.node_loss(nodes)
            self.next_cluster += 1
            self.recent.append(loss)
            self.omega.add(cid, nodes, loss)
            self.stats["clusters-" + how] += 1
            for tid in tids:
                w = self.tuples.pop(tid)
                self._uncount(w)
                out.append(Departure(tid, cid, nodes, how, self.seq - w.arrival))
        self.pool.drop(slot)
