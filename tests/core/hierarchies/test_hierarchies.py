import numpy as np
import pandas as pd
import pytest

from core.errors import HierarchyError, InputDataError
from core.hierarchies import DateHierarchy, IntervalHierarchy, MaskHierarchy, TableHierarchy, parse_arx_csv
from core.hierarchies.tree import tree_hierarchy

ARX = "a;ab;*\nb;ab;*\nc;cd;*\nd;cd;*\n"


def test_arx_table_levels_and_costs() -> None:
    h = TableHierarchy("x", parse_arx_csv(ARX))
    enc = h.encode(pd.Series(["a", "c", "d", "a"]))
    assert enc.height == 2
    assert list(enc.labels[1][enc.at(1)]) == ["ab", "cd", "cd", "ab"]
    assert enc.cost[1].tolist() == pytest.approx([1 / 3, 1 / 3])  # 2 leaves of 4: (2-1)/(4-1)
    assert enc.cost[2].tolist() == [1.0]
    assert h.covers("ab", "a") and not h.covers("cd", "a") and h.covers("*", "b")


def test_unknown_values_listed_or_mapped_to_top() -> None:
    h = TableHierarchy("x", parse_arx_csv(ARX))
    with pytest.raises(HierarchyError) as exc:
        h.encode(pd.Series(["a", "zz", "yy", "zz"]))
    assert "'yy', 'zz'" in str(exc.value) and "2 value(s)" in str(exc.value)
    enc = h.encode(pd.Series(["a", "zz"]), unknown="top")
    assert enc.labels[0][enc.codes[1]] == "*" and enc.cost[0][enc.codes[1]] == 1.0


def test_table_must_be_a_tree() -> None:
    with pytest.raises(HierarchyError, match="not a tree"):
        TableHierarchy("x", [["a", "p", "*"], ["b", "p", "*"], ["c", "q", "*"], ["a2", "q", "*"]] + [["d", "p", "r"]])


def test_interval_widths_nest_and_cost_by_width() -> None:
    h = IntervalHierarchy("age", widths=(5, 10), domain=(0, 100))
    enc = h.encode(pd.Series([21, 24, 37, 99]))
    assert list(enc.labels[1][enc.at(1)]) == ["[20, 25)", "[20, 25)", "[35, 40)", "[95, 100)"]
    assert list(enc.labels[2][enc.at(2)]) == ["[20, 30)", "[20, 30)", "[30, 40)", "[90, 100)"]
    assert enc.cost[1][enc.at(1)[0]] == pytest.approx(0.05)
    assert h.covers("[20, 25)", 21) and h.covers("[20-24]", 21) and not h.covers("[20, 25)", 25)
    assert h.covers("[20, 24]", 24) and not h.covers("[20, 24]", 24.5)


def test_integer_bands_are_closed_whole_number_intervals() -> None:
    """One label format: an integer QI's band 20 <= x < 25 is written [20, 24], so label and bounds agree."""
    h = IntervalHierarchy("age", widths=(5, 10), domain=(0, 100), integer=True)
    enc = h.encode(pd.Series([21, 24, 37, 99]))
    assert list(enc.labels[1][enc.at(1)]) == ["[20, 24]", "[20, 24]", "[35, 39]", "[95, 99]"]
    assert h.covers("[20, 24]", 24) and not h.covers("[20, 24]", 25) and h.covers("[20, 25)", 24)


def test_interval_edges_and_auto() -> None:
    h = IntervalHierarchy("x", edges=((0, 18, 30, 65, 120), (0, 30, 120)))
    enc = h.encode(pd.Series([5, 20, 70]))
    assert list(enc.labels[2][enc.at(2)]) == ["[0, 30)", "[0, 30)", "[30, 120)"]
    auto = IntervalHierarchy("x", auto=3).encode(pd.Series(np.arange(0, 100)))
    assert auto.height == 4
    with pytest.raises(HierarchyError, match="subset"):
        IntervalHierarchy("x", edges=((0, 10, 20), (0, 15, 20)))


def test_numeric_text_is_a_clear_error() -> None:
    with pytest.raises(InputDataError, match="non-numeric values: 'forty'"):
        IntervalHierarchy("age", widths=(5,)).encode(pd.Series(["40", "forty"]))


def test_dates_generalize_day_month_year() -> None:
    enc = DateHierarchy("d").encode(pd.Series(["2021-03-04", "2021-03-20T10:00:00Z", "2022-01-01"]))
    assert list(enc.labels[1][enc.at(1)]) == ["2021-03", "2021-03", "2022-01"]
    assert list(enc.labels[2][enc.at(2)]) == ["2021", "2021", "2022"]
    assert enc.height == 3


def test_masking_right_to_left() -> None:
    h = MaskHierarchy("pc")
    enc = h.encode(pd.Series(["80015", "80016", "80115"]))
    assert list(enc.labels[1][enc.at(1)]) == ["8001*", "8001*", "8011*"]
    assert enc.labels[enc.height][0] == "*****"
    assert h.covers("800**", "80015") and not h.covers("801**", "80015")


def test_tree_pads_shallow_leaves() -> None:
    h = tree_hierarchy("crime", {"Violent": {"Homicide": ["Murder"]}, "Property": ["Theft"]})
    enc = h.encode(pd.Series(["Murder", "Theft"]))
    assert [enc.labels[lv][enc.at(lv)[1]] for lv in range(enc.height + 1)] == ["Theft", "Theft", "Property", "*"]


def test_set_labels_are_covered_by_membership() -> None:
    h = TableHierarchy("x", parse_arx_csv(ARX))
    assert h.covers("{a,c}", "a") and not h.covers("{a,c}", "b")
    assert MaskHierarchy("pc").covers("{80015, 80016}", "80016")
