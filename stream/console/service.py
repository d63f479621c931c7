"""What the console shows and does, independent of HTTP: used by the web app and by the CLI.

Every method returns JSON-able dicts built from aggregates. Blocking (database, broker); the web
app calls it in worker threads. Broker look-ups run with a deadline (``broker_timeout_s``) so a
missing broker degrades the health page to an error line instead of hanging it; the consumer lag
is cached for ``lag_cache_s`` seconds.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from core.canonical import station_id
from db import console_queries as q
from db.feeds import feed_names, feed_of_release, feed_summary
from db.session import Database
from stream.config.settings import Settings
from stream.console import controls
from stream.console.control_service import ConsoleControls
from stream.console.health import BrokerHealth
from stream.console.redact import scrub
from stream.console.release_warnings import classify
from stream.console.verdict import verdict

log = logging.getLogger(__name__)
PLOTS = ("class-sizes", "offences", "risk", "utility", "loss", "front")
FRONT_ENGINES = ("pbg-ea",)


def parse_when(text: str | None, end_of_day: bool = False) -> datetime | None:
    """``YYYY-MM-DD`` (a whole UTC day; ``end_of_day`` gives the next midnight) or an ISO time."""
    if text is None or not str(text).strip():
        return None
    t = str(text).strip()
    try:
        if len(t) == 10:
            day = datetime.fromisoformat(t).replace(tzinfo=UTC)
            return day + timedelta(days=1) if end_of_day else day
        when = datetime.fromisoformat(t.replace("Z", "+00:00"))
        return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)
    except (ValueError, OverflowError):  # not a date, or at the edge of the calendar (9999-12-31, 0001-01-01+05:00)
        raise controls.ControlError(f"'{t[:40]}' is not a date (YYYY-MM-DD) or an ISO-8601 time in range",
                                    400) from None


class ConsoleService(BrokerHealth, ConsoleControls):
    def __init__(self, settings: Settings, db: Database | None = None, *,
                 status_provider: Callable[[], dict[str, Any]] | None = None,
                 broker_timeout_s: float = 8.0, lag_cache_s: float = 5.0) -> None:
        self.settings = settings
        self.db = db or Database(settings.db_url())
        self.status_provider = status_provider
        self.broker_timeout_s = broker_timeout_s
        self.lag_cache_s = lag_cache_s
        self._schema: Any = None
        self._schema_loaded = False
        self._feed_schemas: dict[str, Any] = {}  # spec -> schema of the other feeds' releases
        self._lag: tuple[float, dict[str, Any]] | None = None
        self._fronts: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._lock = threading.Lock()

    def _read(self) -> Any:
        """A read-only unit when the database offers one (SQLite: no write lock), else a plain unit."""
        read = getattr(self.db, "read", None)
        return read() if callable(read) else self.db.unit()

    # --- spec ----------------------------------------------------------------------------------------
    @property
    def schema(self) -> Any:
        if not self._schema_loaded:
            try:
                from stream.io.specs import load_schema

                self._schema = load_schema(self.settings.spec)
            except Exception as exc:  # the console still works from the stored columns
                log.warning("console: spec %s not loadable (%s); using stored columns", self.settings.spec,
                            type(exc).__name__)
                self._schema = None
            self._schema_loaded = True
        return self._schema

    def _feed_of(self, release_id: str) -> Settings:
        """The settings of the feed a release belongs to (several feeds: stream/config/feeds.py)."""
        if self.settings.pipelines is None:
            return self.settings
        from stream.config.feeds import feeds

        with self._read() as s:
            name = feed_of_release(s, release_id)
        return next((f for f in feeds(self.settings) if f.feed == name), self.settings)

    def _schema_of(self, release_id: str) -> Any:
        """The spec of the release's feed (the console's own when it is the same)."""
        spec = self._feed_of(release_id).spec
        if spec == self.settings.spec:
            return self.schema
        with self._lock:
            if spec not in self._feed_schemas:
                from stream.io.specs import load_schema

                try:
                    self._feed_schemas[spec] = load_schema(spec)
                except Exception as exc:  # the console still works from the stored columns
                    log.warning("console: spec %s not loadable (%s)", spec, type(exc).__name__)
                    self._feed_schemas[spec] = None
            return self._feed_schemas[spec]

    def _spec_info(self, schema: Any = None) -> tuple[list[str] | None, str | None, dict[str, float] | None]:
        schema = schema if schema is not None else self.schema
        if schema is None:
            return None, None, None
        spec = schema.spec
        sens = spec.sensitive
        return list(spec.qi_names), (sens.name if sens else None), (dict(sens.severity) if sens and sens.severity
                                                                    else None)

    def scrub_words(self) -> set[str]:
        words = {"report_id", "station_id", "event_time", "class_id", "offence", "k", "l"}
        if self.schema is not None:
            spec = self.schema.spec
            words.update(spec.used_columns())
            words.update(c for c in (spec.id_column, spec.station_column, spec.time_column) if c)
        try:
            from core.engines.registry import engine_names

            words.update(engine_names())
        except ImportError:  # pragma: no cover - the registry is part of the core
            pass
        return words

    # --- releases ------------------------------------------------------------------------------------
    def releases(self, f: q.ReleaseFilter) -> dict[str, Any]:
        """The releases list; a station filter matches by canonical id (``08`` finds station ``8``)."""
        if f.station:
            f = dataclasses.replace(f, station=station_id(f.station))
        with self._read() as s:
            rows, total = q.list_releases(s, f)
            stations = q.known_stations(s)
            feeds = feed_names(s)
            manifests = q.release_manifests(s, [r["id"] for r in rows])
        for r in rows:  # the "act" warnings of each release (stream/console/release_warnings.py), in words
            r["act"] = "; ".join(w["text"] for w in classify(manifests.get(r["id"])) if w["kind"] == "act")
        return {"releases": rows, "total": total, "stations": stations, "feeds": feeds,
                "filter": {"station": f.station, "since": f.since.isoformat() if f.since else None,
                           "until": f.until.isoformat() if f.until else None, "engine": f.engine, "feed": f.feed,
                           "limit": f.limit, "offset": f.offset}}

    def release(self, release_id: str) -> dict[str, Any] | None:
        with self._read() as s:
            detail = q.release_detail(s, release_id)
            recs = q.release_records(s, release_id) if detail else None
        if detail is None:
            return None
        from stream.console import analysis  # numpy, pandas: loaded by the first release page, not by `status`
        qis, sens, severity = self._spec_info(self._schema_of(release_id))
        columns, rows = recs if recs else ([], [])
        detail["analysis"] = analysis.analyse(columns, rows, qis, sens, severity) if columns else None
        detail["per_attribute_loss"] = analysis.per_attribute_loss(detail.get("metrics"))
        detail["warnings"] = classify(detail.get("manifest"))
        detail["has_front"] = detail["engine"] in FRONT_ENGINES or analysis.stored_front(
            detail.get("manifest"), detail.get("metrics")) is not None
        detail["plots"] = {p: f"/releases/{release_id}/plots/{p}.svg" for p in PLOTS
                           if p != "front" or detail["has_front"]}
        for a in detail["audit"]:
            a["detail"] = self._scrub_detail(a.get("detail"))
        return detail

    def front(self, release_id: str) -> dict[str, Any] | None:
        """The stored PBG-EA front, else one recomputed from the release's sample (cached)."""
        from stream.console import analysis
        from stream.console.front import front_points, recompute_front  # engines: on the first front asked
        with self._lock:
            if release_id in self._fronts:
                return self._fronts[release_id]
        with self._read() as s:
            detail = q.release_detail(s, release_id)
            if detail is None:
                return None
            stored = analysis.stored_front(detail.get("manifest"), detail.get("metrics"))
            sample = q.release_sample(s, release_id) if stored is None and detail["engine"] in FRONT_ENGINES else []
        if stored is not None:
            out = stored
        elif detail["engine"] not in FRONT_ENGINES:
            out = {"front": [], "source": "none", "note": f"engine {detail['engine']} has no front"}
        elif (schema := self._schema_of(release_id)) is None:
            out = {"front": [], "source": "unavailable", "note": "the dataset spec could not be loaded"}
        else:
            out = recompute_front(schema, sample, detail["engine"], detail["params"], int(detail["seed"]),
                                  detail.get("k"))
        out["points"] = front_points(out)
        with self._lock:
            self._fronts[release_id] = out
            while len(self._fronts) > 32:
                self._fronts.popitem(last=False)
        return out

    def plot(self, release_id: str, kind: str) -> str | None:
        if kind not in PLOTS:
            return None
        from stream.console import plots  # matplotlib: loaded by the first plot, not by `status` or a page
        if kind == "front":
            fr = self.front(release_id)
            if fr is None:
                return None
            note = ("recomputed from the stored sample and seed" if fr.get("source") == "recomputed"
                    else fr.get("note"))
            return plots.front_svg(fr["points"], note)
        detail = self.release(release_id)
        if detail is None:
            return None
        an = detail.get("analysis") or {}
        if kind == "class-sizes":
            return plots.class_sizes_svg(an.get("class_sizes") or {}, (detail.get("params") or {}).get("k"))
        if kind == "offences":
            return plots.offences_svg(an.get("offences") or [])
        if kind == "risk":
            return plots.risk_svg(((detail.get("manifest") or {}).get("privacy") or {}).get("risk"))
        if kind == "utility":
            return plots.utility_svg((detail.get("manifest") or {}).get("utility"))
        return plots.loss_svg(detail["per_attribute_loss"])

    # --- health --------------------------------------------------------------------------------------
    def health(self) -> dict[str, Any]:
        now = datetime.now(UTC)
        words = self.scrub_words()
        with self._read() as s:
            pool = q.pool_by_station(s, now)
            paused = q.station_controls(s)
            counters = q.counters(s)
            recent = q.recent_dlq(s, 20)
            held = q.windows(s, ("held", "carried"), 100)
            wcounts = q.window_counts(s)
            act = q.activity(s)
            registry = q.registered_stations(s)
            per_feed = feed_summary(s, now)
        resub = q.resubmissions(counters)
        for station in sorted(set(resub) - {r["station"] for r in pool}):
            pool.append({"station": station, "pending": 0, "released": 0, "suppressed": 0, "blocked": 0,
                         "oldest_pending_received_at": None, "oldest_pending_age_s": None})
        for row in pool:
            row["paused"] = paused.get(row["station"], {}).get("paused", False)
            row.update(resub.get(row["station"]) or dict.fromkeys(sorted(set(q.RESUBMISSIONS.values())), 0))
        for st, c in paused.items():
            if st not in {r["station"] for r in pool}:
                pool.append({"station": st, "pending": 0, "released": 0, "suppressed": 0, "blocked": 0,
                             "oldest_pending_received_at": None, "oldest_pending_age_s": None,
                             "paused": c["paused"]})
        for e in recent:
            e["message"] = scrub(e["message"], words)
        for w in held:
            w["reason"] = scrub(w["reason"], words)
        dlq = [c for c in counters if c["kind"] == "dlq"]
        by_reason: dict[str, int] = {}
        for c in dlq:
            by_reason[c["reason"]] = by_reason.get(c["reason"], 0) + c["count"]
        out = {
            "at": now.isoformat(),
            "pool": {"stations": pool, "pending_total": sum(r["pending"] for r in pool),
                     "oldest_pending_age_s": max((r["oldest_pending_age_s"] for r in pool
                                                 if r["oldest_pending_age_s"] is not None), default=None)},
            "dlq": {"total": sum(by_reason.values()), "by_reason": by_reason, "by_station": dlq, "recent": recent},
            "duplicates": [c for c in counters if c["kind"] != "dlq"],
            "windows": {"by_state": wcounts, "held": [w for w in held if w["state"] == "held"],
                        "carried": [w for w in held if w["state"] == "carried"]},
            "broker": self.broker_state(),  # first: a broker that does not answer is then not asked again
            "lag": self.lag(),
            "worker": self.worker_status(act),
            "controls": paused,
            "registry": registry,
            "feeds": per_feed,
            "read_only": self.settings.operator_token is None,
        }
        out["verdict"] = verdict(out, now).as_dict()  # the one line both /health and `status` open with
        return out

    def windows(self, states: tuple[str, ...]) -> list[dict[str, Any]]:
        bad = [st for st in states if st not in q.WINDOW_STATES]
        if bad:
            raise controls.ControlError(f"unknown window state {bad[0]}; valid: {', '.join(q.WINDOW_STATES)}", 400)
        with self._read() as s:
            rows = q.windows(s, states, 500)
        words = self.scrub_words()
        for w in rows:
            w["reason"] = scrub(w["reason"], words)
        return rows

    def audit(self, limit: int = 100) -> list[dict[str, Any]]:
        with self._read() as s:
            rows = q.audit_entries(s, limit=limit)
        for a in rows:
            a["detail"] = self._scrub_detail(a.get("detail"))
        return rows

    FREE_TEXT = ("reason", "previous_reason", "failures", "message", "note")

    def _scrub_detail(self, detail: Any, free: bool = False) -> Any:
        """Scrub the free-text fields of an audit detail (reasons, failures, notes); ids and counts stay."""
        if isinstance(detail, dict):
            return {k: self._scrub_detail(v, free or k in self.FREE_TEXT) for k, v in detail.items()}
        if isinstance(detail, list):
            return [self._scrub_detail(v, free) for v in detail]
        return scrub(detail, self.scrub_words()) if free and isinstance(detail, str) else detail
