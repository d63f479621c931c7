"""Checks shared by the hierarchy-free engines."""

from __future__ import annotations

from core.encoding import EncodedBatch
from core.engines.base import Engine, EngineParams, require_models, require_rows


def check_k_only(engine: Engine, batch: EncodedBatch, params: EngineParams) -> None:
    """These engines guarantee k-anonymity only: refuse l-diversity and t-closeness requests."""
    require_models(engine, params)
    require_rows(batch, params.k)
