"""Seeds, release ids, sampling without replacement and the publication order.

* The sample seed of a window is derived from ``settings.sample_seed`` and the window id with
  SHA-256 (never Python's ``hash()``), so a window always gets the same seed; the release id is
  derived from the window id, that seed, the signing key's id and the ledger's deployment id
  (:mod:`db.deployment`: two deployments never share an id, even with one signing key).
  Recomputing a window after a crash therefore gives the same id, and storing it twice is a no-op.
* Sampling draws from the pending pool only (released history never enters the pool of candidates),
  without replacement; unsampled reports stay pending for the next window of their key.
* The linking guard (which candidates may be released at all) is :mod:`stream.worker.link_guard`;
  docs/privacy.md has the attack each rule stops.
* Publication order: released rows are sorted canonically (by their published values, so the order
  no longer depends on the input's) and then permuted with a private seed (:func:`order_seed`, keyed
  with the fingerprint key and never published): anyone who knows the input order (by report number
  or time) learns nothing about which released row is whose, and for heterogeneous releases (ILS) the
  true matching stays hidden.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
from typing import Any, Literal

import numpy as np

SamplePolicy = Literal["all", "fraction", "max"]


def window_seed(base_seed: int, window_id: str) -> int:
    digest = hashlib.sha256(f"{base_seed}\x1f{window_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1  # fits a signed 64-bit column


def release_id(window_id: str, seed: int, capped: str = "", deployment: str = "") -> str:
    """The id of a window's release. Its content is a function of (window, seed); when an engine's
    wall-clock safety cap bound (``budget_cap_hit``) it is not, and ``capped`` (the content's digest)
    enters the id, so an id never names two contents. ``deployment`` (the worker passes its signing
    key's id and the ledger's deployment id) makes the ids of two deployments differ even for the same
    window id and seed, and even when they share a signing key."""
    suffix = f"\x1fcap{capped}" if capped else ""
    suffix += f"\x1fkey{deployment}" if deployment else ""
    return "r-" + hashlib.sha256(f"{window_id}\x1f{seed}{suffix}".encode()).hexdigest()[:22]


def sample_size(n: int, policy: SamplePolicy, fraction: float, max_size: int) -> int:
    if policy == "all":
        return n
    if policy == "fraction":
        return min(n, math.ceil(fraction * n))
    return min(n, max_size)


def draw(n: int, size: int, rng: np.random.Generator) -> np.ndarray:
    """Positions of a uniform sample without replacement, in increasing order."""
    if size >= n:
        return np.arange(n)
    return np.sort(rng.choice(n, size=size, replace=False))


def order_seed(key: bytes, release_id: str) -> int:
    """The private seed of a release's publication order: keyed, so the published seed reveals nothing."""
    return int.from_bytes(hmac.digest(key, f"order\x1f{release_id}".encode(), "sha256")[:8], "big") >> 1


def publish_order(rows: list[list[Any]], seed: int, lead: int = 0) -> list[list[Any]]:
    """``rows`` in canonical order (by their JSON text) permuted by ``seed``: independent of input order.

    The first ``lead`` values of a row (e.g. an engine's class id, whose numbering may follow the
    input) only break ties in the canonical order; with ``lead == 1`` they are renumbered by their
    first appearance in the canonical order, so class 0 is no longer "the class of the first input row".
    """
    keyed = sorted((json.dumps([*r[lead:], *r[:lead]], default=str), i) for i, r in enumerate(rows))
    canonical = [list(rows[i]) for _, i in keyed]
    if lead == 1:
        renumber: dict[Any, int] = {}
        for r in canonical:
            r[0] = renumber.setdefault(r[0], len(renumber))
    perm = np.random.default_rng([seed, 2]).permutation(len(canonical))
    return [canonical[i] for i in perm]
