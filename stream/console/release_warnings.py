"""A release's risk warnings sorted into "expected for this engine and these settings" or "act".

The rules live with the worker (:mod:`stream.worker.risk_warnings`), which logs and counts the warnings
by kind as it releases (``anonstream_last_release_risk_warnings{kind}``); the console (release page,
releases list, sign-off report) shows the same split through these names.
"""

from __future__ import annotations

from stream.worker.risk_warnings import ACT, CG_ENGINES, EXPECTED, classify, needs_action

__all__ = ["ACT", "CG_ENGINES", "EXPECTED", "classify", "needs_action"]
