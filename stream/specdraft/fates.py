"""Every column of a file accounted for: its fate under a spec and the one-line reason.

The fates: ``identifier`` (dropped before anything else), ``qi`` (released generalized by its
hierarchy), ``sensitive`` (released, protected by l-diversity and its severity table), ``passthrough``
(released unchanged) and ``withheld`` (in the file, never released). ``spec draft`` writes the table as
comments at the top of the spec, one line per column (``#   "NAME" -> fate: reason``), and ``spec check``
prints it for the checked file: the drafted reason where the spec has one, else what the spec says.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from core.schema import DatasetSpec
    from stream.specdraft.model import Column, Draft

TITLE = "# Every column of the file, in its order: its fate and why (spec check prints this table)."
LINE = re.compile(r'^#\s+("(?:[^"\\]|\\.)*")\s+->\s+([a-z]+):\s?(.*)$')
KEY_NAMES = {"id_column": "the stream's report id (id_column)", "time_column": "the stream's event time (time_column)",
             "station_column": "the stream's station (station_column)"}


def _keys_of(draft: Draft, name: str) -> list[str]:
    out = [KEY_NAMES[k] for k, (v, _) in draft.keys.items() if k in KEY_NAMES and v == name]
    if draft.keys.get("id_column", ("", ""))[0] == name and "id_scope" in draft.keys:
        scope, why = draft.keys["id_scope"]
        out.append(f"id_scope = {scope!r}: {why}")
    if draft.keys.get("station_column", ("", ""))[0] == name and draft.station_map:
        out.append(f"{len(draft.station_map)} name(s) mapped to station ids (station_map)")
    return out


def reason(draft: Draft, col: Column) -> str:
    """The one-line reason of a drafted column's fate."""
    parts = [col.why]
    if col.role == "qi" and col.how:
        parts.append(f"hierarchy: {col.how}")
    elif col.role == "sensitive":
        how = draft.severity_how.split(":")[0] if draft.severity_how else "no severity table"
        parts.append(f"severity table of {len(draft.severity)} value(s): {how}" if draft.severity else how)
    parts += _keys_of(draft, col.name)
    return " ".join("; ".join(parts).split())


def draft_lines(draft: Draft) -> list[str]:
    """The table as comment lines of the drafted spec, one per column, never wrapped."""
    return [TITLE] + [f"#   {json.dumps(c.name, ensure_ascii=False)} -> {c.role}: {reason(draft, c)}"
                      for c in draft.columns]


def parse(text: str) -> dict[str, tuple[str, str]]:
    """``{column: (fate, reason)}`` from a drafted spec's comment table (empty for a hand-written spec)."""
    out: dict[str, tuple[str, str]] = {}
    for line in text.splitlines():
        hit = LINE.match(line)
        if hit:
            out[json.loads(hit.group(1))] = (hit.group(2), hit.group(3))
    return out


def spec_fate(spec: DatasetSpec, name: str) -> tuple[str, str]:
    """What ``spec`` does with column ``name``, said from the spec alone."""
    keys = [f"the stream's {k} ({k})" for k in ("id_column", "time_column", "station_column")
            if getattr(spec, k) == name]
    extra = ("; " + "; ".join(keys)) if keys else ""
    if name in spec.identifiers:
        return "identifier", "listed in identifiers: dropped before anything else" + extra
    if name in spec.qi_names:
        q = spec.qi_spec(name)
        return "qi", f"released generalized: {q.type.value} hierarchy" + extra
    if spec.sensitive and name == spec.sensitive.name:
        sev = spec.sensitive.severity
        return "sensitive", ("protected by l-diversity" + (f"; severity table of {len(sev)} value(s)" if sev
                                                           else "; no severity table (cg engines refuse it)")) + extra
    if name in spec.passthrough:
        return "passthrough", "listed in passthrough: released unchanged" + extra
    return "withheld", ("not in the spec: never released" if not keys else "; ".join(keys) + ": not released")


def table(spec: DatasetSpec, columns: list[str], text: str) -> list[tuple[str, str, str]]:
    """``(column, fate, reason)`` for every column of the file: the spec decides the fate; the reason is the
    drafted one when the spec's comment table gives the same fate, else what the spec says."""
    drafted = parse(text)
    out = []
    for name in columns:
        fate, why = spec_fate(spec, name)
        said = drafted.get(name)
        out.append((name, fate, said[1] if said and said[0] == fate else why))
    return out
