"""Which engine a worker runs: the configured one, else ``cg-kanon``, else the first importable fallback."""

from __future__ import annotations

from core.engines.registry import engine_names, get_engine
from stream.config.settings import Settings

DEFAULT_ENGINE = "cg-kanon"
FALLBACK_ENGINES = ("mondrian", "optimal")


def resolve_engine(settings: Settings) -> str:
    """The configured engine, else ``cg-kanon`` when registered, else the first importable fallback."""
    if settings.engine:
        return settings.engine
    for name in (DEFAULT_ENGINE, *FALLBACK_ENGINES):
        if name in engine_names():
            try:
                get_engine(name)
            except ImportError:
                continue
            return name
    return "optimal"
