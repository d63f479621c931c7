"""The exit codes are declared once (stream/cli/_exit_codes.py): every ``--help``, docs/operations.md's
table and the README's summary say what the code returns."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from stream.cli import _exit_codes as exit_codes
from stream.cli.main import COMMANDS, build_parser

ROOT = Path(__file__).resolve().parents[3]


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_commands_help_ends_with_its_exit_codes(command: str) -> None:
    subparsers = build_parser(command)._subparsers
    assert subparsers is not None
    choices = subparsers._group_actions[0].choices
    assert isinstance(choices, dict)
    text = _flat(choices[command].format_help())
    assert _flat(exit_codes.help_line(command)) in text
    # no second, hand-written list that could disagree: a number named as an exit code is declared
    for said in re.findall(r"\bexit (\d+)\b", text, flags=re.I):
        assert int(said) in exit_codes.MEANINGS or command == "status", (command, said)


def test_operations_table_is_the_declared_one() -> None:
    doc = (ROOT / "docs" / "operations.md").read_text()
    section = doc[doc.index("## Exit codes"):]
    table = section[section.index("| code | meaning |"):]
    table = table[:table.index("\n\n") + 1]
    assert table == exit_codes.markdown_table(), "run: python -m stream.cli._exit_codes"


def test_readme_summary_is_the_declared_one() -> None:
    readme = _flat((ROOT / "README.md").read_text())
    assert f"exit codes ({exit_codes.summary()})" in readme
    assert "1 rows rejected" not in readme and "3 verification failed" not in readme


def test_the_code_returns_what_is_declared() -> None:
    """Every literal exit status a command module returns is a declared code (status adds its verdict's)."""
    from stream.console.verdict import EXIT_MEANINGS

    declared = set(exit_codes.MEANINGS) | set(EXIT_MEANINGS)
    for path in sorted((ROOT / "stream" / "cli").glob("*.py")):
        src = path.read_text()
        for code in re.findall(r"^\s+return (\d+)\s*$", src, flags=re.M):
            assert int(code) in declared, (path.name, code)
        for a, b in re.findall(r"return (\d+) if .+ else (\d+)", src):
            assert {int(a), int(b)} <= declared, (path.name, a, b)
