from typing import Any

import pytest

from core.errors import SpecError
from core.schema import QIType, parse_spec

BASE = {"qi": [{"name": "age", "type": "numeric", "hierarchy": {"widths": [5, 10]}}]}


def test_minimal_spec_infers_hierarchy_kind() -> None:
    spec = parse_spec(BASE)
    assert spec.qi[0].type is QIType.NUMERIC
    assert spec.qi[0].hierarchy.kind == "intervals"


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        ({**BASE, "colour": 1}, "'colour': unknown field"),
        ({"qi": [{"name": "age", "type": "fuzzy"}]}, "qi[age].type"),
        ({"qi": [{"name": "age", "type": "numeric", "hierarchy": {"widths": [5, 7]}}]}, "larger multiple"),
        ({"qi": [{"name": "a", "type": "date", "hierarchy": {"csv": "x.csv"}}]}, "cannot use a 'table' hierarchy"),
        ({"qi": [{"name": "a", "type": "categorical"}]}, "needs a hierarchy"),
        ({**BASE, "sensitive": {"name": "o", "severity": {"Theft": 0}}}, "must be positive"),
        ({**BASE, "identifiers": ["age"]}, "has one role"),
        ({**BASE, "unknown": "maybe"}, "must be one of"),
    ],
)
def test_spec_errors_name_the_field(spec: dict[str, Any], fragment: str) -> None:
    with pytest.raises(SpecError) as exc:
        parse_spec(spec)
    assert fragment in str(exc.value)
    assert "\n" not in str(exc.value)


def test_bundled_specs_load() -> None:
    from stream.io.specs import load_schema

    for name in ("adult", "adult-uci"):
        schema = load_schema(name)
        assert schema.qi_names


def test_unknown_bundled_spec_lists_the_bundled_ones() -> None:
    from stream.io.specs import load_schema

    with pytest.raises(SpecError, match="adult"):
        load_schema("no-such-spec")
