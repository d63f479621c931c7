"""Write a :class:`~stream.specdraft.draft.Draft` as a commented TOML spec a person can review."""

from __future__ import annotations

import json
import textwrap
from typing import Any

from stream.specdraft.draft import Draft
from stream.specdraft.fates import draft_lines


def q(s: str) -> str:
    """A TOML basic string (JSON escapes are valid TOML escapes)."""
    return json.dumps(s, ensure_ascii=False)


def value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return repr(v)
    if isinstance(v, str):
        return q(v)
    if isinstance(v, list | tuple):
        return "[" + ", ".join(value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{q(k)} = {value(x)}" for k, x in v.items()) + " }"
    raise TypeError(type(v))


def _rows(rows: list[list[str]]) -> str:
    return "[\n" + "".join(f"    {value(r)},\n" for r in rows) + "]"


def comment(text: str, first: str = "# ", rest: str = "#   ") -> list[str]:
    """A comment wrapped at 110 columns (line breaks in column names or values become spaces)."""
    return textwrap.wrap(text, 110, initial_indent=first, subsequent_indent=rest) or [first.rstrip()]


def render(d: Draft, source: str, sampled: bool) -> str:
    out = [f"# Drafted by `anonstream spec draft` from {source} ({d.rows} rows{', a sample' if sampled else ''}).",
           "# Review every role below; `anonstream spec check FILE --spec THIS` shows how the data fits.",
           "# Rules: docs/spec.md, 'How spec draft decides'.", ""]
    if d.review:
        out.append("# Decide first:")
        for note in d.review:
            out += comment(note, "#   - ", "#     ")
        out.append("")
    out += draft_lines(d)
    out.append("")
    if d.engine:
        out.append(f"# engine: {d.engine} {d.engine_args} -- {' '.join(d.engine_why.split())}")
        out.append(f"#   as drafted: anonstream anonymize FILE --spec THIS --engine {d.engine} {d.engine_args}")
    if "id_column" not in d.keys:
        out += comment("No id_column: push needs a report id unique in the file (default column report_id), and "
                       "this file has none, so as drafted this spec is for anonymize.")
    if d.push_notes:
        out.append("# Push's checks on the drafted rows reject some (the draft cannot repair this):")
        for note in d.push_notes:
            out += comment(note, "#   - ", "#     ")
    if d.notes:
        out.append("# Changed after `spec check` on the drafted rows:")
        for note in d.notes:
            out += comment(note, "#   - ", "#     ")
    out.append("")
    out.append(f"name = {q(d.name)}")
    out.append("")
    for role, title in (("identifier", "Direct identifiers: dropped before anything else"),
                        ("passthrough", "Pass-through: released unchanged"),
                        ("withheld", "Withheld: not listed anywhere, so never released")):
        cols = d.role(role)
        out.append(f"# {title}:")
        for c in cols:
            out += comment(f"{c.name}: {c.why}", "#   ", "#     ")
        if not cols:
            out.append("#   (none)")
        if role == "identifier":
            out.append(f"identifiers = {value([c.name for c in cols])}")
        elif role == "passthrough":
            out.append(f"passthrough = {value([c.name for c in cols])}")
        out.append("")
    out.append('unknown = "error"   # a value outside a hierarchy is refused, never released')
    for key, (col, why) in d.keys.items():
        out.append(f"{key} = {q(col)}")
        out += comment(f"{key}: {why}", "#   ", "#     ")
    out.append("")
    if d.station_map:
        out += comment(f"station_map: {d.station_map_why}. The intake routes each report by its mapped id; the "
                       "column's own value is what a QI sees. Review the ids: they name the stations' windows, "
                       "budgets and releases.")
        out.append("[station_map]")
        out += [f"{q(k)} = {q(v)}" for k, v in d.station_map.items()]
        out.append("")
    out.append("[input]")
    if d.input_columns:
        out.append(f"columns = {value(list(d.input_columns))}   # the file has no header row: its columns, in order")
    out.append(f"missing = {value(d.missing_tokens)}   # cells that mean 'missing' besides empty ones")
    if d.missing_why:
        out += comment(d.missing_why)
    out.append(f"on_missing = {q(d.on_missing)}   # error | drop (rows dropped and counted) | leaf")
    if d.dates:
        out.append(f"dates = {value(d.dates)}   # dropped, but checked: a value that is not a date is refused")
    if d.encoding and d.encoding.replace("-", "").replace("_", "").lower() not in {"utf8", "utf8sig", "ascii"}:
        out += comment(f"The file was read as {d.encoding} (detected; every command detects it again). If this "
                       f"records system always exports {d.encoding}, declare it: encoding = {q(d.encoding)}")
    out.append("")
    for c in d.role("qi"):
        assert c.qi is not None
        out += comment(f"{c.name}: {c.why}")
        out += comment(f"hierarchy: {c.how}")
        out.append("[[qi]]")
        out.append(f"name = {q(c.name)}")
        out.append(f"type = {q(c.qi['type'])}")
        out.append("weight = 1")
        h = {k: v for k, v in c.qi["hierarchy"].items() if v is not None}
        if "rows" in h:
            out.append(f"hierarchy = {{ rows = {_rows(h['rows'])} }}")
        elif "tree" in h:
            out.append("")
            out.append("[qi.hierarchy.tree]")
            for group, leaves in h["tree"].items():
                out.append(f"{q(group)} = {value(leaves)}")
        else:
            out.append(f"hierarchy = {value(h)}")
        out.append("")
    sens = d.role("sensitive")
    if sens:
        out += comment(f"{sens[0].name}: {sens[0].why}")
        out += comment(f"severity: {d.severity_how}")
        out += comment(f"The stream requires distinct l >= 2 on {sens[0].name} by default (privacy.l = 2): no released "
                       "class whose members all share one value. Batch `anonymize` with k only lists such classes.")
        out.append("[sensitive]")
        out.append(f"name = {q(sens[0].name)}")
        out.append("")
        out.append("[sensitive.severity]")
        for v, s in d.severity.items():
            said = d.severity_note.get(v)
            out.append(f"{q(v)} = {s}" + (f"   # {' '.join(said.split())}" if said else ""))
    else:
        out += comment("No sensitive attribute found by name or content (offence, charge, crime, outcome, "
                       "diagnosis, income...). The CG engines (cg-kanon, cg-diverse) need one with a severity "
                       "table: add [sensitive] and [sensitive.severity] to use them; the other engines work as is.")
    return "\n".join(out) + "\n"
