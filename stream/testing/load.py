"""A busy core for tests that check a result does not depend on machine load."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

# At the lowest priority: on a quiet machine it has a core to itself, as a competing job would;
# in a parallel test run, where every core is already busy, it takes only what the other tests leave
# (at normal priority it took a whole core from them for as long as the test ran).
_SPIN = "import os\nos.nice(19)\nwhile True:\n    pass\n"


@contextmanager
def busy_core() -> Iterator[subprocess.Popen[bytes]]:
    """A process spinning on a core while the block runs; killed (and reaped) afterwards."""
    spinner = subprocess.Popen([sys.executable, "-c", _SPIN])
    try:
        yield spinner
    finally:
        spinner.kill()
        spinner.wait()
