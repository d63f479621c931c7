"""The privacy defaults of the engines whose defaults differ from PrivacyRequirement's: the one table of them.

PrivacyRequirement's own defaults are k 5, max_suppression 0 and no l, t or risk bound. Each engine's
Params take its row here (``privacy_defaults``); ``anonstream engines`` shows them, and docs/operations.md's
table "Privacy defaults by engine" is generated from this table (tests/stream/config/test_reference.py
checks it). A module of its own, so that engine modules need not import the registry that loads them.
"""

from __future__ import annotations

from typing import Any

PRIVACY_DEFAULTS: dict[str, dict[str, Any]] = {
    "random": {"max_suppression": 0.005},  # the KGEN paper's 0.5 %
    "kgen": {"max_suppression": 0.005},  # the paper's 0.5 % stakeholder requirement
    "local-recode": {"max_suppression": 0.01},  # rows that may stay suppressed after the last round
    "pbg-ea": {"max_suppression": 0.01},  # the paper's suppression budget eta
    "cg-diverse": {"l": 3},  # l_min: diversity is what the engine is for (it needs l >= 2)
}
