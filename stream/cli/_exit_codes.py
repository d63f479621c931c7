"""The exit codes of ``anonstream``: the one declaration.

Every command returns one of these. The ``--help`` texts say them through :func:`help_line` (a command
that returns 1 says what 1 means for it); docs/operations.md's table (:func:`markdown_table`) and the
README's summary (:func:`summary`) are compared with this module by tests/stream/cli/test_exit_codes.py.
``python -m stream.cli._exit_codes`` prints the table for docs/operations.md. ``status`` adds the codes
of its verdict (4 to 7, stream/console/verdict.py), documented in a table of their own.
"""

from __future__ import annotations

OK = 0
CHECK_FAILED = 1
USAGE = 2
UNREACHABLE = 3
INTERRUPTED = 130

MEANINGS: dict[int, str] = {
    OK: "success",
    CHECK_FAILED: "the command ran and what it checked failed (per command below)",
    USAGE: "usage or input error: bad option, invalid setting, unreadable file (missing, a folder, binary, bytes its "
           "encoding cannot read, a column named twice), an output (`--out`, `--report`, `--rejects`, `--png`, "
           "`--json`) whose folder does not exist or that is not a regular file (a folder, a device, a FIFO, a link "
           "to nothing: see \"Output files\"), an infeasible request, web port in use",
    UNREACHABLE: "a service is unreachable: the broker or the database (`run` also exits 3 when its broker lost its "
                 "data, or when the broker fails a request, e.g. while releases are re-published: one line, and the "
                 "next start resumes)",
    INTERRUPTED: "interrupted (Ctrl-C) before the end: one line, nothing half-written (`run` stops cleanly on Ctrl-C "
                 "instead, exit 0)",
}
SHORT: dict[int, str] = {OK: "ok", CHECK_FAILED: "a check failed", USAGE: "usage or input error",
                         UNREACHABLE: "service unreachable", INTERRUPTED: "interrupted"}

CHECK_FAILED_BY_COMMAND: dict[str, str] = {
    "push": "a report was rejected, dead-lettered or not ingested",
    "anonymize": "the release failed its independent verification",
    "spec check": "the data does not fit the spec",
    "releases verify": "a release read back failed verification",
    "releases check": "a consumed file no longer matches its signed manifest",
    "status": "`--wait`: still busy when the wait ran out",
    "stations remove": "a station named was not registered",
    "stop": "the worker was still running after `--timeout`",
    "demo": "the demo did not finish within `--timeout`",
}

STOPS_ON_CTRL_C = frozenset({"run"})  # a clean stop on Ctrl-C, exit 0 (stream/cli/run.py), never 130


def help_line(command: str) -> str:
    """The ``Exit codes:`` sentence of a command's ``--help`` (``anonstream --help`` and every command's
    end with it: stream/cli/main.py adds it)."""
    codes = [f"{OK} success"]
    failed = [(cmd, why.replace("`", "")) for cmd, why in CHECK_FAILED_BY_COMMAND.items()
              if cmd == command or cmd.startswith(command + " ")]
    if failed:
        codes.append(f"{CHECK_FAILED} " + " or ".join(why if cmd == command else f"{why} ({cmd})"
                                                      for cmd, why in failed))
    codes += [f"{USAGE} bad input or usage", f"{UNREACHABLE} broker or database unreachable"]
    if command not in STOPS_ON_CTRL_C:
        codes.append(f"{INTERRUPTED} interrupted (Ctrl-C)")
    return "Exit codes: " + ", ".join(codes) + " (docs/operations.md)."


def summary() -> str:
    """The README's short list, e.g. ``0 ok, 1 a check failed, 2 usage or input error ...``."""
    return ", ".join(f"{code} {text}" for code, text in SHORT.items())


def markdown_table() -> str:
    """docs/operations.md's table of exit codes."""
    rows = ["| code | meaning |", "|---|---|"]
    for code, text in MEANINGS.items():
        if code == CHECK_FAILED:
            text = "a check failed: " + "; ".join(f"{why} (`{cmd}`)" for cmd, why in CHECK_FAILED_BY_COMMAND.items())
        rows.append(f"| {code} | {text} |")
    return "\n".join(rows) + "\n"


if __name__ == "__main__":  # pragma: no cover
    print(markdown_table(), end="")
