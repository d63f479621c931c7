"""The intersection attack (stream/testing/linking.py, bench/linking_attack.py's harness) over the delay mode
discloses nothing more than over windows: the same overlapping days (8 % of day 1 again under another station
with new ids), the same counts of linked, disclosed and narrowed reports (none), each shared report released
at most once."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.attacks import intersection_attack
from stream.testing.linking import KEY, SCHEMA, overlapping_days, run_stream
from stream.testing.linking_delay import run_delay

K = 5


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANONSTREAM_FINGERPRINT_KEY", KEY)


def test_delay_mode_discloses_no_more_than_windows(tmp_path: Path) -> None:
    guard = "content"  # the default (the harness finds each shared report's releases by its content fingerprint)
    day1, day2, shared = overlapping_days(per_day=150, overlap=0.08, seed=3)
    (tmp_path / "w").mkdir()
    (tmp_path / "d").mkdir()
    results = {}
    for name, (rels, member) in (("windows", run_stream(tmp_path / "w", "castle", K, (day1, day2), shared, guard)),
                                 ("delay", run_delay(tmp_path / "d", K, (day1, day2), shared, guard))):
        res = intersection_attack(rels, shared, SCHEMA, K, membership=member)
        assert res.inconsistent == 0  # every release the attack reads is true of the shared reports
        results[name] = res
        assert all(len(m) <= 1 for m in member)  # a re-sent report is never released again
    w, d = results["windows"], results["delay"]
    assert (d.linked, d.disclosed, d.narrowed) == (w.linked, w.disclosed, w.narrowed) == (0, 0, 0), d.as_dict()
