"""The batch pipeline as a library: :func:`anonymize_table` (a table in, a verified typed release out).

``anonstream anonymize`` parses its options, reads the file and calls it; it writes ``--out`` and
``--report`` from the :class:`BatchResult`. The steps, in order: the ledger's history (rows already
released are excluded, :mod:`stream.batch.order`), encoding, the engine's warm-up (outside its clock),
the engine, the independent verifier (:func:`core.verify.verify_release`), the risk profile (the
stream's own step, :func:`stream.worker.risk.risk_summary`), the typed table with its event dates,
utility report and codebook, the publication order and, for a verified release given a ledger, its
record (before anything is written).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from core.risk.reidentification import DEFAULT_THRESHOLD
from stream.batch import order as batch_order

if TYPE_CHECKING:
    import pandas as pd

    from core.encoding import Schema
    from core.engines.base import Engine, EngineParams, Progress, Release
    from core.verify.report import VerificationReport
    from stream.batch.order import Notify
    from stream.batch.stages import StageClock


@dataclass(frozen=True)
class BatchOptions:
    """How a batch release is made and ordered (defaults: those of ``anonstream anonymize``).

    ``source`` names the input (its file name) in the ledger and in the release id; ``seed`` is the
    engine's; ``order_seed`` seeds the published order (None: from the ledger's key with a ledger, else
    random); ``keep_order`` keeps the input order (internal diagnostics only); ``threshold`` is the
    prosecutor risk above which a record counts as at risk."""

    source: str = "input"
    seed: int = 0
    order_seed: int | None = None
    keep_order: bool = False
    threshold: float = DEFAULT_THRESHOLD


@dataclass
class BatchResult:
    """A batch release: ``release`` (its rows are the typed table, in input order), the verifier's
    ``report``, the ``summary`` a ``--report`` carries (without timings and input facts), the rows'
    publication ``positions`` (None: input order) and distinct-row ``ids`` for writing them."""

    release: Release
    report: VerificationReport
    summary: dict[str, Any]
    risk: dict[str, Any]
    single: dict[str, Any] | None
    positions: Any
    ids: Any
    rows: int
    dropped: int
    runtime_s: float
    warm_up_s: float
    recorded: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def table(self) -> pd.DataFrame:
        return self.release.rows

    @property
    def ok(self) -> bool:
        return bool(self.report.ok)


def anonymize_table(frame: pd.DataFrame, spec: Schema, engine: Engine, params: EngineParams,
                    ledger: str | None = None, *, options: BatchOptions | None = None,
                    progress: Progress | None = None, notify: Notify | None = None,
                    clock: StageClock | None = None) -> BatchResult:
    """Anonymize ``frame`` (read for ``spec``) with ``engine`` under ``params`` and verify the result.

    ``ledger`` (a SQLite file or a migrated URL): rows it already released are excluded, and a verified
    release is recorded; without one, ``notify`` hears the linking warning. The frame is consumed: the
    caller should hold no other reference to it, so that it is freed once the typed table is built.
    ``clock`` records the stages (read ends with encoding; the caller laps ``write``)."""
    import numpy as np

    from core.codes import TableCodes, attach
    from core.columns import build_codebook, typed_columns
    from core.encoding import encode
    from core.engines.base import no_progress
    from core.engines.nesting import utility_with_nesting
    from core.engines.warmup import warm_up
    from core.metrics.utility import utility_paragraph, utility_report
    from core.verify import verify_release
    from stream.batch.dates import batch_event_dates
    from stream.batch.stages import StageClock, peak_mib
    from stream.worker.risk import risk_summary

    opts, clock = options or BatchOptions(), clock or StageClock()
    notes: list[str] = []

    def tell(text: str) -> None:
        notes.append(text)
        (notify or batch_order.log.info)(text)

    dropped = int(frame.attrs.get("dropped_missing", 0))
    history = batch_order.history_before(ledger, spec, frame, tell)
    frame = batch_order.without_released(frame, history, tell)
    used = spec.spec.used_columns()
    attach(frame, TableCodes.of(frame, used))  # each input column factorized once (the reader's codes kept)
    batch = encode(frame, spec)
    clock.lap("read")
    warm_s = warm_up(engine, batch, params)  # load or compile kernels before the engine's clock starts
    clock.lap("warm_up", peak=False)
    release = engine.anonymize(batch, params, np.random.default_rng(opts.seed), progress or no_progress)
    runtime = clock.lap("engine", peak=False)
    rows = release.rows  # each released column factorized once, for the verifier, risk and typed table
    attach(rows, TableCodes.of(rows, [c for c in used if c in rows.columns]))
    n_rows = len(frame)
    del batch  # each stage frees what no later stage reads (docs/performance.md, "Memory")
    clock.peaks["engine"] = peak_mib()
    clock.restart()
    report = verify_release(frame, release, spec)
    clock.lap("verify")
    risk = risk_summary(spec, frame, release, opts.threshold)
    single = single_offence(spec, release, params.l)  # k only: the classes that give away their offence
    # the published table: each QI label with its typed columns, as on the stream (docs/stream.md)
    dates, span = batch_event_dates(spec, frame, release)  # each class's event days, never a made-up date
    table = typed_columns(release.rows, spec, dates)
    release = dataclasses.replace(release, rows=table)  # the typed table holds the labels: drop the first copy
    utility = utility_with_nesting(utility_report(spec, frame, table), release)  # the data owner's full figures
    del frame  # the input is not needed any more
    codebook = build_codebook(spec, table, suppressed=len(release.suppressed), with_class_id=False,
                              context=list(dates), utility=utility_paragraph(utility))
    out_cols = list(table.columns)
    clock.lap("report")
    keys = [*spec.qi_names, *([spec.sensitive] if spec.sensitive else []), *spec.spec.passthrough]
    positions, order, ids = batch_order.publication(release, out_cols, history, keys, source=opts.source,
                                                    seed=opts.seed, order_seed=opts.order_seed,
                                                    keep_order=opts.keep_order, notify=tell)
    published = batch_order.published_rows(table, positions) if history is not None else None
    recorded = batch_order.record(history, release, report, published, out_cols, source=opts.source,
                                  seed=opts.seed, notify=tell)  # before anything is written
    del published
    summary = release.summary()
    summary["privacy"] = {**summary["privacy"], "risk": risk}
    summary.update(order)
    summary["codebook"] = codebook
    if dates:
        summary["event_time"] = {"first": span[0], "last": span[1]}  # days, as a stream manifest states them
    summary["utility"] = utility
    if single is not None:
        summary["single_offence_classes"] = single
    if recorded is not None:
        summary["ledger"] = recorded
    return BatchResult(release, report, summary, risk, single, positions, ids, n_rows, dropped, runtime, warm_s,
                       recorded, notes)


def single_offence(schema: Schema, release: Release, l_asked: int | None) -> dict[str, object] | None:
    """When no l >= 2 was asked: the released classes whose rows all share one sensitive value (their QI labels,
    rows and that value), for the report; None when l was asked, or there is no sensitive attribute or class."""
    if (l_asked is not None and l_asked > 1) or schema.sensitive is None or release.verification_mode == "k-regular":
        return None
    from core.verify.classes import single_value_classes

    found = single_value_classes(release.rows, schema.qi_names, schema.sensitive)
    listed = [{"labels": {q: r[q] for q in schema.qi_names}, "rows": int(r["rows"]), "value": r["value"]}
              for r in found.to_dict("records")]
    return {"sensitive": schema.sensitive, "classes": len(listed), "rows": int(found["rows"].sum()),
            "list": listed}
