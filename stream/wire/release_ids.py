"""Release ids as file names: only ``[A-Za-z0-9][A-Za-z0-9_-]{0,63}``, so an id can never name a path."""

from __future__ import annotations

import re
from typing import Any

RELEASE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")


def valid_release_id(value: Any) -> str | None:
    """The release id if it is in the allow-listed alphabet, else None."""
    return value if isinstance(value, str) and RELEASE_ID.fullmatch(value) else None
