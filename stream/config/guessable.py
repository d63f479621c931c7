"""Secrets a guesser finds: keyboard walks, passphrases, hashes of common passwords, one key derived from
another. Used by :func:`stream.config.secrets.check_production_secrets` beside its randomness tests.

* :func:`guessable` asks zxcvbn (Dropbox's password-strength estimator, the ``zxcvbn`` package) for the
  guesses a cracker needs and which patterns it found: a key or token is refused when that is under
  :data:`MIN_GUESS_SHARE` of a blind search's (in log), or when dictionary words, keyboard walks,
  sequences and repeats make up :data:`MAX_PATTERN_SHARE` of it, or when it is words joined by
  separators (a passphrase). Over 2,700 generated keys and tokens (``token_hex(32)``,
  ``token_urlsafe(32)`` and ``(24)``) the least estimate was 0.93 of a blind search and the largest
  pattern share 0.33 (tests/stream/config/test_guessable.py re-checks a sample).
* :func:`hashed_password` finds a key that is the MD5, SHA-1, SHA-256 or SHA-512 of one of zxcvbn's
  30,000 most common passwords (``sha256('password')`` looks random to every statistical test).
* :func:`derived` finds two secrets that are one (equal, the same bytes in hex or base64, or one the
  hash of the other).
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import functools
import hashlib
import math
import re

MIN_GUESS_SHARE = 0.6  # of the guesses of a blind search (10 per character, zxcvbn's own brute-force baseline)
MAX_PATTERN_SHARE = 0.6
_HASHES = ("md5", "sha1", "sha224", "sha256", "sha384", "sha512", "blake2b", "blake2s", "sha3_256")


def guessable(text: str) -> str | None:
    """Why a guesser finds ``text`` quickly (zxcvbn's estimate), None if it does not."""
    from zxcvbn import zxcvbn

    sample = text[:128]  # zxcvbn's matching is quadratic; 128 characters is more than any key here
    result = zxcvbn(sample)
    log10 = float(result["guesses_log10"])
    found = [m for m in result["sequence"] if m["pattern"] != "bruteforce"]
    share = sum(len(m["token"]) for m in found) / max(len(sample), 1)
    kinds = sorted({_kind(m) for m in found})
    if _passphrase(sample):
        return "is a passphrase (words joined by separators), not random bytes"
    if share >= MAX_PATTERN_SHARE:
        return f"is mostly {', '.join(kinds)} ({share:.0%} of it), not random"
    if log10 < MIN_GUESS_SHARE * len(sample):
        return (f"is guessable in about 2^{log10 * math.log2(10):.0f} tries ({', '.join(kinds) or 'short'}), far "
                f"fewer than a random string of its length")
    return None


def _kind(match: dict[str, object]) -> str:
    return {"dictionary": "dictionary words", "spatial": "keyboard walks", "sequence": "sequences",
            "repeat": "repeats", "date": "dates", "regex": "patterns"}.get(str(match["pattern"]), str(match["pattern"]))


@functools.lru_cache(maxsize=1)
def _words() -> frozenset[str]:
    from zxcvbn.frequency_lists import FREQUENCY_LISTS

    return frozenset(w for words in FREQUENCY_LISTS.values() for w in words if len(w) >= 3)


def _passphrase(text: str) -> bool:
    """Three or more dictionary words joined by separators, covering half the text or more."""
    parts = [p.lower() for p in re.split(r"[-_.\s+/]+", text) if len(p) >= 3]
    words = [p for p in parts if p in _words() or p.rstrip("0123456789") in _words()]
    return len(words) >= 3 and sum(map(len, words)) * 2 >= len(text)


@functools.lru_cache(maxsize=1)
def _common_hashes() -> frozenset[str]:
    from zxcvbn.frequency_lists import FREQUENCY_LISTS

    out = set()
    for word in FREQUENCY_LISTS["passwords"]:
        raw = word.encode()
        for name in ("md5", "sha1", "sha256", "sha512"):
            out.add(hashlib.new(name, raw).hexdigest())
    return frozenset(out)


def hashed_password(text: str) -> bool:
    """True if ``text`` is the hex digest of a common password (e.g. ``sha256('password')``)."""
    return text.strip().lower() in _common_hashes()


def _forms(text: str) -> set[bytes]:
    """The byte strings ``text`` may stand for: itself, and its hex or base64 decoding."""
    t = text.strip()
    forms = {t.encode(), t.lower().encode()}
    if len(t) % 2 == 0 and re.fullmatch(r"[0-9a-fA-F]+", t):
        forms.add(bytes.fromhex(t))
    with contextlib.suppress(binascii.Error, ValueError):
        forms.add(base64.b64decode(t.replace("-", "+").replace("_", "/") + "=" * (-len(t) % 4), validate=True))
    return {f for f in forms if f}


def _digests(data: bytes) -> set[bytes]:
    out = set()
    for name in _HASHES:
        digest = hashlib.new(name, data).digest()
        out |= {digest, digest.hex().encode(), base64.b64encode(digest)}
    return out


def derived(a: str, b: str) -> bool:
    """True if ``a`` and ``b`` are one secret: equal, the same bytes encoded otherwise, or one a hash of
    the other (of its text or its decoded bytes)."""
    fa, fb = _forms(a), _forms(b)
    if fa & fb:
        return True
    return any(fb & _digests(x) for x in fa) or any(fa & _digests(y) for y in fb)
