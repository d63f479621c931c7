"""``anonstream run`` refuses, with one line and before starting anything, settings under which the
spec's differentially private counts would not hold their guarantee."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.stream.cli.test_anonymize import ROOT


@pytest.mark.parametrize(("env", "words"), [
    ({"ANONSTREAM_SAMPLE_POLICY": "fraction", "ANONSTREAM_SAMPLE_FRACTION": "0.5"}, "need sample_policy = all"),
    ({"ANONSTREAM_SAMPLE_POLICY": "max", "ANONSTREAM_SAMPLE_MAX": "100"}, "need sample_policy = all"),
])
def test_dp_counts_with_a_redrawn_sample_never_start(tmp_path: Path, env: dict[str, str], words: str) -> None:
    home = tmp_path / "var"
    proc = subprocess.run([sys.executable, "-m", "stream.cli.main", "run", "--web-port", "0"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "ANONSTREAM_DATA_DIR": str(home), **env})
    assert proc.returncode == 2, proc.stderr
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and words in errors[0] and "Traceback" not in proc.stderr
    assert not home.exists() and "worker on" not in proc.stdout  # no broker, ledger or worker was started
