"""Output files that cannot hurt: written whole or not at all, and only ever to a regular file.

Every file a command writes (``--out``, ``--report``, ``--json``, ``--png``, ``--rejects`` ...) goes
through this module:

* :func:`output_target` says which regular file a path writes to, or refuses it with one
  :class:`~core.errors.InputDataError` line (the CLI prints ``error: ...`` and exits 2): a folder, a
  device, a FIFO or a socket (``--out /dev/null`` must never replace the device), a dangling link, a
  folder that does not exist or cannot be written. A link to a regular file is written through: the
  file it resolves to is replaced, the link stays a link.
  Commands call it before any work (:func:`stream.cli._paths.check_paths`), and the writers below call
  it again when they write.
* :func:`write_atomic` (a function that writes a named file: ``frame.to_csv``, ``fig.savefig`` ...),
  :func:`atomic_writer` (a file object), :func:`write_text_atomic`, :func:`write_bytes_atomic` and
  :class:`AtomicFile` (commit when done) write a temporary file in the target's folder
  (``.<stem>.<random>.tmp<suffix>``), give it its mode (``perm`` if given, else the replaced file's,
  else what the umask allows), flush it to disk (``fsync``), rename it over the target
  (``os.replace``) and flush the folder. A failure or an interrupt removes the
  temporary file; a process killed mid-write leaves the old file as it was (and, at worst, a hidden
  ``.tmp`` file beside it).

``-`` and ``/dev/stdout`` mean standard output only where a command documents it
(:func:`is_stdout`; the command prints instead of calling a writer).
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from core.errors import InputDataError

STDOUT_NAMES = ("-", "/dev/stdout")
_DESCRIPTORS = ("/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/fd/", "/proc/")
_KINDS = ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO"),
          (stat.S_ISSOCK, "a socket"))


def is_stdout(value: str | Path | None) -> bool:
    """True if ``value`` names standard output (``-`` or ``/dev/stdout``)."""
    return value is not None and str(value) in STDOUT_NAMES


def output_target(path: str | Path, option: str = "output") -> Path:
    """The regular file that writing ``path`` replaces: ``path`` itself, or the file a link at ``path``
    resolves to. Refuses (:class:`~core.errors.InputDataError`, naming ``option``) a folder, a device, a
    FIFO, a socket, a dangling link, and a folder that is missing or not writable."""
    p = Path(path)
    if os.path.abspath(p).startswith(_DESCRIPTORS):  # a rename would detach the file from whoever reads it
        raise InputDataError(f"{option} {p} names an open file (standard output, a descriptor), not a file; "
                             "give a file name", reason="not-a-file")
    target = Path(os.path.realpath(p)) if p.is_symlink() else p
    via = f" is a link to {target}, which" if target != p else ""
    try:
        st = target.stat()
    except FileNotFoundError:
        if via:
            raise InputDataError(f"{option} {p}{via} does not exist; give a file name, or a link to a file",
                                 reason="file-not-found") from None
        st = None
    except OSError as exc:  # a loop of links, a path through a file ...
        raise InputDataError(f"{option} {p}: {exc.strerror or exc}", reason="not-a-file") from None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise InputDataError(f"{option} {p}{via} is a folder; give a file name", reason="not-a-file")
    if st is not None and not stat.S_ISREG(st.st_mode):
        kind = next((name for test, name in _KINDS if test(st.st_mode)), "not a regular file")
        raise InputDataError(f"{option} {p}{via} is {kind}, not a regular file; give a file name "
                             "(nothing was written)", reason="not-a-file")
    folder = target.parent
    if not folder.is_dir():
        raise InputDataError(f"{option} {p}: folder {folder} does not exist", reason="file-not-found")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise InputDataError(f"{option} {p}: folder {folder} is not writable", reason="file-not-writable")
    return target


class AtomicFile:
    """A temporary file beside ``path`` (:attr:`tmp`, empty, mode 0600) that replaces ``path`` on
    :meth:`commit`, or is removed by :meth:`abort`: for writers that fill a file over time (e.g. the
    rejects file of ``push``). ``perm``: the file's mode, whatever it was (a file holding identifiers:
    0600); None: an existing file keeps its mode, a new one gets 0666 less the umask."""

    def __init__(self, path: str | Path, *, perm: int | None = None, option: str = "output") -> None:
        self.target = output_target(path, option)
        self.perm = perm
        fd, name = tempfile.mkstemp(prefix=f".{self.target.stem}.", suffix=f".tmp{self.target.suffix}",
                                    dir=self.target.parent)  # the suffix kept: writers that infer a format
        os.close(fd)
        self.tmp = Path(name)

    def commit(self) -> Path:
        """Flush the temporary file to disk with its final mode, rename it over the target, flush the
        folder (so the rename survives a power loss too); returns the target."""
        try:
            _commit(self.tmp, self.target, self.perm)
        except BaseException:
            self.abort()
            raise
        return self.target

    def abort(self) -> None:
        """Remove the temporary file; the target is left as it was."""
        self.tmp.unlink(missing_ok=True)


def write_atomic(path: str | Path, write_fn: Callable[[Path], object], *, perm: int | None = None,
                 option: str = "output") -> Path:
    """Write ``path`` whole or not at all: ``write_fn(tmp)`` writes the complete file at the temporary
    path ``tmp`` (in the target's folder, with the target's suffix; e.g. ``lambda tmp: frame.to_csv(tmp,
    index=False)``), which then replaces the target. ``perm``: as for :class:`AtomicFile`. ``option``
    names the path in a refusal (``--out``). Returns the file written (a link's target)."""
    out = AtomicFile(path, perm=perm, option=option)
    try:
        write_fn(out.tmp)
    except BaseException:
        out.abort()
        raise
    return out.commit()


@contextmanager
def atomic_writer(path: str | Path, mode: str = "w", *, encoding: str = "utf-8", errors: str | None = None,
                  newline: str | None = None, perm: int | None = None, option: str = "output") -> Iterator[IO[Any]]:
    """A file object (``mode`` ``"w"`` or ``"wb"``) on a temporary file that replaces ``path`` when the
    block ends without an error (see :func:`write_atomic`); on an error the target is left as it was."""
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_writer writes a whole file: mode 'w' or 'wb', not {mode!r}")
    out = AtomicFile(path, perm=perm, option=option)
    try:
        if mode == "wb":
            with open(out.tmp, "wb") as fh:
                yield fh
        else:
            with open(out.tmp, "w", encoding=encoding, errors=errors, newline=newline) as fh:
                yield fh
    except BaseException:
        out.abort()
        raise
    out.commit()


def write_text_atomic(path: str | Path, text: str, *, encoding: str = "utf-8", perm: int | None = None,
                      option: str = "output") -> Path:
    """Write ``text`` to ``path`` whole or not at all (:func:`write_atomic`)."""
    return write_atomic(path, lambda tmp: tmp.write_text(text, encoding=encoding), perm=perm, option=option)


def write_bytes_atomic(path: str | Path, data: bytes, *, perm: int | None = None, option: str = "output") -> Path:
    """Write ``data`` to ``path`` whole or not at all (:func:`write_atomic`)."""
    return write_atomic(path, lambda tmp: tmp.write_bytes(data), perm=perm, option=option)


def _commit(tmp: Path, target: Path, perm: int | None) -> None:
    """Give ``tmp`` its mode (and the owner of the file it replaces, where allowed), flush it to disk,
    rename it over ``target``, and flush the folder."""
    try:
        old: os.stat_result | None = target.stat()
    except FileNotFoundError:
        old = None
    if old is not None and not stat.S_ISREG(old.st_mode):
        output_target(target)  # it became a folder, a device ... meanwhile: refuse, never replace it
    if old is not None and (old.st_uid, old.st_gid) != (os.geteuid(), os.getegid()):
        with contextlib.suppress(PermissionError):  # only root keeps another user's ownership
            os.chown(tmp, old.st_uid, old.st_gid)
    os.chmod(tmp, perm if perm is not None else stat.S_IMODE(old.st_mode) if old is not None
             else 0o666 & ~_umask())
    fd = os.open(tmp, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, target)
    fd = os.open(target.parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _umask() -> int:
    """This process's umask, read without changing it (Linux), else by setting and restoring it."""
    with contextlib.suppress(OSError), open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
