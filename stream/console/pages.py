"""HTML pages of the console, rendered from Jinja2 templates (stream/console/templates/), no scripts, no
external assets.

Each page renders the same dict its JSON API returns (linked at the top of the page); autoescaping makes
every value text. ``ctx`` is the page context the web app passes (:func:`stream.console.web.page_context`):
``verdict`` (the deployment's verdict, shown as a banner on every page when it is not healthy, and as a
badge on the Health link) and ``operator`` (the request carries a valid operator token: only then are the
control forms shown). Without ``ctx`` a page renders with neither.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from stream.console.templating import fmt, human, render

__all__ = ["fmt", "human", "link_audit", "subject_href"]  # fmt, human: kept here for the pages' callers

Ctx = dict[str, Any] | None
MAX_ROWS = 60  # cells shown per DP count table on a release page (the JSON has them all)


def subject_href(action: str, subject: Any) -> str | None:
    """The page of an audit entry's subject: a release, a window, or a station's releases; None for others."""
    if not subject:
        return None
    s = str(subject)
    if action.startswith("release-"):
        return f"/releases/{quote(s, safe='')}"
    if action.startswith("window-"):
        return f"/windows/{quote(s, safe='')}"
    if action.startswith("station-"):
        return f"/releases?station={quote(s, safe='')}"
    return None


def link_audit(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Audit rows with ``subject_href`` (the subject's page) added."""
    return [{**a, "subject_href": subject_href(str(a.get("action") or ""), a.get("subject"))} for a in rows]


def releases_page(data: dict[str, Any], ctx: Ctx = None) -> str:
    return render("releases.html", ctx, title="Releases", data={"query": {}, **data},
                  json_href="/api/releases" + _query(data.get("query") or {}))


def _query(raw: dict[str, Any]) -> str:
    from urllib.parse import urlencode

    q = urlencode({k: v for k, v in raw.items() if v})
    return f"?{q}" if q else ""


def release_page(d: dict[str, Any], ctx: Ctx = None) -> str:
    from stream.console.linking import blocked_text

    blocked = blocked_text({**(d.get("manifest") or {}).get("counts", {}), "blocked": d["blocked"]})
    dp = (d.get("manifest") or {}).get("dp")
    return render("release.html", ctx, title=f"Release {d['id']}", d={**d, "audit": link_audit(d.get("audit", []))},
                  blocked=blocked, dp=dp, max_rows=MAX_ROWS, json_href=f"/api/releases/{quote(d['id'], safe='')}")


def audit_page(rows: list[dict[str, Any]], ctx: Ctx = None) -> str:
    return render("audit.html", ctx, title="Audit trail", rows=link_audit(rows), json_href="/api/audit")


def result_page(title: str, result: dict[str, Any], back: str, ctx: Ctx = None) -> str:
    return render("result.html", ctx, title=title, result=result, back=back)


def error_page(status: int, message: str, ctx: Ctx = None) -> str:
    return render("error.html", ctx, title=f"Error {status}", message=message)


def login_page(next_path: str, message: str | None = None) -> str:
    """The console's sign-in form: the operator token, kept as a session cookie."""
    return render("login.html", None, title="Sign in", next_path=next_path, message=message)


def overview_page(h: dict[str, Any], latest: dict[str, Any], ctx: Ctx = None) -> str:
    """The landing page: the verdict first, then what waits and the latest releases."""
    return render("overview.html", ctx, title="Overview", h=h, v=h["verdict"], latest=latest,
                  json_href="/api/health")


def windows_page(rows: list[dict[str, Any]], states: tuple[str, ...], ctx: Ctx = None) -> str:
    from db.console_queries import WINDOW_STATES

    return render("windows.html", ctx, title="Windows", rows=rows, states=states, all_states=WINDOW_STATES,
                  json_href="/api/windows?state=" + ",".join(states))


def window_page(w: dict[str, Any], ctx: Ctx = None) -> str:
    return render("window.html", ctx, title=f"Window {w['id']}", w={**w, "audit": link_audit(w.get("audit", []))})
