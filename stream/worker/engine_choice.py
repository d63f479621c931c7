"""Which engine a worker runs: the configured one, else ``cg-kanon``, else the first importable fallback."""

from __future__ import annotations

from core.engines.registry import engine_module, engine_names, get_engine
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


def engine_module_of(settings: Settings) -> str:
    """The module of the engine :func:`resolve_engine` chooses when that module imports, without importing
    it (what a release processes' fork server loads for its children)."""
    return engine_module(settings.engine or DEFAULT_ENGINE)
