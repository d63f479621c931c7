"""The console's Jinja2 templates (stream/console/templates/) and the filters every page shares.

Autoescaping is on for every template: a value from the ledger is always text, never markup. One
timestamp format everywhere (:func:`utc`: ``YYYY-MM-DD HH:MM:SS UTC``), one way to write a value for
people (:func:`stream.console.pages.human`), and ε beside ρ (:func:`epsilon`, three significant digits).
"""

from __future__ import annotations

import functools
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

TEMPLATES = Path(__file__).resolve().parent / "templates"


def fmt(v: Any, nd: int = 3) -> str:
    """A float to ``nd`` decimals, other values as text, ``–`` for none."""
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:.{nd}f}"
    return str(v)


def human(v: Any, nd: int = 4) -> str:
    """A value as a person reads it: ``published 4, stored 1`` for a dict, ``a, b`` for a list, ``yes``/``no``,
    ``–`` for nothing; never a Python repr or raw JSON."""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, dict):
        items = [(k, x) for k, x in v.items() if x is not None]
        return "; ".join(f"{k} {human(x, nd)}" for k, x in items) if items else "–"
    if isinstance(v, list | tuple):
        return ", ".join(human(x, nd) for x in v) if v else "–"
    if isinstance(v, float):
        return f"{v:.{nd}g}"
    return "–" if v == "" else fmt(v, nd)


def utc(value: Any) -> str:
    """A time as ``YYYY-MM-DD HH:MM:SS UTC`` (ISO text or a datetime; naive counts as UTC); ``–`` for none."""
    if value is None or value == "":
        return "–"
    if isinstance(value, datetime):
        t = value
    else:
        try:
            t = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
        except ValueError:
            return str(value)
    t = t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)
    return t.strftime("%Y-%m-%d %H:%M:%S UTC")


def day(value: Any) -> str:
    """The UTC day of a time (``YYYY-MM-DD``), for window starts; ``–`` for none."""
    text = utc(value)
    return text[:10] if text != "–" and text.endswith("UTC") else text


@functools.lru_cache(maxsize=4096)
def _eps(rho: float, delta: float) -> float:
    from core.dp.mechanism import epsilon_from_rho

    return epsilon_from_rho(rho, delta)


def epsilon(rho: Any, delta: Any) -> str:
    """The ε of (ε, δ)-DP that ρ-zCDP implies, to 3 significant digits; ``–`` when ρ or δ is unknown."""
    try:
        return f"{_eps(float(rho), float(delta)):#.3g}"
    except (TypeError, ValueError):
        return "–"


def sig(value: Any, digits: int = 3) -> str:
    """A number to ``digits`` significant digits (``–`` for none)."""
    if value is None:
        return "–"
    try:
        return f"{float(value):.{digits}g}"
    except (TypeError, ValueError):
        return str(value)


def pct(value: Any, nd: int = 2) -> str:
    """A share as a percentage (``12.50%``); ``–`` for none."""
    return "–" if value is None else f"{100 * float(value):.{nd}f}%"


def url_part(value: Any) -> str:
    """One path segment, percent-encoded (a release or window id in a link)."""
    return quote(str(value), safe="")


@functools.lru_cache(maxsize=1)
def environment() -> Environment:
    """The shared environment: autoescaping on, undefined names an error, the filters above."""
    from stream.console.verdict import age_text

    env = Environment(loader=FileSystemLoader(str(TEMPLATES)), autoescape=select_autoescape(default=True),
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters.update(utc=utc, day=day, epsilon=epsilon, sig=sig, pct=pct, fixed=fmt, human=human,
                       url_part=url_part, age=age_text, zip=lambda a, b: list(zip(a, b, strict=False)))
    return env


def render(name: str, ctx: dict[str, Any] | None = None, **values: Any) -> str:
    """Template ``name`` with the page context (``verdict``, ``operator``: :func:`page_context`) and values."""
    base = {"verdict": None, "operator": False, "json_href": None}
    return environment().get_template(name).render({**base, **(ctx or {}), **values})
