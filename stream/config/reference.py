"""The settings reference of docs/operations.md, generated from the declarations (so it cannot drift).

``python -m stream.config.reference`` rewrites the generated blocks of docs/operations.md (each between
``<!-- generated: NAME -->`` and ``<!-- end generated -->``); ``--check`` only says whether they are
current (tests/stream/config/test_reference.py checks it too). The blocks:

* ``settings``: every setting of :class:`~stream.config.settings.Settings`, nested groups walked into,
  with its variable, the flat name it is also read under, its default and what it does;
* ``environment``: the variables read outside the settings (:data:`ENV_ONLY`);
* ``privacy-defaults``: the privacy defaults of the stream and of each engine
  (each engine's Params, :func:`core.engines.registry.privacy_defaults`).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

from core.engines.registry import bounds_text, engine_names, privacy_defaults, value_text
from core.privacy.requirement import PrivacyRequirement
from stream.config.names import leaves, names_of
from stream.config.privacy import StreamPrivacy
from stream.config.settings import Settings

DOC = Path(__file__).resolve().parents[2] / "docs" / "operations.md"
BLOCK = re.compile(r"(<!-- generated: (?P<name>[a-z-]+) -->\n)(?P<body>.*?)(<!-- end generated -->)", re.S)

ENV_ONLY: list[tuple[str, str, str]] = [
    ("ANONSTREAM_CACHE_DIR", "$XDG_CACHE_HOME/anonstream, else ~/.cache/anonstream",
     "where `anonstream` keeps the engines' compiled kernels (numba, unless NUMBA_CACHE_DIR is set; keyed by "
     "their source, so a fresh clone of the same code reuses them) and the `engines` listing "
     "(stream/ops/kernel_cache.py)"),
    ("ANONSTREAM_CLIENT_LOG_LEVEL", "warning",
     "log level of the Kafka client libraries: info lowers them to INFO, never to DEBUG (stream/ops/logs.py)"),
]
"""Variables read straight from the environment, not settings: (name, default, what)."""


def _default(path: tuple[str, ...], field: Any) -> Any:
    model: Any = Settings
    for part in path[:-1]:
        model = model.model_fields[part].annotation
    if isinstance(model, type) and issubclass(model, PrivacyRequirement):
        return model.default_of(path[-1])
    return field.get_default(call_default_factory=True)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def settings_table() -> str:
    rows = ["| variable | also read as | default | bounds | what |", "|---|---|---|---|---|"]
    for path, field in leaves(Settings):
        own, *aliases = names_of(path, field)
        default = value_text(_default(path, field))
        rows.append(f"| `{own}` | {', '.join(f'`{a}`' for a in aliases)} | `{_cell(default)}` | "
                    f"{bounds_text(list(field.metadata))} | {_cell(field.description or '')} |")
    return "\n".join(rows) + "\n"


def environment_table() -> str:
    rows = ["| variable | default | what |", "|---|---|---|"]
    rows += [f"| `{name}` | {_cell(default)} | {_cell(what)} |" for name, default, what in ENV_ONLY]
    return "\n".join(rows) + "\n"


def privacy_defaults_table() -> str:
    engines = privacy_defaults()
    differ = [n for n in PrivacyRequirement.model_fields
              if n == "k" or n in StreamPrivacy.privacy_defaults or any(n in d for d in engines.values())]
    rows = [f"| | {' | '.join(f'`{n}`' for n in differ)} |", "|---|" + "---|" * len(differ)]

    def row(label: str, values: dict[str, Any]) -> str:
        return f"| {label} | " + " | ".join(value_text(values.get(n, PrivacyRequirement.default_of(n)))
                                            for n in differ) + " |"

    rows.append(row("the stream (`ANONSTREAM_PRIVACY__*`, a feed's `privacy`)", StreamPrivacy.privacy_defaults))
    rows += [row(f"engine `{name}`", engines[name]) for name in engine_names() if name in engines]
    rows.append(row("every other engine", {}))
    same = [f"`{n}` {value_text(PrivacyRequirement.default_of(n))}" for n in PrivacyRequirement.model_fields
            if n not in differ]
    return "\n".join(rows) + "\n\nEverywhere: " + ", ".join(same) + ".\n"


GENERATORS = {"settings": settings_table, "environment": environment_table,
              "privacy-defaults": privacy_defaults_table}


def render(text: str) -> str:
    """``text`` with every generated block rewritten from the code."""
    return BLOCK.sub(lambda m: m.group(1) + GENERATORS[m.group("name")]() + m.group(4), text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("doc", nargs="?", type=Path, default=DOC)
    parser.add_argument("--check", action="store_true", help="exit 1 when the blocks are not current")
    args = parser.parse_args(argv)
    text = args.doc.read_text(encoding="utf-8")
    new = render(text)
    if args.check:
        print("current" if new == text else f"{args.doc}: generated blocks are out of date")
        return int(new != text)
    args.doc.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
