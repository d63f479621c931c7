"""Helpers of the ``pbg-ea`` engine (PBG paper): properties and quality indices, dominance and the
bounded archive, evolutionary operators, the search loop, selection policies and front assessment."""

from core.engines.pbg.archive import Archive, box_dominates, boxes, dominates, theorem2_bound
from core.engines.pbg.policy import Policy, parse_policy
from core.engines.pbg.properties import DIRECTIONS, Indices, PropertyEvaluator, canonical_index, eta_rows
from core.engines.pbg.search import SearchConfig, SearchResult, run_search

__all__ = [
    "DIRECTIONS", "Archive", "Indices", "Policy", "PropertyEvaluator", "SearchConfig", "SearchResult",
    "box_dominates", "boxes", "canonical_index", "dominates", "eta_rows", "parse_policy", "run_search",
    "theorem2_bound",
]
