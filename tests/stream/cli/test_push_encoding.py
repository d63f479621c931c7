"""``push`` of a Windows-1252 export through a real broker: read as written, and the rejects file is
written in the export's encoding, so the fixed file is pushed back exactly like the original."""

from __future__ import annotations

import uuid
from pathlib import Path

import pandas as pd
import pytest

from stream.cli.main import main
from stream.io.text import detect
from stream.ops.broker import EmbeddedBroker, ensure_topics
from stream.testing.reports import day_of_reports, spec_ref

pytestmark = [pytest.mark.broker]


def test_a_windows_1252_export_is_pushed_and_its_rejects_pushed_back(kafka: EmbeddedBroker, tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    topic = f"t{uuid.uuid4().hex[:8]}.reports"
    ensure_topics(kafka.bootstrap, {topic: 2})
    rows = day_of_reports(1, 12, seed=5)["S1"]
    rows[0] = rows[0] | {"name": "José Núñez"}
    rows[4] = rows[4] | {"name": "Renée O’Connor", "suburb": "gardens"}
    path = tmp_path / "export.csv"
    path.write_bytes(pd.DataFrame(rows).to_csv(index=False).encode("cp1252"))
    rejects = tmp_path / "rejects.csv"
    args = ["--station", "S1", "--broker", kafka.url, "--topic", topic, "--spec", spec_ref()]
    assert main(["push", str(path), *args, "--rejects", str(rejects)]) == 1
    out = capsys.readouterr()
    assert "sent 11 report(s), rejected 1" in out.out
    assert "export.csv: text read as Windows-1252 (cp1252), detected" in out.err
    assert detect(rejects).codec == "cp1252"
    bad = pd.read_csv(rejects, dtype=str, keep_default_na=False, encoding="cp1252")
    assert bad.loc[0, "name"] == "Renée O’Connor" and bad.loc[0, "suburb"] == "gardens"
    bad.loc[0, "suburb"] = "Gardens"
    rejects.write_bytes(bad.to_csv(index=False).encode("cp1252"))
    assert main(["push", str(rejects), *args]) == 0
    assert "sent 1 report(s), rejected 0" in capsys.readouterr().out
