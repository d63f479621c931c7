"""``spec draft`` never writes a spec its own ``spec check`` refuses: render, check, repair, repeat.

Each round renders the draft, loads it as ``spec check`` loads a spec file (TOML, the spec's rules,
every hierarchy built) and checks the rows the draft was made from, in process, with the check's
own defaults. What fails is repaired or downgraded, and the spec's comments say what and why:

- a quasi-identifier whose hierarchy does not load, or whose values it refuses (unparseable,
  outside) -> no longer a QI, so not released;
- missing values refused -> ``on_missing = "drop"``;
- sensitive values missing from the severity table -> added at the default rank;
- a pass-through or QI that looks like an identifier -> not released;
- a stream key absent from the file or with repeated ids -> left out (the stream's default applies);
- not feasible -> the last-ranked QI is dropped;
- the drafted engine does not release a sample of the rows -> the next engine that needs less
  (cg-diverse -> cg-kanon -> mondrian), said in the spec;
- push's checks reject rows (an event time outside the plausible range ...) -> written all the same,
  with the reasons at the top of the spec, so ``spec check`` on this file says what push would do.

When nothing is left to repair (no QI left, no row fits) the draft is refused with the check's
reasons, one ``error:`` line.
"""

from __future__ import annotations

import tomllib

import pandas as pd

from core.encoding import Schema
from core.errors import AnonymizationError, SpecError
from core.schema import parse_spec
from stream.specdraft.check import CheckReport, Issue, check_frame
from stream.specdraft.draft import Column, Draft
from stream.specdraft.engine import cli_args, params_for
from stream.specdraft.render import render
from stream.specdraft.sensitive import default_rank


def load(text: str) -> Schema:
    """The rendered spec as ``spec check`` would load it (raises SpecError / HierarchyError)."""
    return Schema.from_spec(parse_spec(tomllib.loads(text)))


TIME_REASONS = {"missing-field", "invalid-time", "implausible-time"}  # push refuses rows for the time column
FALLBACK = {"cg-diverse": "cg-kanon", "cg-kanon": "mondrian"}  # the next engine that needs less


def _drop_qi(draft: Draft, col: Column, why: str, role: str = "withheld") -> None:
    col.role, col.why, col.qi, col.how = role, why, None, ""
    for key, (name, _) in list(draft.keys.items()):
        if name == col.name and key != "station_column":
            del draft.keys[key]
    draft.notes.append(f"{col.name}: {why}")


def _time_refused(issue: Issue, draft: Draft) -> bool:
    """True if push refuses rows of ``issue`` for the drafted time column (empty, unparseable, implausible)."""
    time_col = draft.keys.get("time_column", (None, ""))[0]
    if time_col is None or issue.kind != "intake" or issue.column not in TIME_REASONS:
        return False
    if issue.column != "missing-field":
        return True
    fields = issue.text.split("missing or empty: ", 1)[-1].split(";")[0].split(" (value")[0]
    return time_col in fields.split(", ")


def _unloadable_qis(draft: Draft, source: str, sampled: bool) -> bool:
    """Drop every QI whose own entry does not load; True if one was dropped."""
    data = tomllib.loads(render(draft, source, sampled))
    dropped = False
    for entry in data.get("qi", []):
        try:
            Schema.from_spec(parse_spec({"qi": [entry]}))
        except AnonymizationError as exc:
            col = next(c for c in draft.columns if c.name == entry["name"])
            _drop_qi(draft, col, f"not a quasi-identifier: its drafted hierarchy does not load ({exc.message})")
            dropped = True
    return dropped


def _repair(draft: Draft, report: CheckReport, frame: pd.DataFrame) -> bool:
    """Repair what the check refused; False when nothing could be repaired."""
    cols = {c.name: c for c in draft.columns}
    checks = {c.name: c for c in report.columns}
    repaired = False
    for issue in report.issues:
        col = cols.get(issue.column or "")
        if issue.kind == "intake" and _time_refused(issue, draft):
            time_col = draft.keys.pop("time_column")[0]
            draft.notes.append(f"time_column '{time_col}' left out: {issue.text}; without it push refuses the file "
                               "whole, so this spec is for anonymize (declare a time column push accepts to push)")
            repaired = True
        if issue.kind == "intake":  # push's verdicts on rows the repairs below may change: checked again
            continue
        if issue.kind == "key" and issue.column in draft.keys:
            draft.keys.pop(issue.column)
            draft.notes.append(f"{issue.column} left out ({issue.text})")
            if issue.column == "id_column":
                draft.keys.pop("id_scope", None)
            repaired = True
        elif issue.kind == "engine" and draft.engine in FALLBACK:
            old, draft.engine = draft.engine, FALLBACK[draft.engine]
            draft.engine_why = f"{old} does not release a sample of these rows; {draft.engine} needs less"
            draft.notes.append(f"engine {old} -> {draft.engine} ({issue.text})")
            repaired = True
        elif issue.kind == "column" and col is not None:
            cc = checks[col.name]
            if cc.missing and draft.on_missing == "error":
                draft.on_missing = "drop"
                draft.missing_why = f"missing values in '{col.name}': rows are dropped and counted"
            elif col.role == "sensitive" and cc.outside:
                seen = frame[col.name].dropna().astype(str).str.strip()
                new = sorted(set(seen) - set(draft.severity) - {"", *draft.missing_tokens})
                if not new:
                    return False
                for v in new:
                    draft.severity[v] = default_rank(v)
                draft.notes.append(f"{col.name}: {len(new)} value(s) added to the severity table at the default rank")
            elif col.role == "qi":
                looks = "identifier" in cc.note
                _drop_qi(draft, col, f"spec check refused it as a QI ({issue.text.split(': ', 1)[-1]})",
                         "identifier" if looks else "dropped")
            elif col.role == "passthrough":
                col.role, col.why = "withheld", f"not released: spec check said {issue.text.split(': ', 1)[-1]}"
                draft.notes.append(f"{col.name}: {col.why}")
            else:
                return False
            repaired = True
        elif issue.kind == "feasibility" and len(draft.role("qi")) > 1:
            _drop_qi(draft, draft.role("qi")[-1], f"dropped from the QIs so the spec is feasible ({issue.text})")
            repaired = True
        else:
            return False
    return repaired


def fit(draft: Draft, frame: pd.DataFrame, source: str, sampled: bool, k: int, max_suppression: float) -> str:
    """The draft's TOML, checked on ``frame`` (the rows it was drafted from) and repaired until it fits."""
    for _ in range(len(draft.columns) + 5):
        if not draft.role("qi"):
            break
        draft.engine_args = cli_args(params_for(draft.engine, k, max_suppression)) if draft.engine else ""
        if _unloadable_qis(draft, source, sampled):
            continue
        text = render(draft, source, sampled)
        try:
            schema = load(text)
        except (AnonymizationError, tomllib.TOMLDecodeError) as exc:
            raise SpecError(f"spec draft wrote a spec that does not load: {str(exc).splitlines()[0]}") from None
        report = check_frame(frame, schema, k, max_suppression, draft.engine or None)
        if report.fits:
            return text
        if all(i.kind == "intake" and not _time_refused(i, draft) for i in report.issues):  # said at the top
            draft.push_notes = [i.text for i in report.issues]
            return render(draft, source, sampled)
        if not _repair(draft, report, frame):
            raise SpecError("spec draft could not write a spec this file fits: " + "; ".join(report.problems[:3]))
    raise SpecError("no quasi-identifier the data fits found by name or type; write the [[qi]] entries by hand "
                    "(docs/spec.md)" + (": " + "; ".join(draft.notes[-2:]) if draft.notes else ""))
