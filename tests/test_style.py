import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_ruff_is_clean() -> None:
    proc = subprocess.run([sys.executable, "-m", "ruff", "check", "."], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:]


def test_core_does_no_io() -> None:
    # what core may import of ours is tests/test_imports.py's to check; this is about I/O and environment
    banned = ("import faust", "from faust", "sqlalchemy", "os.environ", "getenv", "open(", "read_text(",
              "write_text(")
    for path in (ROOT / "core").rglob("*.py"):
        text = path.read_text()
        for word in banned:
            assert word not in text, f"{path.relative_to(ROOT)} uses {word!r}"
