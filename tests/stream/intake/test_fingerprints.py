"""The keyed fingerprints are HMAC-SHA256 of their documented texts, whatever the key (the keyed state
each one copies is cached per key, and a cache must never hand one key's state to another)."""

from __future__ import annotations

import hmac

from hypothesis import given, settings
from hypothesis import strategies as st

from stream.intake.fingerprints import content_fingerprint, fingerprint, person_fingerprint


def reference(key: bytes, text: str) -> str:
    return hmac.digest(key, text.encode(), "sha256").hex()


@settings(max_examples=60, deadline=None)
@given(keys=st.lists(st.binary(min_size=1, max_size=80), min_size=1, max_size=20),
       station=st.text(max_size=8), report=st.text(max_size=12), person=st.lists(st.text(max_size=8), max_size=3))
def test_each_fingerprint_is_the_hmac_of_its_text_under_its_own_key(keys: list[bytes], station: str, report: str,
                                                                     person: list[str]) -> None:
    for key in keys:  # more keys than the cache holds, in any order
        assert fingerprint(key, station, report) == reference(key, f"report\x1f{station}\x1f{report}")
        norm = [" ".join(v.split()).casefold() for v in person]
        expected = reference(key, "person\x1f" + "\x1f".join(norm)) if any(norm) else None
        assert person_fingerprint(key, person) == expected
        fields = [("event_time", "2024-01-01T00:00:00+00:00"), ("age", report)]
        text = ("person-content\x1f" + "\x1f".join(norm) + "\x1e2024-01-01T00:00:00+00:00" if any(norm) else
                "content\x1f" + "\x1f".join(f"{n}\x1e{v}" for n, v in sorted(fields)))
        assert content_fingerprint(key, person, fields) == reference(key, text)
