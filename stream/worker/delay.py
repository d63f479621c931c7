"""Delay-bounded releases (``ANONSTREAM_DELAY__ENABLED``): a CASTLE stream per window key instead of windows.

Per tick and per key this worker owns (its owner window claimed, :mod:`db.castle_states`):

1. restore the key's saved CASTLE state (:func:`core.engines.castle.state.restore`) over stable leaf codes
   (:mod:`.delay_space`);
2. read the key's pending reports not yet in the stream; the linking guard (:mod:`.link_guard`) runs on them
   *before* they enter, with the reports waiting in the stream counted as released (they leave released or
   suppressed), so a re-send is blocked even while its original waits; blocked reports are counted in the
   next release's manifest;
3. push the others in arrival order (person: the person fingerprint, else the report's), then advance event
   time: the newest report's, moving on with the wall clock since the key's last input, so every report
   leaves within ``delay.seconds`` of event time and ``delay.tuples`` reports of its key;
4. the departing reports are checked class by class (:mod:`.delay_release`), verified, and stored like a
   window's release (ledger fingerprints, signed manifest, output topics) under a window of their own, in the
   same transaction as the new state. A step with input and no departure saves the state alone.

Differentially private counts are refused in delay mode at start-up (:func:`stream.config.dp.check_dp_settings`):
a release of a few departing reports declares no block its counts could be charged to without reading the
protected rows. So are l other than distinct, t-closeness and QIs without stable leaf codes
(:func:`.delay_space.check_delay`).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections import Counter
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy.orm import Session

from core.encoding import Schema
from core.engines.castle.state import CastleState, restore, snapshot
from core.engines.castle.stream import CastleStream
from core.engines.registry import get_engine
from core.verify import verify_release
from db import Candidate, Database, LostClaim, ReleaseRepository, StoredRelease
from db.castle_states import EPOCH, CastleLedger, group_id, owner_id
from db.models import Window
from stream.config.settings import Settings
from stream.ops.logs import ctx
from stream.wire.signing import key_id
from stream.worker.delay_release import build_release, check_classes, reasons, tid
from stream.worker.delay_space import LeafCoder, check_delay
from stream.worker.link_guard import Occurrence, _arrival, _cohort, eligible, occurrences_blocked
from stream.worker.release import Orchestrator
from stream.worker.risk import engine_params, hold_reason, policy_requirement, release_risk
from stream.worker.sampling import release_id, window_seed

log = logging.getLogger(__name__)


class _StoreWithin(ReleaseRepository):
    """The release repository, storing with the delay step's transaction hook."""

    hook: Any = None

    def store(self, rel: StoredRelease, worker: str, now: datetime, lease_s: float = 10.0, fenced: bool = True,
              within: Any = None) -> bool:
        return super().store(rel, worker, now, lease_s, fenced, within or self.hook)


class DelayRunner:
    """The delay mode of one feed's worker (thread-safe per key: one tick at a time)."""

    def __init__(self, settings: Settings, db: Database, schema: Schema, worker: str,
                 owned: set[str] | None = None) -> None:
        """``owned``: the set of window ids the worker's lease keeper renews (the owner windows go in)."""
        check_delay(settings, schema)
        self.settings, self.db, self.schema, self.worker = settings, db, schema, worker
        self.orch = Orchestrator(settings.with_updates(engine="castle"), db, schema, worker, runs_engine=False)
        self.repo = self.orch.repo = _StoreWithin(db)
        self.ledger = CastleLedger(db, settings.feed)
        self.owned = owned if owned is not None else set()
        engine = get_engine("castle")
        d = settings.delay
        self.params = engine_params(settings, engine).model_copy(update={
            "delta_tuples": d.tuples, "delta_seconds": d.seconds, "mu": d.mu, "reuse": False,
            "max_suppression": 1.0})  # suppressions are counted by reason in the manifest, never refused

    def tick(self, now: datetime | None = None) -> list[str]:
        """One step of every key this worker owns or can claim; returns the releases stored."""
        now = now or datetime.now(UTC)
        stored = []
        for key in sorted(set(self.ledger.keys()) | {k for k in self._keys_owned()}):
            if owner_id(key) not in self.owned:
                self.ledger.ensure_owner(key, now)
                if self.repo.claim_window(owner_id(key), self.worker, now, self.settings.claim_lease_s,
                                          "delay") is None:
                    continue
                self.owned.add(owner_id(key))
            try:
                rid = self.step(key, now)
            except LostClaim as exc:
                log.warning("delay key %s: %s; leaving it to its new owner", key, exc, extra=ctx(window=owner_id(key)))
                self.owned.discard(owner_id(key))
                continue
            if rid:
                stored.append(rid)
        return stored

    def _keys_owned(self) -> list[str]:
        return [w.removeprefix("castle:") for w in self.owned if w.startswith("castle:")]

    # --- one key -----------------------------------------------------------------------------------
    def step(self, key: str, now: datetime) -> str | None:
        saved, version = self.ledger.load(key)
        mine = saved or {"n": 0, "values": {}, "blocked": {}, "arrived": {}, "persons": {}, "input": None}
        coder = LeafCoder(self.schema, mine["values"])
        waiting = {int(t["id"]) for t in saved["castle"]["waiting"]} if saved else set()
        blocked: dict[str, list[str]] = mine["blocked"]
        n_blocked = len(blocked)
        ended = self.ledger.batch_end(key)  # read before the pool: a push's reports are in before its end
        pool = self.ledger.pending(key, set())
        fresh = [c for c in pool if c.pool_id not in waiting and str(c.pool_id) not in blocked]
        ok = self._guard(fresh, [c for c in pool if c.pool_id in waiting], blocked)
        leaves = coder.codes([c.data for c in ok])
        rng = np.random.default_rng([window_seed(self.settings.sample_seed, owner_id(key)), mine["n"]])
        stream = (restore(CastleState(**saved["castle"]), coder.space(), rng) if saved
                  else CastleStream(coder.space(), self.params.settings(), rng))  # type: ignore[attr-defined]
        sens_col, deps, clock = self.schema.sensitive, [], mine["arrived"]
        before: dict[int, float] = {}  # event clock before the step each departure left in
        for c, x in zip(ok, leaves, strict=True):
            t = c.event_time.timestamp() if c.event_time else None
            wm = stream.watermark
            clock[str(c.pool_id)] = max(t or 0.0, wm if wm is not None else -np.inf)
            mine["persons"][str(c.pool_id)] = c.person_fp or c.fingerprint
            for d in stream.push(c.pool_id, x, c.person_fp or c.fingerprint,
                                 str(c.data.get(sens_col, "")).strip() if sens_col else None, t):
                deps.append(d)
                before[tid(d)] = wm if wm is not None else -np.inf
        if ok:
            mine["input"] = [stream.watermark, now.timestamp()]
        if mine["input"] is not None and stream.watermark is not None:
            wm = stream.watermark
            for d in stream.tick(mine["input"][0] + max(now.timestamp() - mine["input"][1], 0.0)):
                deps.append(d)
                before[tid(d)] = wm
        if ended is not None and ended > mine.get("flushed", 0.0) and stream.tuples:  # the push is complete:
            wm = stream.watermark  # its reports need not wait for later ones (they leave earlier, never later)
            for d in stream.flush():
                deps.append(d)
                before[tid(d)] = wm if wm is not None else -np.inf
        if ended is not None and ended > mine.get("flushed", 0.0):
            mine["flushed"] = ended
        mine["values"] = coder.values
        if not deps and not ok and len(blocked) == n_blocked and saved is not None:
            return None
        mine["castle"] = dataclasses.asdict(snapshot(stream))
        if not deps:  # blocked reports wait for the next release's manifest
            self.ledger.save(key, self.worker, mine, version, now)
            return None
        return self._release(key, now, mine, version, pool, deps, before, coder, stream)

    def _guard(self, fresh: list[Candidate], waiting: list[Candidate], blocked: dict[str, list[str]]
               ) -> list[Candidate]:
        """The linking guard over the ledger, then the content rule again with the waiting reports counted as
        released; the blocked go into ``blocked`` (pool id -> [station, rule])."""
        ok, out, _by = eligible(self.repo, self.settings.privacy.link_guard, fresh)
        for c in fresh:
            if c.pool_id in out:
                blocked[str(c.pool_id)] = [c.station_id, self._rule(c)]
        if self.settings.privacy.link_guard in ("content", "person") and waiting:
            held = Counter(w.content_fp for w in waiting if w.content_fp)
            fps = sorted({c.content_fp for c in ok if c.content_fp})
            sib: Counter[tuple[str, str]] = Counter()
            for w in waiting:
                if w.content_fp:
                    sib[(_cohort(w.station_id, _arrival(w)), w.content_fp)] += 1
            for (arrived, station, cfp), n in self.repo.released_in_cohorts(sorted({_arrival(c) for c in ok}),
                                                                            fps).items():
                sib[(_cohort(station, arrived), cfp)] += n
            counts = {cfp: held[cfp] + self.repo.released_content_counts([cfp]).get(cfp, 0) for cfp in fps}
            again = occurrences_blocked([Occurrence(_cohort(c.station_id, _arrival(c)), c.content_fp, c.fingerprint)
                                         for c in ok], counts, dict(sib))
            for i in sorted(again):
                blocked[str(ok[i].pool_id)] = [ok[i].station_id, "content"]
            ok = [c for i, c in enumerate(ok) if i not in again]
        return [dataclasses.replace(c, content_seen=None) for c in ok]

    def _rule(self, c: Candidate) -> str:
        if self.repo.released_reports([c.fingerprint]):
            return "report"
        if c.content_fp and self.settings.privacy.link_guard in ("content", "person") and (
                self.repo.released_content_counts([c.content_fp])):
            return "content"
        return "person"

    def _release(self, key: str, now: datetime, mine: dict[str, Any], version: int, pool: list[Candidate],
                 deps: list[Any], before: dict[int, float], coder: LeafCoder, stream: CastleStream) -> str | None:
        s, by_id = self.settings, {c.pool_id: c for c in pool}
        persons, sens_col = mine["persons"], self.schema.sensitive
        departed = [by_id[tid(d)] for d in deps]
        group = check_classes(deps, {d.tuple_id: persons[str(d.tuple_id)] for d in deps},
                              {d.tuple_id: str(by_id[tid(d)].data.get(str(sens_col), "")) for d in deps},
                              s.privacy.k, max(s.privacy.l or 1, 1))
        lat_s = [before[tid(d)] - mine["arrived"][str(d.tuple_id)] for d in deps]
        diag = {"delay": {"delta_tuples": s.delay.tuples, "delta_seconds": s.delay.seconds,
                          "latency_tuples_max": max((d.latency for d in deps), default=0),
                          "latency_seconds_max": round(max([x for x in lat_s if np.isfinite(x)], default=0.0), 3),
                          "departures": dict(sorted(Counter(d.how for d in deps).items())),
                          "suppressed": reasons(group)}}
        frame = pd.DataFrame([c.data for c in departed], index=pd.Index([c.pool_id for c in departed]))
        release = build_release(self.schema, coder.space(), frame, group, self.params, diag)
        report = verify_release(frame, release, self.schema, policy_requirement(release.requirement, s))
        if not report.ok:  # never expected after the class check: the group is suppressed, counted, not late
            log.error("ALERT delay key %s: departures failed verification, suppressed: %s", key,
                      hold_reason(report.failures, s, "castle"), extra=ctx(window=owner_id(key)))
            group.suppressed.update({tid(d): "verification-failed" for d in group.kept})
            group.kept = []
            diag["delay"]["suppressed"] = reasons(group)
            release = build_release(self.schema, coder.space(), frame, group, self.params, diag)
            report = verify_release(frame, release, self.schema, policy_requirement(release.requirement, s))
        n = mine["n"] + 1
        blocked_ids = sorted(int(i) for i in mine["blocked"])
        blocked_by = dict(Counter((st, rule) for st, rule in mine["blocked"].values()))
        for d in deps:
            for part in ("arrived", "persons"):
                mine[part].pop(str(d.tuple_id), None)
        mine.update(n=n, blocked={})
        window = Window(id=group_id(key, n), key=key, start=EPOCH, end=EPOCH, seq=n, close_reason="delay",
                        duplicates=0, dropped=0, feed=s.feed)
        seed = window_seed(s.sample_seed, window.id)
        rid = release_id(window.id, seed, "", deployment=key_id(self.orch.signer.public_key()) + self.orch.deployment)
        risk = release_risk(self.schema, frame, release, 1.0, s, ctx(rid, window.id))
        cands = departed + [by_id[i] for i in blocked_ids if i in by_id]

        def within(session: Session) -> None:
            self.ledger.open_group(session, key, n, self.worker, now)
            self.ledger.write(session, key, self.worker, mine, version, now)

        self.repo.hook = within
        try:
            t0 = time.perf_counter()
            return self.orch._store(window, rid, seed, cands, departed, departed, blocked_ids, frame, release,
                                    report, now, {"delay_s": time.perf_counter() - t0}, blocked_by, risk, None)
        finally:
            self.repo.hook = None

