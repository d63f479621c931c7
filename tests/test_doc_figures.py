"""Figures the docs quote come from a command named beside them, and the NYPD batch loss is re-run here.

The README's "Bring your own data" quotes the loss ``anonstream anonymize`` prints on the bundled NYPD
export after ``anonstream spec draft`` (the commands above the figure, as written); it said 0.314
while the tool printed 0.1218. This test runs those commands and compares. Every README paragraph
that says "Measured" names the bench (``bench/*.py``) or test that produces its figures.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from stream.cli.main import main
from tests.conftest import shared

ROOT = Path(__file__).resolve().parents[1]


def _paragraphs(path: Path) -> list[str]:
    return [re.sub(r"\s+", " ", p) for p in path.read_text().split("\n\n")]


def test_every_measured_readme_paragraph_names_its_bench() -> None:
    unnamed = [p[:120] for p in _paragraphs(ROOT / "README.md")
               if re.search(r"\bMeasured\b", p) and not re.search(r"`?(bench|tests)/[\w/]+\.py", p)]
    assert not unnamed, unnamed


@pytest.mark.slow
def test_the_nypd_batch_loss_quoted_is_what_anonymize_prints(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    nypd = shared("nypd-arrests-queens-2021", "nypd_arrests_queens_2021.csv")
    spec = tmp_path / "nypd.toml"
    assert main(["spec", "draft", str(nypd), "--out", str(spec)]) == 0
    capsys.readouterr()
    assert main(["anonymize", str(nypd), "--spec", str(spec), "--engine", "cg-kanon", "-k", "5",
                 "--out", str(tmp_path / "released.csv")]) == 0
    loss = re.search(r"loss=(\d\.\d{4})", capsys.readouterr().out)
    assert loss is not None
    readme = " ".join(_paragraphs(ROOT / "README.md"))
    quoted = re.search(r"against (\d\.\d+) for `anonymize` on the same file", readme)
    assert quoted is not None and quoted.group(1) == loss.group(1), (quoted, loss.group(1))
    assert "bench/stream_vs_batch.py" in readme
    stream_doc = (ROOT / "docs" / "stream.md").read_text()
    assert re.search(rf"\| batch `anonymize` \| 1 \| 13,224 \| {re.escape(loss.group(1))} \|", stream_doc)
