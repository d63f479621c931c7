"""What a station's file is before it is read: a readable file, text in a known encoding, or refused.

Records systems export in whatever their platform writes: UTF-8, UTF-8 with a byte-order mark,
UTF-16 (Excel's "Unicode text"), or a legacy code page such as Windows-1252. :func:`detect` decides
the encoding once per file, in bounded memory:

1. an ``encoding`` declared in the spec's ``[input]`` wins;
2. a byte-order mark names UTF-8, UTF-16 or UTF-32;
3. a file whose text from its first non-ASCII byte on (256 KiB of it, found reading 1 MiB blocks)
   is UTF-8 is UTF-8 (a few stray bytes among well-formed UTF-8 characters are then named by line,
   not taken for another encoding), and so is a file with no non-ASCII byte at all;
4. otherwise charset-normalizer judges that sample; Windows-1252 (the usual export of Western
   records systems) is chosen whenever it reads the sample as cleanly as the best code page, so a
   few accented names are never read as, say, Windows-1250. Cyrillic, Greek or Polish text reads
   badly as Windows-1252 and gets its own code page; text that two code pages read equally well
   (Turkish in Windows-1254, one Polish name) cannot be told apart by its bytes:
   :func:`text_encoding` says which encoding was used, and ``encoding`` in the spec makes it certain.

Only what cannot be text is refused: NUL bytes without a UTF-16/32 mark, or bytes no encoding
reads. Parquet files are binary by design and skip all of this. A byte the chosen encoding cannot
decode later in the file stops the read with one line naming the file's line (:func:`decode_error`).
"""

from __future__ import annotations

import codecs
import logging
import os
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from core.errors import InputDataError

log = logging.getLogger(__name__)

BLOCK = 1 << 20  # bytes read at a time while looking for the first non-ASCII byte
JUDGED = 256 << 10  # bytes judged from the first non-ASCII byte on (with 4 KiB before it)
BINARY_SUFFIXES = frozenset({".parquet", ".pq"})
_BOMS = ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"), (codecs.BOM_UTF8, "utf-8-sig"),
         (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))
_UTF8_CHAR = re.compile(rb"[\xc2-\xdf][\x80-\xbf]|[\xe0-\xef][\x80-\xbf]{2}|[\xf0-\xf4][\x80-\xbf]{3}")
_WIDE = ("utf-16", "utf-32")  # encodings whose text has NUL bytes
_NAMES = {"cp1252": "Windows-1252", "cp1250": "Windows-1250", "cp1251": "Windows-1251", "latin-1": "ISO-8859-1",
          "iso8859-1": "ISO-8859-1", "iso8859-15": "ISO-8859-15", "utf-8-sig": "UTF-8 with a byte-order mark",
          "utf-16": "UTF-16", "utf-32": "UTF-32", "utf-8": "UTF-8"}


@dataclass(frozen=True)
class TextEncoding:
    """The codec a file is read with and how it was chosen (``declared``, ``bom``, ``utf-8``, ``detected``)."""

    codec: str
    how: str

    @property
    def is_utf8(self) -> bool:
        return self.codec in ("utf-8", "utf-8-sig")

    @property
    def label(self) -> str:
        return label(self.codec)


def label(codec: str) -> str:
    """A codec's common name, e.g. ``Windows-1252 (cp1252)``."""
    name = _NAMES.get(codec)
    if name is None or name.startswith("UTF"):
        return name or codec
    return f"{name} ({codec})"


def codec_name(name: str) -> str:
    """Python's name of an encoding (``windows-1252`` -> ``cp1252``), or a one-line error."""
    try:
        "".encode(name)  # a text encoding, not base64 or rot13
        return codecs.lookup(name).name
    except LookupError:
        raise InputDataError(f"unknown encoding '{name}' in the spec's [input]; use a name such as 'utf-8', "
                             "'cp1252' or 'latin-1'", reason="invalid-encoding") from None


def check_input(path: str | Path, declared: str | None = None) -> Path:
    """Refuse, in one line, what cannot be read as an input table: a missing path, a folder, an unreadable
    or empty file, or (unless it is Parquet) a file that is not text. Returns the path."""
    p = Path(path)
    if not p.exists():
        raise InputDataError(f"input file not found: {p}", reason="file-not-found")
    if p.is_dir():
        raise InputDataError(f"input {p} is a folder, not a file; give a CSV, JSON-lines or Parquet file",
                             reason="not-a-file")
    if not os.access(p, os.R_OK):
        raise InputDataError(f"cannot read {p}: permission denied", reason="file-not-readable")
    if p.stat().st_size == 0:
        raise InputDataError(f"input is empty: {p} has no rows", reason="empty-input")
    if p.suffix.lower() not in BINARY_SUFFIXES:
        detect(p, declared)
    return p


def detect(path: str | Path, declared: str | None = None) -> TextEncoding:
    """The encoding to read a text file with (rules in the module docstring); refuses a file that is not text."""
    p = Path(path)
    st = p.stat()
    found = _detect(str(p.resolve()), st.st_mtime_ns, st.st_size, declared)
    if found is None:
        raise InputDataError(f"{p} is not a text file (binary content); give a CSV or JSON-lines file, or a "
                             "Parquet file named .parquet", reason="not-text")
    return found


def text_encoding(path: str | Path, declared: str | None = None) -> str:
    """The codec of :func:`detect`, saying on the log (shown by every command) when it is not UTF-8."""
    found = detect(path, declared)
    if not found.is_utf8:
        how = {"declared": "as the spec's [input] encoding says", "bom": "by its byte-order mark"}.get(
            found.how, "detected (if that is wrong, set encoding in the spec's [input])")
        log.info("%s: text read as %s, %s", Path(path).name, found.label, how)
    return found.codec


@lru_cache(maxsize=32)
def _detect(path: str, _mtime: int, _size: int, declared: str | None) -> TextEncoding | None:
    """The encoding of the file at ``path`` (its change time and size key the cache), None if not text."""
    with open(path, "rb") as fh:
        head = fh.read(BLOCK)
        if declared is not None:
            codec = codec_name(declared)
            if b"\x00" in head and not codec.startswith(_WIDE):
                return None
            if codec == "utf-8" and head.startswith(codecs.BOM_UTF8):
                codec = "utf-8-sig"  # the mark is not part of the first column's name
            return TextEncoding(codec, "declared")
        for bom, codec in _BOMS:
            if head.startswith(bom):
                return TextEncoding(codec, "bom")
        if b"\x00" in head:
            return None
        block, start = head, 0
        while block.isascii():
            if len(block) < BLOCK:  # the end: every byte is ASCII
                return TextEncoding("utf-8", "utf-8")
            start += len(block)
            block = fh.read(BLOCK)
        first = start + next(i for i, b in enumerate(block) if b > 0x7F)
        fh.seek(max(0, first - 4096))
        sample = fh.read(4096 + JUDGED)
        at_end = not fh.read(1)
    if b"\x00" in sample:
        return None
    if _mostly_utf8(sample, at_end):
        return TextEncoding("utf-8", "utf-8")
    judged = _judge(sample)
    return None if judged is None else TextEncoding(judged, "detected")


def _mostly_utf8(sample: bytes, at_end: bool) -> bool:
    """Valid UTF-8, or UTF-8 with a few stray bytes: more well-formed multi-byte characters than bytes
    outside them (a legacy code page almost never forms them), so the stray bytes are named, not the
    whole file misread."""
    try:
        codecs.getincrementaldecoder("utf-8")().decode(sample, final=at_end)
        return True
    except UnicodeDecodeError:
        pass
    formed = _UTF8_CHAR.findall(sample)
    stray = sum(b > 0x7F for b in sample) - sum(len(c) for c in formed)
    return len(formed) > 0 and len(formed) >= stray


def _judge(sample: bytes) -> str | None:
    """charset-normalizer's reading of a sample; Windows-1252 whenever it reads it as cleanly as the best."""
    from charset_normalizer import from_bytes

    results = list(from_bytes(sample))
    western = list(from_bytes(sample, cp_isolation=["cp1252"]))  # judged even when the search skipped it
    if not results and not western:
        return None
    chaos = min(m.chaos for m in results + western)
    if western and western[0].chaos <= chaos + 0.01:
        return "cp1252"
    return codec_name(results[0].encoding)


def decode_error(path: str | Path, codec: str, declared: bool) -> InputDataError:
    """One line for a file the chosen encoding cannot decode, naming its first bad line and byte."""
    where, byte = _first_undecodable(Path(path), codec)
    at = f"{path}, line {where}" if where else str(path)
    fix = ("the spec's [input] encoding declares it; fix the file or the declared encoding" if declared else
           "the encoding the file's text was detected in; fix that line, or declare the file's encoding in the "
           "spec's [input], e.g. encoding = \"cp1252\"")
    shown = f"byte 0x{byte:02x}" if byte is not None else "a byte"
    return InputDataError(f"{at}: {shown} is not {label(codec)} text ({fix})", reason="invalid-encoding")


def _first_undecodable(p: Path, codec: str) -> tuple[int | None, int | None]:
    """(line, byte) of the first line the codec cannot decode; lines are unknown for UTF-16/32."""
    if codec.startswith(_WIDE):
        try:
            p.read_bytes().decode(codec)
        except UnicodeDecodeError as exc:
            return None, exc.object[exc.start]
        return None, None
    decoder = codecs.getincrementaldecoder(codec)()
    with p.open("rb") as fh:
        for n, raw in enumerate(fh, start=1):
            try:
                decoder.decode(raw)
            except UnicodeDecodeError as exc:
                return n, exc.object[exc.start]
    return None, None
