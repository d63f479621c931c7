"""What the linking guard blocked and why, for the console's pages (docs/privacy.md, "Linking").

Blocked reports are never released: the same report id released before (``report``), the same content
as a report already released, i.e. a re-send (``content``; reports sharing their content in one export,
such as co-offenders, are each released, not blocked), or a person already released (``person``).
"""

from __future__ import annotations

from typing import Any

from stream.wire.manifest import BLOCK_REASONS, BLOCK_RULES


def blocked_text(counts: dict[str, Any]) -> str:
    """One line from a manifest's counts: ``3 (content 3: same content as ...)``, or ``0``."""
    parts = [f"{rule} {counts[f'blocked_{rule}']}: {BLOCK_REASONS[rule]}" for rule in BLOCK_RULES
             if counts.get(f"blocked_{rule}")]
    total = counts.get("blocked", 0)
    return f"{total} ({'; '.join(parts)})" if parts else str(total)


def blocked_by_rule(counters: list[dict[str, Any]]) -> list[tuple[str, int]]:
    """``[(rule, reports blocked)]`` from the ``link-guard`` counters, by rule name."""
    by: dict[str, int] = {}
    for c in counters:
        if c.get("kind") == "link-guard":
            by[c["reason"]] = by.get(c["reason"], 0) + int(c["count"])
    return sorted(by.items())


def linking_section(counters: list[dict[str, Any]]) -> str:
    """The health page's section (templates/linking.html): reports blocked per rule, with why."""
    from stream.console.templating import render

    return render("linking.html", None, by=blocked_by_rule(counters), reasons=BLOCK_REASONS)
