"""The ledger owns its privacy policy: recorded once, a disagreeing run refused, changes audited."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from db import Database, budget
from db.dp_policy import PolicyMismatch, PolicyTerms, add_feed, check_policy, ensure_policy, read_policy, set_cap
from db.models import AuditEntry

TERMS = PolicyTerms("station-day", 10.0, 1.5, 1e-6, 1.0, ("default",))


def test_recorded_once_then_every_disagreement_is_refused(ledger_db: Database) -> None:
    with ledger_db.read() as s:
        assert read_policy(s) is None
    with ledger_db.unit() as s:
        assert ensure_policy(s, TERMS, ("default",), actor="first") == TERMS
    for asked, words in [(PolicyTerms("feed-day", 10.0, 1.5, 1e-6, 1.0), "blocks feed-day"),
                         (PolicyTerms("station-day", 1000.0, 99.0, 1e-6, 1.0), "cap_epsilon 1000"),
                         (PolicyTerms("station-day", 10.0, 1.5, 1e-9, 1.0), "delta 1e-09"),
                         (PolicyTerms("station-day", 10.0, 1.5, 1e-6, 100.0), "max_epsilon 100")]:
        with pytest.raises(PolicyMismatch, match=words), ledger_db.unit() as s:
            ensure_policy(s, asked, ("default",), actor="later")
    with pytest.raises(PolicyMismatch, match="feed other is not in"), ledger_db.unit() as s:
        ensure_policy(s, TERMS, ("other",), actor="later")
    with ledger_db.read() as s:
        assert read_policy(s) == TERMS  # nothing a refused run asked was recorded
        actions = [a.action for a in s.execute(select(AuditEntry)).scalars()]
    assert actions == ["dp-policy-recorded"]


def test_caps_and_feeds_change_only_by_audited_commands(ledger_db: Database) -> None:
    with ledger_db.unit() as s:
        ensure_policy(s, TERMS, ("default",), actor="first")
        budget.charge(s, ["station:S1/day:2024-01-01", "station:S2/day:2024-01-01"], 1.5, TERMS.cap_rho,
                      purpose="x")
    with ledger_db.unit() as s:
        assert set_cap(s, 12.0, 2.0, actor="ops") == (1.5, 2.0)
        assert set_cap(s, 11.0, 1.8, actor="ops", block="station:S2/day:2024-01-01") == (2.0, 1.8)
        assert add_feed(s, "north", actor="ops") and not add_feed(s, "north", actor="ops")
    with ledger_db.read() as s:
        policy = read_policy(s)
        assert policy is not None and policy.cap_epsilon == 12.0 and policy.feeds == ("default", "north")
        left = budget.remaining(s, ["station:S1/day:2024-01-01", "station:S2/day:2024-01-01"])
        assert left == {"station:S1/day:2024-01-01": (2.0, 1.5), "station:S2/day:2024-01-01": (1.8, 1.5)}
        entries = s.execute(select(AuditEntry).order_by(AuditEntry.id)).scalars()
        audit = [(a.action, a.actor, a.subject) for a in entries]
    assert audit == [("dp-policy-recorded", "first", None), ("dp-cap-set", "ops", "all blocks"),
                     ("dp-cap-set", "ops", "station:S2/day:2024-01-01"), ("dp-feed-added", "ops", "north")]
    check_policy(policy, PolicyTerms("station-day", 12.0, 2.0, 1e-6, 1.0), ("north",))  # agrees now


def test_no_policy_no_cap_change(ledger_db: Database) -> None:
    with pytest.raises(PolicyMismatch, match="no privacy policy yet"), ledger_db.unit() as s:
        set_cap(s, 12.0, 2.0, actor="ops")
