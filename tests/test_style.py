import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_ruff_is_clean():
    proc = subprocess.run([sys.executable, "-m", "ruff", "check", "."], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:]


def test_core_does_no_io_and_imports_nothing_of_ours():
    banned = ("import faust", "from faust", "sqlalchemy", "os.environ", "getenv", "from stream", "import stream",
              "from db", "import db", "open(", "read_text(", "write_text(")
    for path in (ROOT / "core").rglob("*.py"):
        text = path.read_text()
        for word in banned:
            assert word not in text, f"{path.relative_to(ROOT)} uses {word!r}"
