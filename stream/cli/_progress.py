"""Progress output for long CLI work: a throttled line on stderr."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class ProgressPrinter:
    """Callable matching ``core.engines.base.Progress``; prints at most every ``interval`` seconds."""

    def __init__(self, label: str, interval: float = 0.5, stream: TextIO | None = None) -> None:
        self.label, self.interval = label, interval
        self.stream = stream or sys.stderr
        self.last = 0.0
        self.tty = self.stream.isatty()

    def __call__(self, done: float, message: str) -> None:
        now = time.monotonic()
        if done < 1.0 and now - self.last < self.interval:
            return
        self.last = now
        line = f"{self.label}: {done * 100:5.1f}% {message}"
        if self.tty:
            self.stream.write("\r" + line[:100].ljust(100) + ("\n" if done >= 1.0 else ""))
        else:
            self.stream.write(line + "\n")
        self.stream.flush()
