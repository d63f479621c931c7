"""A count table round-trips through JSON and becomes the frame an analyst reads."""

from __future__ import annotations

import pytest

from core.dp.tables import CountTable


def test_json_and_frame() -> None:
    table = CountTable(by=("region", "offence"), groups=(("A", "Theft"), ("B", "Theft")), counts=(3, 0),
                       ci95=5.0, mechanism="gaussian", rho=0.01, unit="report")
    assert CountTable.from_json(table.to_json()) == table
    frame = table.to_frame()
    assert list(frame.columns) == ["region", "offence", "count", "ci95"]
    assert frame["count"].tolist() == [3, 0] and table.name == "region x offence"
    with pytest.raises(ValueError, match="counts"):
        CountTable(by=("a",), groups=(("x",),), counts=(), ci95=1.0, mechanism="gaussian", rho=1.0, unit="report")
