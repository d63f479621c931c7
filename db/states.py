"""The states of a window (``windows.state``), one enum for where they are produced and compared."""

from __future__ import annotations

from enum import StrEnum


class WindowState(StrEnum):
    """``open`` -> ``closing`` -> an outcome: ``released``; ``carried`` (too small, its reports wait for the
    key's next window); ``held`` (verification or engine failure, needs review); ``empty``; ``merged`` (its
    reports moved to a later window of the key, :mod:`db.batches`). Stored as its text; a member equals
    its text, so queries and code reading the column as a string agree."""

    OPEN = "open"
    CLOSING = "closing"
    RELEASED = "released"
    CARRIED = "carried"
    HELD = "held"
    EMPTY = "empty"
    MERGED = "merged"

