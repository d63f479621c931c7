"""Re-verifying a release from the topic picks each seq's record by the signed row hashes, as consume does."""

from __future__ import annotations

from typing import Any

from stream.console.reverify import reverify_messages
from stream.wire.rowhash import rows_digest

COLUMNS = ["class_id", "age", "sex", "offence"]
ROWS = [[0, "[20, 39]", "F", "Theft"], [0, "[20, 39]", "F", "Fraud"], [1, "[40, 59]", "M", "Theft"],
        [1, "[40, 59]", "M", "Assault"]]


def _message(seq: int, row: list[Any]) -> dict[str, Any]:
    return {"release_id": "r-1", "seq": seq, "class_id": row[0], "values": dict(zip(COLUMNS[1:], row[1:], strict=True))}


def _release() -> dict[str, Any]:
    manifest = {"records": len(ROWS), "columns": COLUMNS, "rows": rows_digest(COLUMNS, ROWS)}
    return {"id": "r-1", "manifest": manifest, "params": {"k": 2}, "k": 2, "l": None, "checksum": "unused"}


def test_a_record_planted_before_the_genuine_one_is_set_aside() -> None:
    forged = _message(0, [0, "[20, 39]", "F", "Murder"])
    messages = [forged, *(_message(i, r) for i, r in enumerate(ROWS)), _message(2, ROWS[2])]  # and a duplicate
    res = reverify_messages(messages, _release(), ["age", "sex"], "offence")
    assert res["ok"] and res["checksum_ok"] and res["records_found"] == 4
    assert res["conflicting_records"] == 1 and res["k"] == 2


def test_a_release_whose_genuine_record_is_missing_fails() -> None:
    messages = [_message(0, [0, "[20, 39]", "F", "Murder"]), *(_message(i, r) for i, r in enumerate(ROWS) if i)]
    res = reverify_messages(messages, _release(), ["age", "sex"], "offence")
    assert not res["ok"] and not res["checksum_ok"]
    assert "the records on the topic differ from the signed manifest" in res["failures"]
