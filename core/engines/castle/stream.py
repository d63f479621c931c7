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
(tau: mean loss of the last mu published clusters); else (c) its cluster is merged with the open
clusters that enlarge it least until it is valid, and leaves; else, if all open tuples together hold
fewer than k persons or l values, (d) it leaves through the cheapest covering published cluster whatever
its loss (suppression would cost more) or is suppressed, with a counted reason. Published clusters are
kept for reuse (the last ``omega_max``, Prink's zeta). :meth:`flush` ends the stream: every waiting
tuple expires, and a final merge also takes the open tuples that could not make a valid cluster alone.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Hashable, Iterable

import numpy as np

from core.engines.castle.kernels import join_one
from core.engines.castle.pool import Open, OpenPool, Published
from core.engines.castle.records import Departure, Settings, Waiting
from core.engines.castle.space import Space
from core.engines.castle.split import split_k, split_l


class CastleStream:
    """CASTLE over a :class:`Space`; deterministic given the ``rng``. State: :mod:`.state`."""

    def __init__(self, space: Space, settings: Settings, rng: np.random.Generator) -> None:
        self.space, self.s, self.rng = space, settings, rng
        self.pool = OpenPool(space)
        self.omega = Published(space, settings.omega_max)
        self.tuples: dict[Hashable, Waiting] = {}
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
        self.tuples[tuple_id] = Waiting(x, pid, sens, self.seq, time, slot)
        self.queue.append(tuple_id)
        c = self.pool.get(slot)
        if c.members:
            self.pool.enlarge(slot, x, x, np.zeros_like(x))
        c.members.append(tuple_id)
        self.pool.size[slot] += 1
        for counter, key in ((c.pids, pid), (c.sens, sens), (self.open_pids, pid), (self.open_sens, sens)):
            counter[key] += 1
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
        if j >= 0 and self.omega.loss[j] < self.tau and (not final or self._rest_valid_without(w)):
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
        chain, merged_loss = self._plan_merge(w.slot, final)
        if j >= 0 and self.omega.loss[j] <= merged_loss and not final:
            self._leave_via(tid, j, "reuse", out, "reuse:cheaper-than-merge")
            return
        self._merge(w.slot, chain)
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
        c = self.pool.get(w.slot)
        c.members.remove(tid)
        self.pool.size[w.slot] -= 1
        for counter, key in ((c.pids, w.pid), (c.sens, w.sens)):
            counter[key] -= 1
            if counter[key] == 0:
                del counter[key]
        self._uncount(w)
        if not c.members:
            self.pool.drop(w.slot)
        return w

    def _uncount(self, w: Waiting) -> None:
        for counter, key in ((self.open_pids, w.pid), (self.open_sens, w.sens)):
            counter[key] -= 1
            if counter[key] == 0:
                del counter[key]

    def _leave_via(self, tid: Hashable, j: int, how: str, out: list[Departure], why: str) -> None:
        w = self._remove(tid)
        self.stats[why] += 1
        out.append(Departure(tid, int(self.omega.ids[j]), self.omega.nodes(j), how, self.seq - w.arrival))

    def _plan_merge(self, slot: int, final: bool) -> tuple[list[int], float]:
        """The clusters the paper's merge_clusters would merge into ``slot``, in order, and the merged loss.

        Each step takes the open cluster that adds least loss over all tuples involved, (|C| + |C'|)
        IL(C u C') - |C'| IL(C') (the paper: IL(C u C') - IL(C), blind to sizes), until the cluster holds k
        persons and l values; at the end of the stream (``final``) also while the open tuples left outside
        could not be released on their own."""
        pool, c = self.pool, self.pool.get(slot)
        lo, hi, lvl = pool.lo[slot].copy(), pool.hi[slot].copy(), pool.lvl[slot].copy()
        size, loss = int(pool.size[slot]), float(pool.il[slot])
        pids, sens = Counter(c.pids), Counter(c.sens)
        chain: list[int] = []
        pool.active[slot] = False
        try:
            while not (len(pids) >= self.s.k and len(sens) >= self.s.l) or (final and self._rest_too_small(pids, sens)):
                cost = (size + pool.size) * pool.join_costs(lo, hi, lvl) - pool.size * pool.il
                best = cost.min()
                if not np.isfinite(best):
                    break
                j = pool.oldest(np.flatnonzero(cost <= best + 1e-12))
                chain.append(j)
                pool.active[j] = False
                join_one(lo, hi, lvl, pool.lo[j], pool.hi[j], pool.lvl[j], self.space.maps, self.space.ordered)
                loss = pool.loss_of(lo, hi, lvl)
                size += int(pool.size[j])
                pids.update(pool.get(j).pids)
                sens.update(pool.get(j).sens)
        finally:
            pool.active[slot] = True
            pool.active[chain] = True
        return chain, loss

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

    def _rest_too_small(self, pids: Counter, sens: Counter) -> bool:
        """Would the open tuples outside a cluster (its tuples per person ``pids`` and per value ``sens``)
        hold fewer than k persons or l values?"""
        rest = sum(1 for p, n in self.open_pids.items() if n > pids.get(p, 0))
        values = sum(1 for v, n in self.open_sens.items() if n > sens.get(v, 0))
        return rest > 0 and (rest < self.s.k or values < self.s.l)

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
