"""The codebook's paragraph on a release's differentially private counts and their intervals."""

from __future__ import annotations

from typing import Any

from stream.wire.codebook import counts_paragraph


def test_the_paragraph_explains_the_interval_of_this_release() -> None:
    m: dict[str, Any] = {"release_id": "r1",
                         "dp": {"mechanism": "gaussian", "epsilon": 1.0, "delta": 1e-6, "refused": None,
                                    "tables": [{"ci95": 7.0, "sd": 3.54}, {"ci95": 7.0, "sd": 3.54}]}}
    text = "\n".join(counts_paragraph(m))
    assert "## Counts and their intervals" in text and "± 7" in text and "95 of 100 cells" in text
    assert "unbiased and can be negative" in text and "sd × √m (sd = 3.5 here)" in text and "shown as 0" not in text
    assert "_r1.counts.json" in text
    refused = {**m, "dp": {**m["dp"], "tables": [], "refused": {"message": "block B would be exceeded"}}}
    assert "This release has no counts: block B would be exceeded." in "\n".join(counts_paragraph(refused))
    assert counts_paragraph({"release_id": "r2"}) == []
