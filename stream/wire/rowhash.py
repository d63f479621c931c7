"""Hashes of released rows, defined over their values, so a release file in any format can be re-hashed.

The signed manifest carries ``rows`` (:func:`rows_digest`): a SHA-256 ``root`` over every released row
in ``seq`` order, and a short hash of each row (``hashes``), so a consumer can tell the genuine record of
a ``seq`` from a planted one and a checker can name the row that changed. docs/stream.md ("Signed
bytes and row hashes") defines the bytes exactly; in short:

* a row is ``class_id`` followed by the manifest's other ``columns``, in that order (the order of the
  columns of every release file ``consume`` writes);
* each value becomes its canonical text (:func:`canonical_text`), the same whether it was read from
  the topic, JSON lines, typed Parquet or CSV text: null, NaN and the empty string are ``null``;
  booleans ``"true"``/``"false"``; numbers (and text written exactly like a number) their integer in
  decimal when integral, else Python's shortest round-trip ``repr``; dates and times (and ISO text of
  them) in UTC, ``YYYY-MM-DD`` at midnight, else ``YYYY-MM-DDTHH:MM:SS[.ffffff]Z``; other text as is;
* a row's hash is SHA-256 of the RFC 8785 (JCS) JSON array of those texts, as UTF-8;
* ``root`` is SHA-256 of the concatenated 32-byte row hashes in ``seq`` order (hex); ``hashes`` is
  base64 of the concatenated first 8 bytes of each row hash, in ``seq`` order.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
from datetime import UTC, date, datetime
from typing import Any

import numpy as np
import pandas as pd

ALG = "sha256-rows-v1"
SHORT = 8  # bytes of each row hash kept in the manifest's list (the root binds the full hashes)
_NUMBER = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_DATETIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)?"
                       r"(Z|[+-][0-9]{2}:?[0-9]{2})?")


def _number(value: float | int) -> str | None:
    if isinstance(value, int):
        return str(value)
    if not math.isfinite(value):
        return None
    return str(int(value)) if value.is_integer() else repr(value)


def _moment(value: datetime | date) -> str:
    if not isinstance(value, datetime):
        return value.isoformat()
    if value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    if value.time() == datetime.min.time():
        return value.date().isoformat()
    return value.isoformat(timespec="microseconds" if value.microsecond else "seconds") + "Z"


def canonical_text(value: Any) -> str | None:
    """The canonical text of one released value (None for null), whatever format it was read from."""
    if isinstance(value, np.datetime64):
        value = pd.Timestamp(value)
    elif isinstance(value, np.generic):  # numpy scalars
        value = value.item()
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return _number(value)
    if isinstance(value, datetime | date):
        return _moment(value)
    text = str(value)
    if text == "":
        return None
    if text in ("true", "false", "True", "False"):
        return text.lower()
    if _NUMBER.fullmatch(text):
        return str(int(text)) if "." not in text and "e" not in text.lower() else _number(float(text))
    if _DATE.fullmatch(text):
        return text
    if _DATETIME.fullmatch(text):
        try:
            return _moment(datetime.fromisoformat(text))
        except ValueError:
            return text
    return text


class TextCache(dict[tuple[type, Any], str | None]):
    """:func:`canonical_text` memoized by (type, value): released columns repeat few distinct values."""

    def text(self, value: Any) -> str | None:
        try:
            key = (type(value), value)
            hit = self.get(key, self)
        except TypeError:  # unhashable
            return canonical_text(value)
        if hit is self:
            hit = self[key] = canonical_text(value)
        return hit  # type: ignore[return-value]


_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def row_hash(values: list[Any], cache: TextCache | None = None) -> bytes:
    """SHA-256 of a row's canonical texts as an RFC 8785 JSON array (32 bytes)."""
    texts = [cache.text(v) for v in values] if cache is not None else [canonical_text(v) for v in values]
    return hashlib.sha256(_ENCODE(texts).encode()).digest()


def hashed_columns(columns: list[str]) -> list[str]:
    """The columns a row hash covers, in order: ``class_id``, then the manifest's other columns."""
    return ["class_id", *(str(c) for c in columns if c != "class_id")]


def record_row(record: dict[str, Any], columns: list[str]) -> list[Any]:
    """A ``crime.anonymized`` message as the row its release file holds (:func:`hashed_columns` order)."""
    values = record.get("values")
    values = values if isinstance(values, dict) else {}
    return [record.get("class_id"), *(values.get(c) for c in hashed_columns(columns)[1:])]


def digest_of_hashes(hashes: list[bytes]) -> dict[str, Any]:
    """The manifest's ``rows`` field from full row hashes in ``seq`` order (columns added by the caller)."""
    return {"alg": ALG, "root": hashlib.sha256(b"".join(hashes)).hexdigest(),
            "hashes": base64.b64encode(b"".join(h[:SHORT] for h in hashes)).decode()}


def rows_digest(columns: list[str], rows: list[list[Any]]) -> dict[str, Any]:
    """The manifest's ``rows`` field for a release whose ``rows`` are in ``columns`` order (the worker's
    published rows: class id first), in ``seq`` order."""
    names = [str(c) for c in columns]
    order = [names.index(c) for c in hashed_columns(names)]
    cache = TextCache()
    return {**digest_of_hashes([row_hash([r[i] for i in order], cache) for r in rows]),
            "columns": hashed_columns(names)}


def short_hashes(digest: dict[str, Any]) -> list[bytes] | None:
    """The per-row short hashes of a manifest's ``rows`` field, or None if it has none (or is malformed)."""
    try:
        raw = base64.b64decode(str(digest.get("hashes", "")), validate=True)
    except ValueError:
        return None
    if digest.get("alg") != ALG or len(raw) % SHORT:
        return None
    return [raw[i:i + SHORT] for i in range(0, len(raw), SHORT)]
