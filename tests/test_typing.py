"""mypy over core/, db/, stream/, bench/ and tests/, with the configuration of pyproject.toml ([tool.mypy]).

A first run checks ~640 modules (about 30 s here); later runs reuse mypy's incremental cache in
the repository's .mypy_cache/ (gitignored) and take about a second.
"""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_mypy_is_clean_on_core_db_stream_bench_and_tests() -> None:
    proc = subprocess.run([sys.executable, "-m", "mypy", "core", "db", "stream", "bench", "tests"], cwd=ROOT,
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, f"mypy exited {proc.returncode}:\n{proc.stdout[-6000:]}{proc.stderr[-3000:]}"
