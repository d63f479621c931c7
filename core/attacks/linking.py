"""The intersection (composition) attack on several releases of overlapping data.

The adversary knows, for each target person, the original quasi-identifier values (e.g. age, sex,
suburb, postcode, reporter) and in which releases the person's report appears. For every such
release it takes the released rows whose generalized labels *cover* the person's values (the same
``covers`` test the independent verifier uses, so hierarchy labels, intervals ``[lo-hi]`` and
``[lo, hi)``, value sets ``{a, b}`` from kmember/lgreedy, masked codes and ``*`` all work), and
intersects the sets of sensitive values of those candidate rows across releases.

Per person it reports:

* ``consistent``: the sensitive values present in the candidate rows of every release;
* ``candidates``: the smallest number, over the releases, of candidate rows whose sensitive value
  is consistent (the adversary's best narrowing);
* ``disclosed``: the intersection is exactly the person's true value while no single release on its
  own gave that away (the linking gain);
* ``homogeneous``: a single release already leaves one value (a homogeneity disclosure that
  k-anonymity alone does not prevent; ``-l 2`` does; it is counted apart, it is not linking);
* ``narrowed``: ``candidates < k`` although every single release gave at least ``k``.

Pure: no I/O; the caller passes released rows and the adversary's knowledge as DataFrames.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from core.encoding import Schema


@dataclass(frozen=True)
class PersonOutcome:
    """What the adversary learns about one person."""

    releases: tuple[int, ...]
    consistent: frozenset[str]
    candidates: int
    single_min: int
    disclosed: bool
    homogeneous: bool
    narrowed: bool


@dataclass
class AttackResult:
    """Totals of an intersection attack (``outcomes`` per person, in the adversary's order)."""

    k: int
    persons: int = 0
    linked: int = 0
    disclosed: int = 0
    narrowed: int = 0
    homogeneous: int = 0
    inconsistent: int = 0
    outcomes: list[PersonOutcome] = field(default_factory=list)

    def as_dict(self) -> dict[str, int]:
        return {"k": self.k, "persons": self.persons, "linked": self.linked, "disclosed": self.disclosed,
                "narrowed": self.narrowed, "homogeneous": self.homogeneous, "inconsistent": self.inconsistent}


class CoverIndex:
    """Which released rows of one release cover a raw QI vector; ``covers`` results are cached."""

    def __init__(self, rows: pd.DataFrame, schema: Schema) -> None:
        self.schema = schema
        self.sensitive = rows[schema.sensitive].astype(str).to_numpy() if schema.sensitive else None
        self.codes: dict[str, np.ndarray] = {}
        self.labels: dict[str, np.ndarray] = {}
        self._cache: dict[tuple[str, str], np.ndarray] = {}
        for q in schema.qi_names:
            codes, uniques = pd.factorize(rows[q].astype(str))
            self.codes[q], self.labels[q] = codes, np.asarray(uniques, dtype=object)
        self.n = len(rows)

    def _label_mask(self, q: str, value: str) -> np.ndarray:
        key = (q, value)
        if key not in self._cache:
            hier = self.schema.hierarchies[q]
            self._cache[key] = np.array([hier.covers(str(lab), value) for lab in self.labels[q]], dtype=bool)
        return self._cache[key]

    def rows_covering(self, values: dict[str, str]) -> np.ndarray:
        """Positions of released rows whose every QI label generalizes ``values[q]``."""
        mask = np.ones(self.n, dtype=bool)
        for q in self.schema.qi_names:
            lab = self._label_mask(q, values[q])
            mask &= lab[self.codes[q]] if len(lab) else np.zeros(self.n, dtype=bool)
        return np.flatnonzero(mask)


def intersection_attack(releases: Sequence[pd.DataFrame], persons: pd.DataFrame, schema: Schema, k: int,
                        membership: Sequence[Sequence[int]] | None = None) -> AttackResult:
    """Run the attack on ``releases`` (released rows: QI labels + sensitive value) for ``persons``.

    ``persons`` holds each target's raw QI values and true sensitive value (columns named as in the
    schema). ``membership[i]`` lists the releases person ``i`` appears in (the adversary's knowledge);
    None means every release.
    """
    if schema.sensitive is None:
        raise ValueError("the intersection attack needs a sensitive attribute")
    index = [CoverIndex(r, schema) for r in releases]
    result = AttackResult(k=k)
    raw = persons[schema.qi_names].astype(str).to_dict("records")
    truth = persons[schema.sensitive].astype(str).to_numpy()
    for i, values in enumerate(raw):
        which = tuple(range(len(releases))) if membership is None else tuple(sorted(set(membership[i])))
        if not which:
            continue
        outcome = _attack_one(index, which, values, str(truth[i]), k)
        result.outcomes.append(outcome)
        result.persons += 1
        result.linked += len(which) > 1
        result.disclosed += outcome.disclosed
        result.narrowed += outcome.narrowed
        result.homogeneous += outcome.homogeneous
        result.inconsistent += str(truth[i]) not in outcome.consistent
    return result


def _attack_one(index: list[CoverIndex], which: tuple[int, ...], values: dict[str, str], truth: str,
                k: int) -> PersonOutcome:
    per_release: list[np.ndarray] = []
    consistent: set[str] | None = None
    for r in which:
        sens = index[r].sensitive
        assert sens is not None
        found = sens[index[r].rows_covering(values)]
        per_release.append(found)
        consistent = set(found) if consistent is None else consistent & set(found)
    assert consistent is not None
    single_min = min(len(f) for f in per_release)
    homogeneous = any(len(set(f)) == 1 for f in per_release)
    candidates = min(int(np.isin(f, list(consistent)).sum()) for f in per_release) if consistent else 0
    linked = len(which) > 1
    disclosed = linked and consistent == {truth} and not homogeneous
    narrowed = linked and candidates < k <= single_min
    return PersonOutcome(which, frozenset(consistent), candidates, single_min, disclosed, homogeneous, narrowed)
