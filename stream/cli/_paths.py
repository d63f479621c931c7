"""The files a command reads and writes, checked before any work: one ``error:`` line and exit 2.

Every command that reads a table calls :func:`check_paths` first, so a folder or a binary file given
as input, or an ``--out`` / ``--report`` / ``--rejects`` whose folder does not exist, is refused
before an engine runs or a report is sent (not after minutes of work). The input rules themselves
live in :func:`stream.io.text.check_input`; this module adds the outputs.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from core.errors import InputDataError


def check_output(option: str, value: str | Path | None) -> None:
    """Refuse an output path whose folder does not exist or cannot be written, or that is a folder."""
    if value is None:
        return
    p = Path(value)
    folder = p.parent
    if p.is_dir():
        raise InputDataError(f"{option} {p} is a folder; give a file name", reason="not-a-file")
    if not folder.is_dir():
        raise InputDataError(f"{option} {p}: folder {folder} does not exist", reason="file-not-found")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise InputDataError(f"{option} {p}: folder {folder} is not writable", reason="file-not-writable")


def check_paths(inputs: tuple[str | Path | None, ...] = (),
                outputs: Mapping[str, str | Path | None] | None = None,
                encoding: str | None = None) -> None:
    """Check the input files (present, a file, readable, not empty, text unless Parquet; ``encoding``
    is the spec's declared one) and the output options (``{"--out": path, ...}``; None: not given)."""
    from stream.io.text import check_input

    for path in inputs:
        if path is not None:
            check_input(path, encoding)
    for option, value in (outputs or {}).items():
        check_output(option, value)
