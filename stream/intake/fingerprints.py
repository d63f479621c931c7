"""Keyed fingerprints of a report: the only form in which its report id, its person and its content are stored.

The validator computes them (:func:`stream.intake.validate.to_incoming`), and so does a batch run
(:mod:`stream.batch.history`); the linking guard (:mod:`stream.worker.link_guard`) compares them.
"""

from __future__ import annotations

import hashlib
import hmac
from functools import lru_cache
from typing import Any


@lru_cache(maxsize=16)
def _keyed(key: bytes) -> hmac.HMAC:
    """An HMAC-SHA256 state keyed once: each fingerprint copies it (no digest lookup per report)."""
    return hmac.new(key, digestmod=hashlib.sha256)


def _hmac_hex(key: bytes, text: str) -> str:
    """``hmac.digest(key, text, "sha256").hex()``, from the keyed state."""
    h = _keyed(key).copy()
    h.update(text.encode())
    return h.hexdigest()


def fingerprint(key: bytes, station: str, report_id: str) -> str:
    """Keyed HMAC-SHA256 of station + report id (the only form in which a report id is stored)."""
    return _hmac_hex(key, f"report\x1f{station}\x1f{report_id}")


def person_fingerprint(key: bytes, values: list[str]) -> str | None:
    """Keyed hash of the configured person columns (e.g. name, dob), normalised; None if all empty."""
    norm = [" ".join(str(v).split()).casefold() for v in values]
    if not any(norm):
        return None
    return _hmac_hex(key, "person\x1f" + "\x1f".join(norm))


def content_fingerprint(key: bytes, person: list[str], fields: list[tuple[str, str]]) -> str:
    """Keyed HMAC of a report's content, independent of its station and report id (survives re-keying).

    With person-level values (e.g. name, dob) present, the person plus the ``event_time`` field
    identify the incident, so a corrected QI or offence still matches; otherwise the given
    ``fields`` (name, value) do. ``fields`` hold canonical values (:func:`core.canonical.canonical_value`,
    built by :func:`stream.intake.validate.content_fields`) and are hashed as given; person values are
    whitespace-normalised and case-folded.
    """
    norm = [" ".join(str(v).split()).casefold() for v in person]
    if any(norm):
        when = dict(fields).get("event_time", "")
        text = "person-content\x1f" + "\x1f".join(norm) + "\x1e" + when
    else:
        text = "content\x1f" + "\x1f".join(f"{n}\x1e{v}" for n, v in sorted(fields))
    return _hmac_hex(key, text)


def content_hash(data: dict[str, Any]) -> str:
    """Unkeyed SHA-256 of a report's values (name, value pairs in name order)."""
    text = "\x1f".join(f"{k}\x1e{data[k]}" for k in sorted(data))
    return hashlib.sha256(text.encode()).hexdigest()
