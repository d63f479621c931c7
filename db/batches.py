"""Push batches: where a station's push begins and ends, and what that means for its windows.

A push sends a *begin* marker before a station's first row and an *end* marker after its last, on
the station's partition of the reports topic (:mod:`stream.wire.markers`), so when a worker ingests
the end marker every row of that batch before it has been ingested. Here:

* :func:`begin` / :func:`end` record the markers (idempotent: a redelivered marker changes nothing;
  an end marker without a begin, from a producer that sends only end markers, records both at once;
  a new batch of a station ends an older one of that station left unfinished);
* a key (station, region or global) is *in a batch* while one of its batches has begun and not ended:
  its windows are then not closed by the watermark, however far one late row moved it, nor by idling,
  only when full or flushed (:func:`db.window_state.due_windows`). How fast the worker ingests has no
  say: a push whose rows are still on their way (the worker slow, paused or rebalancing) holds its
  windows however long it takes. A batch stops holding when its end marker is ingested, when a newer
  batch of its station begins (a push that died is ended by the station's next push), or when it began
  more than :data:`BATCH_MAX_S` ago (a safety cap); ``anonstream windows flush`` releases its windows
  at once;
* once no batch of the key is running, every open window of the key whose input all came before the
  latest end is due, and :func:`merge_completed` first merges them (``windows.merge_batch``), each
  ended batch's windows on their own: in event-time order, consecutive windows are merged into one
  (their pending reports moved to the chunk's last window, the others marked ``merged``), in chunks of
  at most ``cap`` reports of even size, so a batch export comes out in releases worth publishing
  instead of one per day or month, and two pushes come out as two whenever the worker reads them.

Producers that send no markers are windowed by the watermark, lateness and idling. Idling is the one
rule that reads the worker's clock, so only marked input is windowed the same whatever the machine's
load: ``push`` and the demo send markers.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from db.models import Batch, PendingReport, Window
from db.session import Database, insert_ignore, rowcount, utc
from db.states import WindowState
from db.windows import WindowPolicy

BATCH_MAX_S = 86_400
"""A batch begun longer ago than this holds no window, ended or not (a push killed before its end markers,
whose station never pushes again, must not keep its windows open for ever). A safety cap, counted from
when the worker read the begin marker: a day, far beyond any push's running time."""


@dataclass(frozen=True)
class BatchMark:
    """One marker as the worker read it: station, batch id, the station's window key and, for an end
    marker, the rows the station sent in the batch."""

    station: str
    batch: str
    key: str
    rows: int | None = None


@dataclass(frozen=True)
class KeyBatches:
    """A key's batches as the due rule needs them."""

    running: bool
    """A batch of the key is still being pushed: begun, not ended, begun less than :data:`BATCH_MAX_S` ago
    (never judged by when the key last had input: that depends on the worker's load, not on the push)."""
    ended_at: datetime | None
    """The latest end of a batch of the key whose completed windows were merged (None: none yet)."""
    unmerged: bool = False
    """A batch of the key ended and its windows are not merged yet (the next tick merges them)."""


def begin(db: Database, feed: str, marks: list[BatchMark], now: datetime) -> None:
    """Record begin markers (an unfinished older batch of the same station ends now)."""
    with db.unit() as s:
        for m in marks:
            s.execute(update(Batch).where(Batch.feed == feed, Batch.station_id == m.station, Batch.batch_id != m.batch,
                                          Batch.ended_at.is_(None)).values(ended_at=now))
            insert_ignore(s, Batch.__table__, [{"feed": feed, "station_id": m.station, "batch_id": m.batch,
                                                "key": m.key, "begun_at": now}], ["feed", "station_id", "batch_id"])


def end(db: Database, feed: str, marks: list[BatchMark], now: datetime) -> None:
    """Record end markers: the batch is complete (a redelivered end marker changes nothing)."""
    with db.unit() as s:
        for m in marks:
            done = s.execute(update(Batch).where(Batch.feed == feed, Batch.station_id == m.station,
                                                 Batch.batch_id == m.batch, Batch.ended_at.is_(None))
                             .values(ended_at=now, rows=m.rows))
            if rowcount(done) == 0:
                insert_ignore(s, Batch.__table__, [{"feed": feed, "station_id": m.station, "batch_id": m.batch,
                                                    "key": m.key, "begun_at": now, "ended_at": now,
                                                    "rows": m.rows}], ["feed", "station_id", "batch_id"])


def key_batches(s: Session, feed: str, keys: set[str], now: datetime) -> dict[str, KeyBatches]:
    """:class:`KeyBatches` of the given keys that have a running, an unmerged or a merged batch."""
    if not keys:
        return {}
    mine = (Batch.feed == feed, Batch.key.in_(sorted(keys)))
    running = set(s.execute(select(Batch.key).where(
        *mine, Batch.ended_at.is_(None), Batch.begun_at >= now - timedelta(seconds=BATCH_MAX_S))
        .distinct()).scalars())
    ended = {key: utc(t) for key, t in s.execute(select(Batch.key, func.max(Batch.ended_at)).where(
        *mine, Batch.merged_at.is_not(None)).group_by(Batch.key)).tuples() if t is not None}
    unmerged = set(s.execute(select(Batch.key).where(*mine, Batch.ended_at.is_not(None), Batch.merged_at.is_(None))
                             .distinct()).scalars())
    return {k: KeyBatches(k in running, ended.get(k), k in unmerged) for k in keys
            if k in running or k in ended or k in unmerged}


def merge_completed(db: Database, policy: WindowPolicy, now: datetime) -> list[str]:
    """Merge the open windows each completed batch left, per key, into chunks (module docstring);
    returns the windows merged away. Batches whose windows were handled are marked ``merged_at``.

    Each ended batch's windows are merged on their own, in the order the batches ended: a batch takes
    the open windows whose last input came after the previous batch's end and before its own (a window
    an earlier batch merged into, not yet released, is left as it is). So two pushes are released as
    two, whether the worker read the second an hour after the first or found both in its backlog (the
    worker ingests a fetch in parts cut at end markers, each at a later time:
    ``stream.worker.batches.segments``). Before, both merged into one when one tick saw them ended:
    what a release held depended on how fast the worker was."""
    merged: list[str] = []
    unmerged = select(Batch.key, Batch.ended_at).where(
        Batch.feed == policy.feed, Batch.ended_at.is_not(None), Batch.merged_at.is_(None))
    with db.read() as s:  # every tick: no write lock unless a batch ended
        if not s.execute(unmerged.limit(1)).first():
            return merged
    with db.unit() as s:
        todo: dict[str, list[datetime]] = {}
        for key, ended_at in s.execute(unmerged).tuples():
            if ended_at is not None:  # never (the query's condition): for the type checker
                todo.setdefault(key, []).append(utc(ended_at))
        states = key_batches(s, policy.feed, set(todo), now)
        for key, ends in sorted(todo.items()):
            state = states.get(key)
            if state is not None and state.running:
                continue  # another batch of the key is being pushed: merge when it ends too
            ends = sorted(set(ends))
            if policy.merge_batch:
                lower = state.ended_at if state is not None else None  # earlier batches' windows: merged
                for ended in ends:
                    query = select(Window).where(Window.key == key, Window.feed == policy.feed,
                                                 Window.state == WindowState.OPEN, Window.last_input_at <= ended)
                    if lower is not None:
                        query = query.where(Window.last_input_at > lower)
                    windows = s.execute(query.order_by(Window.start, Window.seq).with_for_update()).scalars().all()
                    for chunk in chunks(list(windows), policy.cap):
                        merged += _merge(s, chunk, now)
                    lower = ended
            s.execute(update(Batch).where(Batch.feed == policy.feed, Batch.key == key, Batch.ended_at.is_not(None),
                                          Batch.ended_at <= ends[-1] + timedelta(microseconds=1),
                                          Batch.merged_at.is_(None)).values(merged_at=now))
    return merged


def chunks(windows: list[Window], cap: int) -> list[list[Window]]:
    """Consecutive windows in chunks of about even size, none above ``cap`` reports unless one window is."""
    total = sum(int(w.count or 0) for w in windows)
    n = max(1, -(-total // max(cap, 1)))
    out: list[list[Window]] = []
    current: list[Window] = []
    held = seen = 0
    for w in windows:
        c = int(w.count or 0)
        if current and (held + c > cap or (len(out) < n - 1 and seen + c > total * (len(out) + 1) / n)):
            out.append(current)
            current, held = [], 0
        current.append(w)
        held += c
        seen += c
    if current:
        out.append(current)
    return out


def _merge(s: Session, chunk: list[Window], now: datetime) -> list[str]:
    """Move the pending reports and tallies of all but the chunk's last window into the last one."""
    if len(chunk) < 2:
        return []
    target, gone = chunk[-1], chunk[:-1]
    ids = [w.id for w in gone]
    for i in range(0, len(ids), 500):
        s.execute(update(PendingReport).where(PendingReport.window_id.in_(ids[i:i + 500]),
                                              PendingReport.state == "pending")
                  .values(window_id=target.id).execution_options(synchronize_session=False))
        s.execute(update(Window).where(Window.id.in_(ids[i:i + 500]), Window.state == WindowState.OPEN).values(
            state=WindowState.MERGED, closed_at=now, close_reason="merged", hold_reason=f"merged into {target.id}",
            duplicates=0, dropped=0).execution_options(synchronize_session=False))
    s.execute(update(Window).where(Window.id == target.id).values(
        count=Window.count + sum(int(w.count or 0) for w in gone),
        duplicates=Window.duplicates + sum(int(w.duplicates or 0) for w in gone),
        dropped=Window.dropped + sum(int(w.dropped or 0) for w in gone)))
    return ids
