"""The vectorized encoding gives the same codes whatever the column dtype, and its reuse cache is safe."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.encoding import EncodedBatch, EncodingCache, encode
from core.errors import HierarchyError
from core.lattice import NodeEvaluator
from core.privacy import PrivacyRequirement
from core.privacy.check import rank_ids
from tests.strategies import make_table, small_schema


def _same(a: EncodedBatch, b: EncodedBatch) -> None:
    assert a.n == b.n
    for qa, qb in zip(a.qis, b.qis, strict=True):
        assert qa.name == qb.name
        for lv in range(qa.height + 1):
            assert qa.labels[lv][qa.at(lv)].tolist() == qb.labels[lv][qb.at(lv)].tolist()
            assert np.allclose(qa.row_cost(lv), qb.row_cost(lv))
    assert a.sensitive_labels is not None and a.sensitive_codes is not None
    assert b.sensitive_labels is not None and b.sensitive_codes is not None
    assert a.sensitive_labels[a.sensitive_codes].tolist() == b.sensitive_labels[b.sensitive_codes].tolist()


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_categorical_and_padded_columns_encode_like_plain_strings(seed: int) -> None:
    schema = small_schema()
    plain = make_table(seed, 80).astype({"age": str})
    padded = plain.assign(color=" " + plain["color"] + "  ", offence=plain["offence"] + " ")
    categorical = plain.astype({c: "category" for c in ("color", "shape", "zip", "offence", "age")})
    base = encode(plain, schema)
    _same(base, encode(padded, schema))
    _same(base, encode(categorical, schema))


def test_unknown_values_are_named_once_or_mapped_to_top() -> None:
    schema = small_schema()
    frame = make_table(4, 30)
    frame.loc[[0, 5, 9], "color"] = "mauve"
    with pytest.raises(HierarchyError, match="1 value\\(s\\) not in its hierarchy: 'mauve'"):
        encode(frame, schema)
    top = encode(frame, schema.__class__(spec=schema.spec.model_copy(update={"unknown": "top"}),
                                         hierarchies=schema.hierarchies))
    color = top.qis[1]
    assert set(color.labels[0][color.at(0)][[0, 5, 9]]) == {"*"}


def test_released_frame_equals_label_lookup() -> None:
    schema = small_schema()
    frame = make_table(7, 50)
    batch = encode(frame, schema)
    levels = [1, 0, 2, 1]
    rows = np.array([3, 1, 40, 7])
    out = batch.released_frame(levels, rows)
    labels = batch.labels_at(levels)
    assert list(out.index) == list(frame.index[rows])
    for q in schema.qi_names:
        assert out[q].tolist() == labels[q].iloc[rows].tolist()
    assert out["offence"].tolist() == frame["offence"].iloc[rows].tolist()
    assert np.allclose(batch.row_cost(levels, rows), batch.row_cost(levels)[rows])


def test_encoding_cache_reuses_only_the_same_frame_and_schema() -> None:
    schema = small_schema()
    frame = make_table(9, 40)
    cache = EncodingCache(size=2)
    first = cache.encode(frame, schema)
    assert cache.encode(frame, schema) is first
    assert cache.encode(frame.copy(), schema) is not first
    assert cache.encode(frame, small_schema()) is not first
    cache.forget(frame)
    assert cache.encode(frame, schema) is not first
    assert cache.hits == 1


@given(st.lists(st.integers(0, 50), min_size=1, max_size=200))
@settings(max_examples=50, deadline=None)
def test_rank_ids_is_the_inverse_of_unique(ids: list[int]) -> None:
    arr = np.asarray(ids, dtype=np.int64)
    assert rank_ids(arr).tolist() == np.unique(arr, return_inverse=True)[1].ravel().tolist()


@pytest.mark.parametrize("req", [PrivacyRequirement(k=3, max_suppression=0.1),
                                 PrivacyRequirement(k=2, l=2, max_suppression=0.05)])
def test_projection_tables_and_rollups_agree_with_the_numpy_reference(req: PrivacyRequirement) -> None:
    """Every node of a small lattice, evaluated through cached projection tables and roll-ups from the
    smallest table below, gives exactly the numpy reference result."""
    batch = encode(make_table(11, 120), small_schema())
    fast = NodeEvaluator(batch, req, backend="numba")
    ref = NodeEvaluator(batch, req, backend="numpy")
    from core.lattice import Lattice

    nodes = [tuple(int(x) for x in n) for n in Lattice(batch.heights).all_nodes()]
    for node in sorted(nodes, key=lambda n: -sum(n)):  # most general first, as the search seeds them
        fast.prepare_projection(node)
        a, b = fast.evaluate(node), ref.evaluate(node)
        assert (a.feasible, a.suppressed, a.classes, a.k) == (b.feasible, b.suppressed, b.classes, b.k), node
        assert a.loss == b.loss  # summed the same way on both backends
