"""History rules for batch runs (``anonymize --ledger``): the stream's linking guard applied to files.

A batch run given a ledger (a SQLite file, migrated automatically, or a migrated PostgreSQL URL)

1. fingerprints every input row exactly as the stream does (keyed report, content and person
   fingerprints, see :mod:`stream.wire.records`; content over canonical values, so ``06/17/2020`` and
   ``6/17/2020`` are one day; station and report ids in their canonical form, so station ``08`` is
   ``8``), so a report released by the stream is recognised in a file and the other way round;
2. excludes rows already released under the configured ``link_guard`` (default ``content``), counting
   them per rule: the same report id, or (``content``) an occurrence of a content beyond those the
   ledger released (:func:`stream.worker.link_guard.occurrences_blocked`: rows of one station with the
   same content, such as co-offenders, are its 1st, 2nd ... occurrence; a file sent again is excluded
   whole, co-offenders are all released);
3. after the release passed the verifier, records it in the ledger like a stream release (under a
   ``batch:<file name>`` window), with its released fingerprints, so the next run excludes them.

The key is ``ANONSTREAM_FINGERPRINT_KEY``, else the ``fingerprint.key`` beside a SQLite ledger file
(the stream's embedded key when the file is the stream's database).
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd
from sqlalchemy import insert
from sqlalchemy.exc import IntegrityError

from core.canonical import station_id
from core.encoding import Schema
from core.errors import AnonymizationError, ParamsError
from db import Database, ReleaseConflict, ReleaseRepository, StoredRelease
from db.models import Window
from stream.config.settings import Settings
from stream.intake.fingerprints import content_fingerprint, fingerprint, person_fingerprint
from stream.intake.validate import Clean, ReportValidator, content_fields
from stream.wire.manifest import BLOCK_RULES, blocked_reasons
from stream.wire.records import checksum_encoded, clean_json, dumps, record_messages
from stream.worker.link_guard import Occurrence, occurrences_blocked

log = logging.getLogger(__name__)
ACTOR = "batch-cli"


def ledger_url(target: str) -> tuple[str, Path | None]:
    """A SQLAlchemy URL for ``--ledger`` (a URL, or a file path meaning SQLite) and the file, if any."""
    if "://" in target:
        path = Path(target.split("///", 1)[1]) if target.startswith("sqlite:///") else None
        return target, path
    path = Path(target).expanduser().resolve()
    return f"sqlite:///{path}", path


def open_ledger(target: str, settings: Settings) -> tuple[Database, Settings]:
    """Open the ledger (migrating a SQLite file; a server database must be migrated) and the key's settings."""
    from alembic.script import ScriptDirectory

    import migrations

    url, path = ledger_url(target)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        logging.getLogger("alembic").setLevel(logging.WARNING)  # a one-line CLI, not a migration log
        migrations.upgrade(url)
        if settings.fingerprint_key is None:
            settings = settings.with_updates(data_dir=path.parent)
    else:
        head = ScriptDirectory.from_config(migrations.config()).get_current_head()
        try:
            current = migrations.current(url)
        except Exception as exc:  # unreachable server, bad credentials ...
            raise ParamsError(f"cannot open the ledger {_safe(url)}: {type(exc).__name__}",
                              reason="ledger-unavailable") from None
        if current != head:
            raise ParamsError(f"the ledger {_safe(url)} is at revision {current}, not {head}; "
                              "run 'anonstream migrate' with ANONSTREAM_DATABASE_URL set to it first",
                              reason="ledger-not-migrated")
    return Database(url), settings


def _safe(url: str) -> str:
    """A URL without its password."""
    head, sep, tail = url.partition("@")
    return url if not sep else head.split("://", 1)[0] + "://…@" + tail


@dataclass
class BatchHistory:
    """Fingerprints of a batch's input rows (indexed like the input) and what the guard excluded."""

    report: pd.Series
    content: pd.Series
    person: pd.Series
    excluded: list[Any] = field(default_factory=list)
    blocked_by: dict[tuple[str, str], int] = field(default_factory=dict)
    content_seen: dict[str, int] | None = None  # the ledger's count per content when the guard read it
    repeated: int = 0  # rows kept that repeat another kept row's content (co-offenders): released too
    stations: pd.Series | None = None
    db: Database | None = None
    settings: Settings | None = None

    def by_rule(self) -> dict[str, int]:
        """Excluded rows per guard rule."""
        out: dict[str, int] = {}
        for (_station, rule), n in sorted(self.blocked_by.items()):
            out[rule] = out.get(rule, 0) + n
        return out

    def ledger_name(self) -> str:
        return _safe(self.db.url) if self.db is not None else "-"


def fingerprint_rows(frame: pd.DataFrame, schema: Schema, settings: Settings) -> BatchHistory:
    """Keyed report / content / person fingerprints of every row, as the stream computes them.

    Rows that are not stream reports (no report id, station or time column, or not valid as one) are
    fingerprinted by their content alone (canonical values); their report fingerprint numbers identical
    rows as their 1st, 2nd ... occurrence, since in census-like data they are different people."""
    spec, key = schema.spec, settings.key_bytes()
    id_col, st_col, t_col = spec.id_column, spec.station_column, spec.time_column
    streamable = all(c is not None and c in frame.columns for c in (id_col, st_col, t_col))
    persons = [c for c in settings.person_columns if c in frame.columns]
    validator = ReportValidator(schema, tuple(persons))
    rep, con, per, sta = [], [], [], []
    seen: dict[str, int] = {}
    for rec in frame.astype(object).where(frame.notna(), None).to_dict("records"):
        person = [str(rec.get(c) or "") for c in persons]
        clean = validator.check(rec) if streamable else None
        if isinstance(clean, Clean):
            cfp = content_fingerprint(key, clean.person, content_fields(clean, settings.content_columns))
            rep.append(fingerprint(key, clean.scope or clean.station_id, clean.report_id))
            sta.append(clean.station_id)
        else:  # no report id / station / time (or not valid as a stream report): content alone, and
            # identical rows (different people in e.g. census data) count as the 1st, 2nd ... occurrence
            used = [(c, validator.canonical(c, "" if rec.get(c) is None else str(rec[c])))
                    for c in (settings.content_columns or spec.used_columns())]
            cfp = content_fingerprint(key, person, used)
            seen[cfp] = seen.get(cfp, 0) + 1
            rep.append(fingerprint(key, "batch", content_fingerprint(
                key, [], [("content", cfp), ("occurrence", str(seen[cfp]))])))
            sta.append(station_id(rec.get(st_col) or "batch") if st_col else "batch")
        con.append(cfp)
        per.append(person_fingerprint(key, person) if persons else None)
    idx = frame.index
    return BatchHistory(pd.Series(rep, index=idx), pd.Series(con, index=idx), pd.Series(per, index=idx, dtype=object),
                        stations=pd.Series(sta, index=idx))


def apply_guard(db: Database, hist: BatchHistory, guard: str) -> BatchHistory:
    """Mark rows the guard excludes: the same report (released, or earlier in the file), occurrences of
    a content beyond those released (:func:`stream.worker.link_guard.occurrences_blocked`), a person
    already released."""
    if guard == "off":
        return hist
    assert hist.stations is not None
    repo = ReleaseRepository(db)
    seen = repo.released_reports(sorted(set(hist.report)))
    content = guard in ("content", "person")
    counts = repo.released_content_counts(sorted(set(hist.content))) if content else {}
    persons = (repo.released_persons(sorted({p for p in hist.person if p}))
               if guard == "person" else set())
    first: dict[str, Any] = {}  # report fingerprint -> its first row (a later row is the same report again)
    items, rows = [], []
    for i in hist.report.index:
        if first.setdefault(hist.report[i], i) == i:
            items.append(Occurrence(str(hist.stations[i]), hist.content[i], hist.report[i], hist.report[i] in seen))
            rows.append(i)
    by_content = {rows[j] for j in occurrences_blocked(items, counts)} if content else set()
    kept: dict[tuple[str, str], int] = {}
    for i in hist.report.index:
        fp, cfp, pfp = hist.report[i], hist.content[i], hist.person[i]
        rule = ("report" if fp in seen or first[fp] != i else
                "content" if i in by_content else
                "person" if pfp is not None and pfp in persons else None)
        station = str(hist.stations[i])
        if rule is None:
            kept[(station, cfp)] = kept.get((station, cfp), 0) + 1
            continue
        hist.excluded.append(i)
        hist.blocked_by[(station, rule)] = hist.blocked_by.get((station, rule), 0) + 1
    hist.repeated = sum(n - 1 for n in kept.values())
    hist.content_seen = {c: counts.get(c, 0) for c in set(hist.content)} if content else None
    return hist


def batch_release_id(name: str, engine: str, seed: int, hist: BatchHistory, released: list[Any]) -> str:
    """Deterministic id of a batch release: the file name, engine, seed and the released reports."""
    digest = hashlib.sha256("\x1f".join(sorted(hist.report[released])).encode()).hexdigest()
    return "b-" + hashlib.sha256(f"{name}\x1f{engine}\x1f{seed}\x1f{digest}".encode()).hexdigest()[:22]


def record_release(db: Database, rid: str, name: str, release: Any, report: Any, rows: list[list[Any]],
                   columns: list[str], hist: BatchHistory, seed: int, now: datetime | None = None) -> str:
    """Store a verified batch release in the ledger (release, records, fingerprints); returns its id."""
    now = now or datetime.now(UTC)
    name = name[:100]
    released = list(release.rows.index)
    window_id = f"batch:{name}|{now.strftime('%Y-%m-%dT%H:%M:%SZ')}|{rid}"
    encoded = [dumps(m) for m in record_messages(rid, ["class_id", *columns],
                                                 [[0, *r] for r in rows])]
    n_blocked = len(hist.excluded)
    assert hist.stations is not None
    counts = {"received": len(hist.report), "released": len(released), "suppressed": len(release.suppressed),
              "held_back": 0, "blocked": n_blocked,
              **{f"blocked_{rule}": sum(n for (_, r), n in hist.blocked_by.items() if r == rule)
                 for rule in BLOCK_RULES}}
    metrics = clean_json(release.metrics)
    loss = metrics.get("gcp", metrics.get("loss_metric"))
    stations = sorted({str(s) for s in hist.stations[released]})
    manifest = clean_json({"release_id": rid, "window": {"id": window_id, "key": f"batch:{name}"},
                           "stations": stations, "engine": release.engine, "params": release.params,
                           "k": int(report.k), "l": report.l_distinct, "metrics": metrics, "counts": counts,
                           "blocked_reasons": blocked_reasons(counts),
                           "records": len(rows), "columns": columns, "checksum": checksum_encoded(encoded),
                           "source": "batch"})
    stored = StoredRelease(
        id=rid, window_id=window_id, window_key=f"batch:{name}", stations=stations, engine=release.engine,
        params=clean_json(release.params), seed=seed, k_achieved=int(report.k), l_achieved=report.l_distinct,
        information_loss=loss if isinstance(loss, float | int) else None, metrics=metrics,
        verification=clean_json(report.as_dict()), counts=counts, checksum=manifest["checksum"],
        manifest=manifest, columns=columns, rows=clean_json(rows),
        fingerprints=[(str(hist.report[i]), hist.person[i]) for i in released],
        content_fps=[str(hist.content[i]) for i in released], blocked_by=dict(hist.blocked_by),
        content_seen=hist.content_seen)
    repo = ReleaseRepository(db)
    try:
        with db.unit() as s:  # the release's window: a closed batch window (never picked up by a worker)
            s.execute(insert(Window).values(id=window_id, key=f"batch:{name}", start=now, end=now, seq=0,
                                            state="released", close_reason="batch", count=len(hist.report),
                                            duplicates=0, last_input_at=now, closed_at=now, created_at=now))
        repo.store(stored, ACTOR, now, fenced=False)  # a batch run holds no window claim
    except (ReleaseConflict, IntegrityError) as exc:  # another run or window released some of it meanwhile
        text = str(exc) if isinstance(exc, ReleaseConflict) else "a report was released meanwhile"
        raise AnonymizationError(f"ledger: {text}; nothing was written, run again",
                                 reason="ledger-conflict") from None
    repo.mark_published(rid, ACTOR, now)  # written to the --out file; no worker publishes it
    return rid
