"""Output files written whole, to regular files only (stream/io/atomic.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from core.errors import InputDataError
from stream.io.atomic import (
    AtomicFile,
    atomic_writer,
    is_stdout,
    output_target,
    write_atomic,
    write_bytes_atomic,
    write_text_atomic,
)

ROOT = Path(__file__).resolve().parents[3]


def _names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_a_new_file_gets_the_umask_mode_and_an_old_one_keeps_its_mode(tmp_path: Path) -> None:
    out = tmp_path / "out.csv"
    old = os.umask(0o027)
    try:
        write_text_atomic(out, "a\n")
    finally:
        os.umask(old)
    assert out.read_text() == "a\n" and out.stat().st_mode & 0o777 == 0o640
    out.chmod(0o604)
    write_bytes_atomic(out, b"b\n")
    assert out.read_bytes() == b"b\n" and out.stat().st_mode & 0o777 == 0o604
    write_text_atomic(out, "c\n", perm=0o600)  # a mode asked for wins (files holding identifiers)
    assert out.stat().st_mode & 0o777 == 0o600
    assert _names(tmp_path) == ["out.csv"]  # no temporary file left behind


def test_a_link_to_a_file_is_written_through_and_stays_a_link(tmp_path: Path) -> None:
    real = tmp_path / "real.csv"
    real.write_text("old\n")
    link = tmp_path / "link.csv"
    link.symlink_to(real)
    assert write_text_atomic(link, "new\n") == real
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert real.read_text() == "new\n"
    chain = tmp_path / "chain.csv"  # a link to a link: the file at the end is written
    chain.symlink_to(link)
    write_text_atomic(chain, "newer\n")
    assert chain.is_symlink() and link.is_symlink() and real.read_text() == "newer\n"


@pytest.mark.parametrize("kind", ["folder", "dangling", "link-to-folder", "device", "fifo", "stdout", "no-folder"])
def test_what_is_not_a_regular_file_is_refused_before_writing(tmp_path: Path, kind: str) -> None:
    folder = tmp_path / "folder"
    folder.mkdir()
    paths = {"folder": folder, "dangling": tmp_path / "dangling", "link-to-folder": tmp_path / "to-folder",
             "device": Path("/dev/null"), "fifo": tmp_path / "fifo", "stdout": Path("/dev/stdout"),
             "no-folder": tmp_path / "absent" / "out.csv"}
    (tmp_path / "dangling").symlink_to(tmp_path / "missing.csv")
    (tmp_path / "to-folder").symlink_to(folder)
    os.mkfifo(tmp_path / "fifo")
    before = os.stat(paths[kind]) if kind in ("device", "fifo", "folder") else None
    called: list[Path] = []
    with pytest.raises(InputDataError) as err:
        write_atomic(paths[kind], called.append, option="--out")
    assert err.value.message.startswith(f"--out {paths[kind]}") and "\n" not in err.value.message
    assert not called  # refused before anything was written
    if before is not None:
        after = os.stat(paths[kind])
        assert (after.st_mode, after.st_ino, after.st_rdev) == (before.st_mode, before.st_ino, before.st_rdev)
    assert not (tmp_path / "missing.csv").exists()
    assert not [n for n in _names(tmp_path) if n.endswith(".tmp")] and _names(folder) == []


def test_an_error_while_writing_leaves_the_old_file(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    out.write_text("old")

    def fail(tmp: Path) -> None:
        tmp.write_text("half")
        raise RuntimeError("disk on fire")

    with pytest.raises(RuntimeError):
        write_atomic(out, fail)
    with pytest.raises(KeyboardInterrupt), atomic_writer(out) as fh:
        fh.write("half")
        raise KeyboardInterrupt
    assert out.read_text() == "old" and _names(tmp_path) == ["out.json"]


def test_the_temporary_file_keeps_the_suffix_for_writers_that_infer_a_format(tmp_path: Path) -> None:
    seen: list[Path] = []

    def writer(tmp: Path) -> None:
        seen.append(tmp)
        tmp.write_bytes(b"png")

    write_atomic(tmp_path / "front.png", writer)
    assert seen[0].suffix == ".png" and seen[0].parent == tmp_path and seen[0].name.startswith(".front.")
    f = AtomicFile(tmp_path / "r.csv", perm=0o600)
    assert f.tmp.stat().st_mode & 0o777 == 0o600  # private while it is being written
    f.abort()
    assert _names(tmp_path) == ["front.png"]


KILLED = """
import sys
from stream.io.atomic import atomic_writer
with atomic_writer(sys.argv[1]) as fh:
    fh.write("new, half written" * 1000)
    fh.flush()
    print("writing", flush=True)
    sys.stdin.read()  # blocks until killed
"""


def test_a_process_killed_mid_write_leaves_the_old_file_intact(tmp_path: Path) -> None:
    out = tmp_path / "out.csv"
    out.write_text("old\n")
    with subprocess.Popen([sys.executable, "-c", KILLED, str(out)], cwd=ROOT, stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, text=True) as proc:
        assert proc.stdout is not None and proc.stdout.readline() == "writing\n"  # mid-write, for sure
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    assert out.read_text() == "old\n"
    left = [n for n in _names(tmp_path) if n != "out.csv"]
    assert all(n.startswith(".out.") and n.endswith(".tmp.csv") for n in left)  # hidden litter at worst


def test_stdout_names_and_the_target_of_output_target(tmp_path: Path) -> None:
    assert is_stdout("-") and is_stdout("/dev/stdout") and not is_stdout("out.csv") and not is_stdout(None)
    assert output_target(tmp_path / "new.csv") == tmp_path / "new.csv"
