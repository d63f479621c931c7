"""Release orchestration: close a window, sample, anonymize, verify, and write the ledger.

Steps for one window (publishing is :meth:`stream.worker.service.WorkerService.publish`):
1. claim the window (one worker at a time);
2. candidates: pending reports of the window plus those carried from earlier windows of its key;
3. linking guard, then sampling without replacement (seeded from the window id);
4. fewer eligible reports than ``min_release_rows`` (default 10 k; k for a window the operator flushed),
   or fewer released after suppression: the window is ``carried`` (its reports wait for the next window);
5. anonymize with the configured engine (default ``cg-diverse`` with k=5, distinct l=2 once registered);
6. verify independently with :func:`core.verify.verify_release` against the engine's requirement
   tightened by the operator's ``max_risk`` / ``avg_risk`` and the feed's ``l``; on failure the window is
   ``held`` (the reason says what to do: :func:`stream.worker.risk.hold_reason`), an alert is logged and
   audited, and nothing is published; the risk profile (:func:`core.risk.risk_profile`) goes into ``privacy.risk``;
7. write release + records + fingerprints + pool/window states in one transaction.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd

from core.columns import build_codebook, day_span, event_date_spans, event_days, release_columns, typed_columns
from core.encoding import Schema, encode
from core.engines.registry import get_engine
from core.engines.warmup import warm_up
from core.errors import AnonymizationError, InfeasibleError
from core.metrics.utility import publishable_utility, utility_paragraph
from core.verify import verify_release
from db import (
    Candidate,
    Database,
    LostClaim,
    PoolRepository,
    ReleaseConflict,
    ReleaseRepository,
    StoredRelease,
    WindowPolicy,
    deployment_id,
)
from db.batches import merge_completed
from db.models import Window, WindowState
from db.window_state import carry_duplicates, due_windows
from stream.config.settings import Settings, secret_value
from stream.ops.faults import crash_at
from stream.ops.logs import ctx
from stream.wire.manifest import build_manifest, release_counts
from stream.wire.records import checksum_encoded, clean_json, context_columns, context_values, dumps, record_messages
from stream.wire.rowhash import rows_digest
from stream.wire.signing import key_id, load_private_key, sign_manifest
from stream.worker.dpcounts import DpOutcome, check_counts, dp_counts
from stream.worker.engine_choice import resolve_engine
from stream.worker.link_guard import eligible, seen_counts
from stream.worker.risk import engine_params, hold_reason, policy_requirement, release_risk, warn_unenforced
from stream.worker.sampling import draw, order_seed, publish_order, release_id, sample_size, window_seed
from stream.worker.scheduling import carry_reason, schedule_due

log = logging.getLogger(__name__)
ALERT = logging.getLogger("anonstream.alert")
def window_policy(settings: Settings) -> WindowPolicy:
    return settings.windows  # its feed is the settings' feed


class Orchestrator:
    """Closes due windows and turns them into stored releases (thread-safe; DB is the only state)."""

    def __init__(self, settings: Settings, db: Database, schema: Schema, worker_id: str,
                 keep_encoded: bool = False, runs_engine: bool = True) -> None:
        """``keep_encoded``: keep each stored release's encoded messages for :meth:`take_encoded` (the
        worker publishes them right after storing; without it the publisher re-encodes from the ledger).
        ``runs_engine``: this process anonymizes windows, so the engine is imported now and the risk
        bounds it cannot enforce are logged now (a worker whose release processes run the engine passes
        False: it only claims, publishes and signs, and never loads numba or the engine)."""
        self.keep_encoded = keep_encoded
        self.settings, self.db, self.schema, self.worker = settings, db, schema, worker_id
        self.policy = window_policy(settings)
        self.pool = PoolRepository(db, self.policy)
        self.repo = ReleaseRepository(db)
        if runs_engine:  # import the engine (and its numeric libraries) at start-up, not in the first window
            warn_unenforced(settings, self.engine_name, get_engine(self.engine_name).models)
        spec = schema.spec
        self._encoded: dict[str, tuple[bytes, list[bytes]]] = {}  # stored, not yet published (this process)
        self._encoded_lock = threading.Lock()
        self.signer, self.deployment = load_private_key(secret_value(settings.signing_key), settings.data_dir,
                                                        settings.mode == "production"), deployment_id(db)
        self.context = context_columns(spec.publish_context, settings.windows.by)
        self.columns = ["class_id", *(c.name for c in release_columns(schema, self.context))]
        check_counts(schema, settings, db)  # counts that could not hold their guarantee stop the worker here

    @cached_property
    def engine_name(self) -> str:
        return resolve_engine(self.settings)

    def warm_up(self, rows: list[dict[str, Any]]) -> float | None:
        """Run the engine once on a few accepted reports, budgets cut (:func:`core.engines.warmup.warm_up`).

        The engines' numba kernels are loaded from their on-disk cache on first use (about a second
        for CG-Kanon), which would otherwise come out of the first window's anytime budget and
        latency. Nothing is stored, published or logged about the rows. Returns its seconds, or None
        when it was skipped."""
        started = time.perf_counter()
        try:
            engine = get_engine(self.engine_name)
            warm_up(engine, encode(pd.DataFrame(rows), self.schema), engine_params(self.settings, engine),
                    long_lived=True)
        except Exception as exc:  # a warm-up that fails (e.g. too few rows for k) changes nothing
            log.debug("engine warm-up skipped: %s", type(exc).__name__)
            return None
        elapsed = time.perf_counter() - started
        log.info("engine %s warmed up in %.2fs", self.engine_name, elapsed)
        return elapsed

    def hand_over(self, release_id: str, encoded: tuple[bytes, list[bytes]]) -> None:
        """Keep the encoded messages of a release another process stored for this one to publish."""
        with self._encoded_lock:
            self._encoded[release_id] = encoded

    def take_encoded(self, release_id: str) -> tuple[bytes, list[bytes]] | None:
        """The encoded manifest and record messages of a release this process just stored (once)."""
        with self._encoded_lock:
            return self._encoded.pop(release_id, None)

    def due(self, now: datetime) -> list[tuple[str, str]]:
        """Windows to close now (due or abandoned by a crashed closer), with why; too-small ones are carried
        in bulk, the others come in fair order (:mod:`.scheduling`)."""
        merge_completed(self.db, self.policy, now)  # the windows a completed push left (db/batches.py)
        due = due_windows(self.db, self.policy, self.policy.idle_timeout_s, now)
        ids = [(w, "due") for w in schedule_due(self.db, self.settings, self.worker, due, now)]
        return ids + [(w, "reclaimed") for w in self.repo.stale_closing(now, self.settings.claim_lease_s,
                                                                              self.settings.feed)]

    def close_due(self, now: datetime | None = None) -> list[str]:
        """Close every due window (and abandoned claims); returns the ids of releases stored."""
        now = now or datetime.now(UTC)
        stored = []
        for wid, why in self.due(now):
            rid = self.close_window(wid, why, now)
            if rid:
                stored.append(rid)
        return stored

    def close_window(self, window_id: str, why: str, now: datetime) -> str | None:
        """Claim the window and release it; None when another worker has it or nothing was released."""
        window = self.claim(window_id, why, now)
        return None if window is None else self.release_window(window, now)

    def claim(self, window_id: str, why: str, now: datetime) -> Window | None:
        """Claim a due window for this worker (None when another worker holds a live claim)."""
        return self.repo.claim_window(window_id, self.worker, now, self.settings.claim_lease_s, why)

    def release_window(self, window: Window, now: datetime,
                       on_verified: Callable[[], None] | None = None) -> str | None:
        """Sample, anonymize, verify and store a claimed window; returns the stored release id.

        ``on_verified`` is called once the release has passed verification, before the ledger write:
        the CPU-bound part is over (the worker frees the window's release slot then).
        """
        try:
            for _attempt in range(3):
                try:
                    return self._release(window, now, on_verified)
                except ReleaseConflict as exc:
                    log.warning("window %s: %s; recomputing", window.id, exc, extra=ctx(window=window.id))
            self._finish(window, WindowState.HELD, "kept conflicting with concurrent releases", now)
        except LostClaim:  # our lease ran out and another worker took the window over: it releases it
            log.warning("window %s: claim lost to another worker; leaving the window to it", window.id,
                        extra=ctx(window=window.id))
        return None

    def _eligible(self, cands: list[Candidate]) -> tuple[list[Candidate], list[int], dict[tuple[str, str], int]]:
        """The linking guard (:func:`stream.worker.link_guard.eligible`) with this worker's setting."""
        return eligible(self.repo, self.settings.privacy.link_guard, cands)

    def _release(self, window: Window, now: datetime, on_verified: Callable[[], None] | None = None) -> str | None:
        s = self.settings
        t0 = time.perf_counter()
        cands = self.repo.candidates(window)
        timings = {"candidates_s": time.perf_counter() - t0}  # per call: windows may close concurrently
        eligible, blocked, blocked_by = self._eligible(cands)
        if not eligible:
            self._finish(window, WindowState.EMPTY if not cands else WindowState.CARRIED, None, now)
            return None
        floor = s.privacy.k if window.flush else self.policy.release_floor(s.privacy.k)  # flush: the operator's
        if len(eligible) < floor:
            self._carry(window, len(eligible), floor, now)
            return None
        seed = window_seed(s.sample_seed, window.id)
        picks = draw(len(eligible), sample_size(len(eligible), s.sample_policy, s.sample_fraction, s.sample_max),
                     np.random.default_rng([seed, 0]))
        sample = [eligible[i] for i in picks]
        frame = pd.DataFrame([c.data for c in sample], index=pd.Index([c.pool_id for c in sample]))
        try:
            engine = get_engine(self.engine_name)
            params = engine_params(s, engine)
            batch = encode(frame, self.schema)
            t1 = time.perf_counter()
            crash_at("anonymize", s.fault_point)
            release = engine.anonymize(batch, params, np.random.default_rng([seed, 1]))
            timings["anonymize_s"] = time.perf_counter() - t1
        except InfeasibleError as exc:
            self._finish(window, WindowState.CARRIED, f"{exc.reason}: {exc.message}", now)
            log.info("window %s carried: %s", window.id, exc.reason, extra=ctx(window=window.id))
            return None
        except AnonymizationError as exc:
            self._hold(window, f"{exc.reason}: {exc.message}", now)
            return None
        if len(release.rows) < floor:  # suppression took it below the floor: wait for more reports
            self._carry(window, len(release.rows), floor, now)
            return None
        t2 = time.perf_counter()
        report = verify_release(frame, release, self.schema, policy_requirement(release.requirement, s))
        timings["verify_s"] = time.perf_counter() - t2
        if not report.ok:
            self._hold(window, hold_reason(report.failures, s, self.engine_name), now)
            return None
        t3 = time.perf_counter()
        rid = release_id(window.id, seed, release.digest() if release.diagnostics.get("budget_cap_hit") else "",
                         deployment=key_id(self.signer.public_key()) + self.deployment)
        risk = release_risk(self.schema, frame, release, len(sample) / len(eligible), s, ctx(rid, window.id))
        timings["risk_s"] = time.perf_counter() - t3
        if on_verified is not None:
            on_verified()
        dp = dp_counts(self.db, self.schema, sample, window, s.feed, s.fault_point, rid)  # budget before noise
        return self._store(window, rid, seed, cands, eligible, sample, blocked, frame, release, report, now, timings,
                           blocked_by, risk, dp)

    def _carry(self, window: Window, n: int, floor: int, now: datetime) -> None:
        self._finish(window, WindowState.CARRIED, reason := carry_reason(n, self.settings.privacy.k, floor), now)
        log.info("window %s carried: %s", window.id, reason.removeprefix("too small: "), extra=ctx(window=window.id))

    def _hold(self, window: Window, reason: str, now: datetime) -> None:
        ALERT.error("ALERT window %s held, nothing published: %s", window.id, reason, extra=ctx(window=window.id))
        self._finish(window, WindowState.HELD, reason, now)

    def _finish(self, window: Window, state: WindowState, reason: str | None, now: datetime) -> None:
        """Close a window without a release. Its reports stay pending (blocked ones too: they are counted
        as blocked in the manifest of the release that next considers them, never in no manifest), and
        its tally of duplicates moves to the key's next open window, whose manifest will count them."""
        self.repo.finish_window(window.id, state, reason, now, worker=self.worker)  # fenced by our claim
        if window.duplicates or window.dropped:
            carry_duplicates(self.db, window.id, window.key)

    def _store(self, window: Window, rid: str, seed: int, cands: list[Candidate], eligible: list[Candidate],
               sample: list[Candidate], blocked: list[int], frame: pd.DataFrame, release: Any, report: Any,
               now: datetime, timings: dict[str, float], blocked_by: dict[tuple[str, str], int],
               risk: dict[str, Any] | None = None, dp: DpOutcome | None = None) -> str | None:
        by_id = {c.pool_id: c for c in sample}
        rows_df = release.rows
        days = event_days([by_id[int(i)].event_time for i in rows_df.index])  # each released report's own day
        dates = event_date_spans(rows_df, days, self.schema, release.requirement.k)  # never the window's day
        table = typed_columns(rows_df, self.schema, context_values(self.context, window, dates))
        out = table.astype(object).where(table.notna(), None)
        class_ids = np.asarray(release.class_ids).astype(np.int64)
        rows = [[int(cid), *vals] for cid, vals in zip(class_ids, out.itertuples(index=False, name=None), strict=True)]
        rows = clean_json(publish_order(rows, order_seed(self.settings.key_bytes(), rid), lead=1))
        released_ids, suppressed_ids = [int(i) for i in rows_df.index], [int(i) for i in release.suppressed]
        encoded = [dumps(m) for m in record_messages(rid, self.columns, rows)]  # seq order
        stations = sorted({by_id[i].station_id for i in released_ids})
        sampled = {c.pool_id for c in sample}
        held_back = [c.pool_id for c in eligible if c.pool_id not in sampled]
        key_dups, key_dropped = self.repo.key_tallies(window.key)
        counts = release_counts(len(cands), len(released_ids), len(suppressed_ids), len(held_back),
                                len(blocked), int(window.duplicates or 0) + key_dups, blocked_by,
                                carried_in=sum(1 for c in cands if c.counted_in is not None),
                                dropped_missing=int(window.dropped or 0) + key_dropped)
        k_ach = int(report.k)
        l_ach = report.l_distinct
        metrics = clean_json(release.metrics)
        loss = metrics.get("gcp", metrics.get("loss_metric"))
        utility = publishable_utility(self.schema, frame, rows_df, k=k_ach)  # figures safe to publish, or why none
        manifest = build_manifest(
            rid, window, day_span(days), stations, release, seed, sample_policy=self.settings.sample_policy,
            link_guard=self.settings.privacy.link_guard, deployment=self.deployment,
            k=k_ach, l=l_ach, risk=risk, metrics=metrics, counts=counts, records=len(rows), columns=self.columns,
            checksum=checksum_encoded(encoded), utility=utility, dp=dp.section if dp else None, codebook=build_codebook(
                self.schema, table, suppressed=len(suppressed_ids), context=self.context,
                utility=utility_paragraph(utility)))
        manifest["rows"] = rows_digest(self.columns, rows)  # per-row hashes over the values (stream.wire.rowhash)
        manifest = sign_manifest(manifest, self.signer)
        stored = StoredRelease(
            id=rid, window_id=window.id, window_key=window.key, stations=stations, engine=release.engine,
            params=clean_json(release.params), seed=seed, k_achieved=k_ach, l_achieved=l_ach,
            information_loss=loss if isinstance(loss, float | int) else None, metrics=metrics,
            verification=clean_json({**report.as_dict(), "timings": {n: round(v, 3) for n, v in timings.items()}}),
            counts=counts, checksum=manifest["checksum"], manifest=manifest, columns=self.columns, rows=rows,
            released_ids=released_ids, suppressed_ids=suppressed_ids, blocked_ids=blocked, held_back_ids=held_back,
            key_duplicates=key_dups, key_dropped=key_dropped,
            fingerprints=[(by_id[i].fingerprint, by_id[i].person_fp) for i in released_ids],
            content_fps=[by_id[i].content_fp for i in released_ids], blocked_by=blocked_by,
            content_seen=seen_counts(sample), budget=dp.charge if dp else None)
        t3 = time.perf_counter()
        if not self.repo.store(stored, self.worker, now, self.settings.claim_lease_s):
            log.warning("release %s was stored before (window %s); its publisher publishes it", rid, window.id,
                        extra=ctx(rid, window.id))
            return None
        if self.keep_encoded:
            with self._encoded_lock:
                self._encoded[rid] = (dumps(manifest), encoded)
        log.info("release %s stored: window %s, %d released, %d suppressed, k=%d; %s, store %.2fs", rid, window.id,
                 counts["released"], counts["suppressed"], k_ach,
                 ", ".join(f"{k} {v:.2f}s" for k, v in timings.items()), time.perf_counter() - t3,
                 extra=ctx(rid, window.id))
        return rid
