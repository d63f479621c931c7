"""Report ids repeated in one file: per station by default, across stations when the spec's ids are global."""

from __future__ import annotations

from stream.io.dupes import repeated_ids


def _rows(pairs: list[tuple[str, str]]) -> list[tuple[int, dict[str, str]]]:
    return [(line, {"station_id": st, "report_id": rid}) for line, (st, rid) in enumerate(pairs, start=2)]


def test_department_wide_ids_repeat_across_stations() -> None:
    # the same arrest key on three rows, three precincts; another key twice in one precinct
    rows = _rows([("P1", "A-77"), ("P2", "A-77"), ("P3", "A-77"), ("P1", "B-1"), ("P1", "B-1"), ("P2", "C-3")])
    assert repeated_ids(iter(rows), "report_id", "station_id", None) == {6: 5}
    assert repeated_ids(iter(rows), "report_id", "station_id", None, global_ids=True) == {3: 2, 4: 2, 6: 5}


def test_global_ids_across_sorted_runs() -> None:
    rows = _rows([(f"P{i % 7}", f"id-{i % 50}") for i in range(200)])
    found = repeated_ids(iter(rows), "report_id", "station_id", None, run_rows=16, global_ids=True)
    assert len(found) == 150 and all(found[line] == line - 50 * ((line - 2) // 50) for line in found)


def test_ids_are_compared_in_their_canonical_form() -> None:
    # station `08` is station `8`; report `0042` is report `42`; `S08` is not `S8`
    rows = _rows([("08", "0042"), ("8", "42"), (" 8", "042 "), ("S08", "7"), ("S8", "7"), ("8", "42a")])
    assert repeated_ids(iter(rows), "report_id", "station_id", None) == {3: 2, 4: 2}
    assert repeated_ids(iter(rows), "report_id", "station_id", "08") == {3: 2, 4: 2, 6: 5}  # --station fills
