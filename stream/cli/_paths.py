"""The files a command reads and writes, checked before any work: one ``error:`` line and exit 2.

Every command that reads a table calls :func:`check_paths` first, so a folder or a binary file given
as input, or an ``--out`` / ``--report`` / ``--rejects`` whose folder does not exist, is refused
before an engine runs or a report is sent (not after minutes of work). The input rules themselves
live in :func:`stream.io.text.check_input`; this module adds the outputs, whose rules are
:func:`stream.io.atomic.output_target`'s: an output is a regular file (or a new name) in a writable
folder, or a link to one (written through); a folder, a device such as ``/dev/null``, a FIFO, a socket
or a dangling link is refused. The writers of :mod:`stream.io.atomic` then replace the file whole.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from core.errors import InputDataError


def check_output(option: str, value: str | Path | None, stdout_ok: bool = False) -> None:
    """Refuse an output path that is not a regular file (or a new name, or a link to either) in a
    writable folder (:func:`stream.io.atomic.output_target`). ``stdout_ok``: the command documents
    ``-`` (or ``/dev/stdout``) as standard output, which is then accepted."""
    from stream.io.atomic import is_stdout, output_target

    if value is None or (stdout_ok and is_stdout(value)):
        return
    output_target(value, option)


def check_output_folder(option: str, value: str | Path | None) -> None:
    """Refuse an output folder that exists as something else than a folder (a file, a device, a
    dangling link ...); a folder not there yet is created by the command."""
    if value is None:
        return
    p = Path(value)
    if p.is_symlink() and not p.exists():
        raise InputDataError(f"{option} {p} is a link to {os.path.realpath(p)}, which does not exist; "
                             "give a folder", reason="file-not-found")
    if p.exists() and not p.is_dir():
        raise InputDataError(f"{option} {p} is not a folder; give a folder (created if missing)",
                             reason="not-a-folder")


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
