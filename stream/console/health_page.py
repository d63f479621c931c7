"""The console's Health page: the verdict first, then what needs review (held windows), then every fact.

The verdict (:mod:`stream.console.verdict`) is one line at the top: healthy, or the first thing that needs
action and what to do, with every other finding below it. Held windows come right after it (with their
release button when the request carries the operator token), so a held window is never below the fold.
Every value is written for people: counts as ``published 4, stored 1``, ages as ``3 min``, times as
``YYYY-MM-DD HH:MM:SS UTC``, never a Python repr or raw JSON. Rendered from templates/health.html.
"""

from __future__ import annotations

from typing import Any

from stream.console.linking import blocked_by_rule
from stream.console.pages import human
from stream.console.templating import render
from stream.wire.manifest import BLOCK_REASONS


def health_page(h: dict[str, Any], ctx: dict[str, Any] | None = None) -> str:
    """The Health page: verdict, held windows, worker, pool, linking guard, lag, dead letters, registry, feeds."""
    from stream.console.verdict import verdict

    v = h.get("verdict") or verdict(h).as_dict()
    in_process = h["worker"].get("in_process")
    if isinstance(in_process, dict):
        in_process = in_process.get("error") or human(in_process)
    return render("health.html", {"verdict": v, **(ctx or {})}, title="Health", h=h, v=v, in_process=in_process,
                  by=blocked_by_rule(h.get("duplicates") or []), reasons=BLOCK_REASONS, json_href="/api/health")
