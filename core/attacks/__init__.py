"""Adversaries run against our own releases (benchmarks and tests): see :mod:`core.attacks.linking`."""

from core.attacks.linking import AttackResult, CoverIndex, PersonOutcome, intersection_attack

__all__ = ["AttackResult", "CoverIndex", "PersonOutcome", "intersection_attack"]
