"""Debian packages the tests need (PostgreSQL's server, Chromium, Prometheus's promtool), installed with
``apt-get`` when missing, as root only.

pytest-xdist runs several test processes at once and dpkg allows one installer: an exclusive file lock
serialises them, and a process that waited finds the binary already there and installs nothing.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

LOCK = Path("/tmp/anonstream-apt.lock")


def apt_install(packages: list[str], found: Callable[[], bool]) -> bool:
    """Install ``packages`` unless ``found()`` already holds; True when it holds afterwards."""
    if found():
        return True
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        return False
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    with LOCK.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if found():  # another test process installed it while this one waited
            return True
        subprocess.run(["apt-get", "update"], env=env, capture_output=True, check=False, timeout=900)
        subprocess.run(["apt-get", "install", "-y", "--no-install-recommends", *packages], env=env,
                       capture_output=True, check=False, timeout=1800)
    return found()
