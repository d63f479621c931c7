"""The adversary: join each new release with all earlier ones on their QIs, using known person links.

Persons recur over three days (the same name, date of birth and QIs in new reports). The adversary
knows every target person's QI values and in which releases that person appears (the "known person
links"). For a person P and a release R, P's candidate records are the records of R whose
generalized QIs cover P's values. Joining releases gives the adversary, per person, the tuple of
candidate sets of every release P is linked to.

With the ``person`` guard no person is in two releases, so the join never narrows anything and
every person's candidate set stays at least k. With the ``report`` guard the same stream links
persons across releases, which is exactly what the person guard removes.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pytest
from pydantic import SecretStr
from sqlalchemy import select

import migrations
from db import Database, PoolRepository
from db.models import PendingReport, ReleaseRecords
from db.windows import WindowPolicy
from stream.config.privacy import StreamPrivacy
from stream.config.settings import Settings
from stream.intake.fingerprints import fingerprint
from stream.intake.validate import Clean, ReportValidator, to_incoming
from stream.io.specs import load_schema
from stream.testing.reports import DAY, day_of_reports, spec_ref
from stream.testing.services import PostgresServer
from stream.worker.release import Orchestrator, window_policy

pytestmark = [pytest.mark.postgres]
LinkGuard = Literal["off", "report", "content", "person"]
KEY = b"adversary-test-key"
PERSON = ("name", "dob", "age", "sex", "suburb", "postcode")


def _days() -> list[list[dict[str, Any]]]:
    """Three days of one station; on days 2 and 3 half the reports concern persons of day 1."""
    rng = np.random.default_rng(4)
    base = day_of_reports(1, 240, seed=21)["S1"]
    days = [base]
    for d in (1, 2):
        fresh = day_of_reports(1, 240, seed=21 + d, day=DAY + timedelta(days=d))["S1"]
        for i, r in enumerate(fresh):
            r["report_id"] = f"S1-d{d}-{i:05d}"
            if i % 2 == 0:
                who = base[int(rng.integers(len(base)))]
                r.update({c: who[c] for c in PERSON})
        days.append(fresh)
    return days


def _run(pg: PostgresServer, tmp_path: Path, guard: LinkGuard) -> tuple[Settings, Database, list[dict[str, Any]]]:
    url = pg.create_database("link")
    migrations.upgrade(url)
    settings = Settings(database_url=url, data_dir=tmp_path, spec=spec_ref(),
                        privacy=StreamPrivacy(link_guard=guard, k=5), windows=WindowPolicy(idle_timeout_s=1.0),
                        fingerprint_key=SecretStr(KEY.decode()))
    schema = load_schema(settings.spec)
    db = Database(url)
    pool = PoolRepository(db, window_policy(settings))
    validator = ReportValidator(schema, settings.person_columns)
    orch = Orchestrator(settings, db, schema, "adversary-test")
    reports: list[dict[str, Any]] = []
    now = datetime(2030, 1, 1, tzinfo=UTC)
    for d, day in enumerate(_days()):
        incoming = []
        for r in day:
            clean = validator.check(r)
            assert isinstance(clean, Clean)
            incoming.append(to_incoming(clean, KEY, settings.window_key_for("S1"), guard != "off"))
        pool.ingest(incoming, [], now + timedelta(hours=d))
        assert orch.close_due(now + timedelta(hours=d, minutes=5)), f"day {d} was not released"
        reports += day
    return settings, db, reports


def _releases_by_person(db: Database, reports: list[dict[str, Any]]) -> dict[tuple[str, str], set[str]]:
    by_fp = {fingerprint(KEY, "S1", str(r["report_id"])): (str(r["name"]), str(r["dob"])) for r in reports}
    out: dict[tuple[str, str], set[str]] = defaultdict(set)
    with db.read() as s:
        for fp, rid in s.execute(select(PendingReport.fingerprint, PendingReport.release_id)
                                 .where(PendingReport.state == "released")):
            out[by_fp[fp]].add(rid)
    return out


class Adversary:
    """Holds every release's classes (distinct generalized QI tuples with their sizes)."""

    def __init__(self, db: Database, settings: Settings) -> None:
        self.schema = load_schema(settings.spec)
        self.classes: dict[str, dict[tuple[str, ...], int]] = {}
        with db.read() as s:
            for rel in s.execute(select(ReleaseRecords)).scalars():
                idx = [rel.columns.index(q) for q in self.schema.qi_names]
                sizes: dict[tuple[str, ...], int] = defaultdict(int)
                for row in rel.rows:
                    sizes[tuple(str(row[i]) for i in idx)] += 1
                self.classes[rel.release_id] = dict(sizes)
        self._covers: dict[tuple[str, str, str], bool] = {}

    def covers(self, q: str, label: str, value: str) -> bool:
        key = (q, label, value)
        if key not in self._covers:
            self._covers[key] = self.schema.hierarchies[q].covers(label, value)
        return self._covers[key]

    def candidates(self, person: dict[str, Any]) -> dict[str, int]:
        """Per release, how many records are consistent with the person's known QI values.

        The adversary knows the person's own attributes (age, sex, suburb, postcode), not report
        details such as who reported it; unknown QIs match any label."""
        qis = self.schema.qi_names
        return {rid: sum(n for labels, n in classes.items()
                         if all(q not in person or self.covers(q, lab, str(person[q]))
                                for q, lab in zip(qis, labels, strict=True)))
                for rid, classes in self.classes.items()}


@pytest.mark.parametrize("guard", ["person"])
def test_adversary_joining_releases_finds_no_one_below_k(pg: PostgresServer, tmp_path: Path, guard: LinkGuard) -> None:
    settings, db, reports = _run(pg, tmp_path, guard)
    linked = _releases_by_person(db, reports)
    people = {(str(r["name"]), str(r["dob"])): {c: r[c] for c in PERSON} for r in reports}
    assert len(linked) > 100
    # the person guard keeps every person in at most one release: the join has nothing to intersect
    assert max(len(rels) for rels in linked.values()) == 1
    adversary = Adversary(db, settings)
    for who, rels in linked.items():
        cands = adversary.candidates(people[who])
        joined = min(cands[r] for r in rels)  # the adversary's best candidate set over linked releases
        assert joined >= settings.privacy.k, (who, cands)
    db.dispose()


def test_report_guard_alone_links_persons_across_releases(pg: PostgresServer, tmp_path: Path) -> None:
    settings, db, reports = _run(pg, tmp_path, "report")
    linked = _releases_by_person(db, reports)
    recurring = [who for who, rels in linked.items() if len(rels) > 1]
    assert recurring, "persons recur across releases when only reports are guarded"
    people = {(str(r["name"]), str(r["dob"])): {c: r[c] for c in PERSON} for r in reports}
    adversary = Adversary(db, settings)
    for who in recurring:  # each single release still hides the person among >= k records
        cands = adversary.candidates(people[who])
        assert all(cands[r] >= settings.privacy.k for r in linked[who])
    db.dispose()
