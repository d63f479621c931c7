"""Release records and manifests survive a JSON round trip: clean_json's values, dumps, checksums."""

from __future__ import annotations

import json
import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from stream.wire.records import checksum, checksum_encoded, clean_json, dumps, record_messages

JSON_LEAVES = st.none() | st.booleans() | st.integers(-2**53, 2**53) | st.text(max_size=12) | st.floats()
JSON_VALUES = st.recursive(JSON_LEAVES, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=6), inner, max_size=4), max_leaves=25)


def _finite(v: object) -> bool:
    if isinstance(v, float):
        return math.isfinite(v)
    if isinstance(v, list):
        return all(map(_finite, v))
    if isinstance(v, dict):
        return all(map(_finite, v.values()))
    return True


def test_non_finite_floats_become_null_and_numpy_values_become_python() -> None:
    raw = {"a": [1.5, float("nan"), {"b": float("inf"), "c": -float("inf")}], "n": np.int64(7),
           "x": np.float32(0.5), "arr": np.array([1, 2]), "s": "NaN is a word here"}
    out = clean_json(raw)
    assert out == {"a": [1.5, None, {"b": None, "c": None}], "n": 7, "x": 0.5, "arr": [1, 2],
                   "s": "NaN is a word here"}
    assert type(out["n"]) is int
    json.dumps(out, allow_nan=False)  # strict JSON from here on


@given(JSON_VALUES)
def test_clean_json_is_a_strict_json_value_equal_to_its_input_where_finite(value: object) -> None:
    out = clean_json(value)
    json.dumps(out, allow_nan=False)
    assert _finite(out)
    if _finite(value):
        assert out == json.loads(json.dumps(value))


def test_checksum_of_messages_equals_checksum_of_their_encoding_in_seq_order() -> None:
    msgs = record_messages("r-1", ["class_id", "age", "offence"], [[0, "[20-29]", "Theft"], [1, "[30-39]", "Fraud"]])
    assert [m["seq"] for m in msgs] == [0, 1]
    assert checksum(list(reversed(msgs))) == checksum_encoded([dumps(m) for m in msgs])
