"""Rate-limited logging of repeated failures: one line per failure kind per interval, with a count.

A database outage makes every tick fail the same way; logging each (with a traceback) wrote about
1 MB a minute. :class:`FailureLog` logs the first failure of a kind at once (with its traceback at
DEBUG only), then at most one line per ``interval_s`` saying how many more happened, and one line
when the kind recovers.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass
class _Kind:
    first_at: float
    last_logged: float
    suppressed: int = 0
    total: int = 1


class FailureLog:
    """Per-kind throttle for failure log lines (thread-safe)."""

    def __init__(self, logger: logging.Logger, interval_s: float = 30.0, clock: object = time.monotonic,
                 on_failure: Callable[[str], None] | None = None) -> None:
        """``on_failure(kind)`` is called for every failure, logged or not (e.g. a Prometheus counter)."""
        self.logger, self.interval_s, self._clock = logger, interval_s, clock
        self.on_failure = on_failure
        self._kinds: dict[str, _Kind] = {}
        self._lock = threading.Lock()

    def failed(self, kind: str, exc: BaseException, what: str, level: int = logging.ERROR,
               extra: dict[str, Any] | None = None) -> bool:
        """Record one failure of ``kind``; returns True when a line was logged for it (with ``extra``'s
        fields, e.g. :func:`stream.ops.logs.ctx` of the window it is about)."""
        if self.on_failure is not None:
            self.on_failure(kind)
        now = self._clock()  # type: ignore[operator]
        detail = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
        with self._lock:
            k = self._kinds.get(kind)
            if k is None:
                self._kinds[kind] = _Kind(first_at=now, last_logged=now)
                first, count = True, 0
            else:
                k.total += 1
                if now - k.last_logged < self.interval_s:
                    k.suppressed += 1
                    return False
                first, count, k.suppressed, k.last_logged = False, k.suppressed + 1, 0, now
        if first:
            self.logger.log(level, "%s (%s)", what, detail, exc_info=self.logger.isEnabledFor(logging.DEBUG),
                            extra=extra)
        else:
            self.logger.log(level, "%s (%s); failed %d time(s) in the last %.0fs", what, detail, count,
                            self.interval_s, extra=extra)
        return True

    def recovered(self, kind: str) -> None:
        """The operation of ``kind`` succeeded: say so once if it had been failing."""
        with self._lock:
            k = self._kinds.pop(kind, None)
        if k is not None:
            self.logger.warning("%s recovered after %d failure(s)", kind, k.total)
