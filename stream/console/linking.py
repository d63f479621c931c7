"""What the linking guard blocked and why, for the console's pages (docs/privacy.md, "Linking").

Blocked reports are never released: the same report id released before (``report``), the same content
as a report already released, i.e. a re-send (``content``; reports sharing their content in one export,
such as co-offenders, are each released, not blocked), or a person already released (``person``).
"""

from __future__ import annotations

from html import escape
from typing import Any

from stream.wire.manifest import BLOCK_REASONS, BLOCK_RULES


def blocked_text(counts: dict[str, Any]) -> str:
    """One line from a manifest's counts: ``3 (content 3: same content as ...)``, or ``0``."""
    parts = [f"{rule} {counts[f'blocked_{rule}']}: {BLOCK_REASONS[rule]}" for rule in BLOCK_RULES
             if counts.get(f"blocked_{rule}")]
    total = counts.get("blocked", 0)
    return f"{total} ({'; '.join(parts)})" if parts else str(total)


def linking_section(counters: list[dict[str, Any]]) -> str:
    """The health page's section: reports blocked per rule (from the ``link-guard`` counters), with why."""
    by: dict[str, int] = {}
    for c in counters:
        if c.get("kind") == "link-guard":
            by[c["reason"]] = by.get(c["reason"], 0) + int(c["count"])
    rows = "".join(f"<tr><td>{escape(rule)}</td><td class=num>{n}</td><td>{escape(BLOCK_REASONS.get(rule, rule))}"
                   "</td></tr>" for rule, n in sorted(by.items()))
    note = ("<p class=muted>blocked reports are never released. Reports sharing their content in one export "
            "(co-offenders) are each released once; only occurrences beyond those already released are "
            "blocked.</p>")
    if not rows:
        return f"<h2>Linking guard</h2><p>nothing blocked</p>{note}"
    return ("<h2>Linking guard</h2><table class=linking><thead><tr><th>rule</th><th>blocked</th><th>why</th></tr>"
            f"</thead><tbody>{rows}</tbody></table>{note}")
