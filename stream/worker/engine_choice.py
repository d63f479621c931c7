"""Which engine a worker runs: the configured one, else the CG engine its privacy settings call for, else the
first importable fallback.

The CG engine called for is ``cg-diverse`` when the feed requires distinct ``l`` >= 2 (the stream's default,
issue 39: no released class may hold a single offence) and ``cg-kanon`` when it requires k only (``l`` 1 or
unset). ``bench/ell_default.py`` measured the choice: on the bundled crime windows and the NYPD export's
monthly windows cg-diverse at l 2 lost less than cg-kanon at k 5 in three cases of four (6 % more in the
fourth) in about its CPU time, and released no single-offence class (docs/engines/cg-diverse.md).
"""

from __future__ import annotations

from core.engines.registry import engine_module, engine_names, get_engine
from stream.config.settings import Settings

DEFAULT_ENGINE = "cg-kanon"
"""The default engine when a feed requires k only."""
DIVERSE_ENGINE = "cg-diverse"
"""The default engine when a feed requires distinct l >= 2 (the stream's default)."""
FALLBACK_ENGINES = ("mondrian", "optimal")


def default_engine(settings: Settings) -> str:
    """The CG engine for this feed's privacy settings: ``cg-diverse`` when they ask for distinct l >= 2."""
    privacy = settings.privacy
    if privacy.l is not None and privacy.l >= 2 and privacy.l_kind == "distinct":
        return DIVERSE_ENGINE
    return DEFAULT_ENGINE


def resolve_engine(settings: Settings) -> str:
    """The configured engine, else :func:`default_engine` when registered, else the first importable fallback."""
    if settings.engine:
        return settings.engine
    for name in (default_engine(settings), *FALLBACK_ENGINES):
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
    return engine_module(settings.engine or default_engine(settings))
