"""``anonstream spec check``: how a file fits a spec, before anything runs.

Per used column: missing values (and what the spec's policy does with them), values that do not
parse (numbers, whole numbers, dates in the declared format, ambiguous dates), values outside the
hierarchy, offences missing from the severity table; identifiers that would be released (a
pass-through or QI column that looks like one); repeated report ids (compared as the stream compares
them, :func:`core.canonical.canonical_id`: ``0042`` is ``42``); and a feasibility estimate: the rows
the ``optimal`` engine would suppress at the requested k. Verdicts come from core/checks.py, the same
rules the batch reader and the stream apply. Station ids (or a station's report ids) written in
several ways that the stream takes for one (``08`` and ``8``) are named as warnings: they do not fail
the check.

Every row also goes through push's own checks (:mod:`stream.specdraft.intake`: the intake's
``ReportValidator`` and guards, duplicate ids, ``--station``), so what the check passes, push accepts;
and with an engine (``--engine``, else the one a drafted spec names) that engine runs on a sample of the
usable rows (:func:`stream.specdraft.engine.trial`) and the check says whether it releases.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
import pandas as pd

from core import checks, contract
from core.canonical import canonical_id, collision_lines, id_collisions
from core.encoding import Schema
from core.errors import AnonymizationError
from core.schema import DatasetSpec
from stream.io.rows import Row
from stream.specdraft.engine import Trial, trial
from stream.specdraft.intake import IntakeCheck, frame_rows, intake_check
from stream.specdraft.profile import IDENTIFIER_PATTERNS, match

LABELS = {checks.NOT_A_NUMBER: "unparseable", checks.NOT_WHOLE: "unparseable", checks.BAD_DATE: "unparseable",
          checks.AMBIGUOUS_DATE: "unparseable", checks.NOT_IN_HIERARCHY: "outside"}


@dataclass
class ColumnCheck:
    name: str
    role: str
    kind: str
    missing: int = 0
    unparseable: int = 0
    outside: int = 0
    examples: list[str] = field(default_factory=list)
    note: str = ""
    problem: bool = False


@dataclass(frozen=True)
class Issue:
    """One reason the data does not fit: ``kind`` is absent | column | key | rows | feasibility | engine | intake;
    ``column`` the column (or stream key) concerned, if any."""

    kind: str
    text: str
    column: str | None = None


@dataclass
class CheckReport:
    rows: int
    columns: list[ColumnCheck] = field(default_factory=list)
    issues: list[Issue] = field(default_factory=list)
    bad_rows: int = 0
    dropped_missing: int = 0
    feasibility: str = ""
    warnings: list[str] = field(default_factory=list)  # worth knowing, but the data fits all the same
    intake: IntakeCheck | None = None  # push's checks on every row
    trial: Trial | None = None  # the engine run on a sample

    def add(self, kind: str, text: str, column: str | None = None) -> None:
        self.issues.append(Issue(kind, text, column))

    @property
    def problems(self) -> list[str]:
        return [i.text for i in self.issues]

    @property
    def fits(self) -> bool:
        return not self.issues


def _examples(values: pd.Series, mask: np.ndarray, limit: int = 3) -> list[str]:
    return [repr(v) for v in pd.unique(values[mask].astype(str))[:limit]]


def check_frame(frame: pd.DataFrame, schema: Schema, k: int, max_suppression: float, engine: str | None = None,
                rows: Iterable[Row] | None = None, station: str | None = None,
                now: datetime | None = None) -> CheckReport:
    """How ``frame`` fits the spec; ``rows`` (default: the frame's) go through push's checks, with
    ``--station`` and the plausible-time range around ``now``; with ``engine``, also what that engine needs
    of the spec, and whether it releases a sample of the usable rows."""
    spec = schema.spec
    fmt = spec.input
    report = CheckReport(rows=len(frame))
    absent = [c for c in spec.used_columns() if c not in frame.columns]
    if absent:
        report.add("absent", f"column(s) named in the spec are not in the file: {', '.join(absent)}")
        return report
    applied = frame.copy()  # the rows as the contract reads them (missing values as their leaf)
    bad = np.zeros(len(frame), dtype=bool)
    gone_any = np.zeros(len(frame), dtype=bool)
    policy = fmt.missing_policy
    roles = [(q.name, "qi", q.type.value) for q in spec.qi]
    if spec.sensitive:
        roles.append((spec.sensitive.name, "sensitive", "text"))
    roles += [(c, "passthrough", "text") for c in spec.passthrough]
    for name, role, kind in roles:
        col = frame[name]
        cc = ColumnCheck(name, role, kind)
        gone = contract.missing_mask(col, fmt.missing)
        cc.missing = int(gone.sum())
        gone_any |= gone
        values = col.where(~pd.Series(gone, index=col.index), fmt.missing_label) if policy == "leaf" else col
        applied[name] = values
        judged = ~gone if policy != "leaf" else np.ones(len(col), dtype=bool)
        if role == "qi":
            verdict = checks.value_problems(schema.hierarchies[name], values.astype(str))
            verdict[~judged] = checks.OK
            for reason, label in LABELS.items():
                hit = verdict == reason
                setattr(cc, label, getattr(cc, label) + int(hit.sum()))
            wrong = verdict != checks.OK
            bad |= wrong
            cc.examples = _examples(values, wrong)
            amb = int((verdict == checks.AMBIGUOUS_DATE).sum())
            if amb:
                cc.note = f"{amb} ambiguous date(s): declare format"
            if match(name, IDENTIFIER_PATTERNS):
                cc.note, cc.problem = "looks like a direct identifier: it would be released generalized", True
        elif role == "sensitive" and spec.sensitive and spec.sensitive.severity is not None \
                and spec.sensitive.default_severity is None:
            unknown = judged & ~values.astype(str).str.strip().isin(list(spec.sensitive.severity)).to_numpy()
            cc.outside = int(unknown.sum())
            cc.examples = _examples(values, unknown)
            if cc.outside:
                cc.note = "offence(s) not in the severity table"
            bad |= unknown
        elif role == "passthrough":
            uniq = col[~gone].nunique() / max(int((~gone).sum()), 1)
            if match(name, IDENTIFIER_PATTERNS) or (uniq >= 0.9 and col[~gone].nunique() >= 20):
                cc.note, cc.problem = "looks like an identifier and would be released unchanged", True
        if cc.missing and policy == "error":
            cc.problem = True
            cc.note = cc.note or "missing values refused (on_missing = \"error\")"
        cc.problem = cc.problem or bool(cc.unparseable or cc.outside)
        report.columns.append(cc)
    for cc in report.columns:
        if cc.problem:
            report.add("column", f"{cc.name}: " + (cc.note or f"{cc.unparseable} unparseable, {cc.outside} outside"),
                       cc.name)
    _keys(frame, spec, report)
    _intake(report, schema, frame_rows(frame) if rows is None else rows, station, now)
    if engine is not None:
        _engine_needs(engine, spec, report)
    report.bad_rows = int(bad.sum())
    keep = ~bad
    if policy == "drop":
        report.dropped_missing = int((gone_any & ~bad).sum())
        keep &= ~gone_any
    elif policy == "error":
        keep &= ~gone_any
    report.feasibility = _feasibility(applied[keep], schema, k, max_suppression, report)
    if engine is not None and not any(i.kind in {"engine", "feasibility", "rows"} for i in report.issues):
        report.trial = trial(applied[keep], schema, engine, k, max_suppression)
        if not report.trial.releases:
            report.add("engine", f"--engine {report.trial.text}")
    return report


def _intake(report: CheckReport, schema: Schema, rows: Iterable[Row], station: str | None,
            now: datetime | None) -> None:
    """Push's checks on every row: each reason push would reject rows for is an issue."""
    report.intake = got = intake_check(rows, schema, station, now)
    if got.skipped or got.note:
        report.warnings.append(f"push: {got.skipped or got.note}")
    said = {"duplicate-id"} if any(i.kind == "key" and i.column == "id_column" for i in report.issues) else set()
    for reason, line in zip(sorted(got.reasons, key=lambda r: (-got.reasons[r], r)), got.lines(), strict=True):
        if reason == "missing-value":  # the spec's on_missing = "drop": dead-lettered and counted, as declared
            report.warnings.append(f"push: on_missing = \"drop\" dead-letters {line}")
        elif reason not in said:  # repeated ids are said once, by the id_column check
            report.add("intake", f"push would reject {line}", reason)


def _keys(frame: pd.DataFrame, spec: DatasetSpec, report: CheckReport) -> None:
    for key in ("id_column", "time_column", "station_column"):
        col = getattr(spec, key)
        if col is not None and col not in frame.columns:
            report.add("key", f"{key} '{col}' is not a column of the file", key)
    idc, stc = spec.id_column, spec.station_column
    if idc in frame.columns:
        dup = int(frame[idc].map(lambda v: v if pd.isna(v) else canonical_id(v)).duplicated().sum())
        if dup:
            report.add("key", f"id_column '{idc}': {dup} repeated report id(s)", "id_column")
    report.warnings += _collisions(frame, stc or "station_id", idc or "report_id", spec.id_scope == "global")


def _collisions(frame: pd.DataFrame, stc: str, idc: str, global_ids: bool) -> list[str]:
    """Warning lines naming the spellings the stream takes for one station, or for one report id (of one
    station, or of the department with ``global_ids``)."""
    out = []
    if stc in frame.columns:
        out += collision_lines("station", id_collisions(pd.unique(frame[stc].dropna().astype(str))))
    if idc in frame.columns:
        ids = frame[idc].dropna().astype(str)
        scopes = frame.loc[ids.index, stc].astype(str).map(canonical_id) if stc in frame.columns and not global_ids \
            else pd.Series("*", index=ids.index)
        found: dict[str, list[str]] = {}
        for scope, group in ids.groupby(scopes, sort=True):
            found.update({f"{scope}\x1f{k}": v for k, v in id_collisions(pd.unique(group)).items()})
        out += collision_lines("report", found)
    return out


def _engine_needs(engine: str, spec: DatasetSpec, report: CheckReport) -> None:
    """What the engine needs of the spec (``Engine.needs``) and the spec lacks."""
    from core.engines.registry import get_engine

    needs = get_engine(engine).needs
    sens = spec.sensitive
    if "sensitive" in needs and sens is None:
        report.add("engine", f"--engine {engine} needs a sensitive attribute with a severity table: add a "
                             f"[sensitive] section naming the offence column and a [sensitive.severity] table "
                             f"(docs/spec.md)")
    elif "severity" in needs and sens is not None and sens.severity is None and sens.default_severity is None:
        report.add("engine", f"--engine {engine} needs a severity table for sensitive attribute '{sens.name}': "
                             f"add [sensitive.severity] (or default_severity) to the spec (docs/spec.md)", sens.name)


def _feasibility(rows: pd.DataFrame, schema: Schema, k: int, max_suppression: float, report: CheckReport) -> str:
    if rows.empty:
        report.add("rows", "no row fits the spec")
        return "no rows to anonymize"
    from core.encoding import encode
    from core.engines.registry import get_engine, make_params

    try:
        batch = encode(rows, schema)
        sizes = rows.groupby(schema.qi_names, dropna=False, sort=False)[schema.qi_names[0]].transform("size")
        small = int((sizes < k).sum())
        engine = get_engine("optimal")
        params = make_params(engine, {"k": k, "max_suppression": max_suppression})
        release = engine.anonymize(batch, params, np.random.default_rng(0))
    except AnonymizationError as exc:
        report.add("feasibility", f"feasibility: {exc.message}")
        return f"not feasible: {exc.message}"
    levels = release.diagnostics.get("levels")
    return (f"{len(rows)} usable rows; {small} are in classes smaller than k={k} without generalization; "
            f"optimal at k={k}, max suppression {max_suppression:g}: suppresses {len(release.suppressed)} row(s)"
            + (", levels " + ", ".join(f"{q} {int(v)}" for q, v in levels.items()) if isinstance(levels, dict) else ""))
