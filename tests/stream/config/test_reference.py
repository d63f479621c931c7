"""docs/operations.md documents every setting, with the defaults the code declares (stream/config/reference.py)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from core.engines.registry import engine_names, get_engine, make_params, privacy_defaults
from core.privacy.requirement import PrivacyRequirement
from stream.config.names import accepted, leaves
from stream.config.privacy import StreamPrivacy
from stream.config.reference import DOC, ENV_ONLY, render
from stream.config.settings import Settings
from stream.worker.risk import engine_params

ROOT = Path(__file__).resolve().parents[3]
READ = re.compile(r"""(?:environ(?:\.get)?[(\[]|getenv\()\s*["'](ANONSTREAM_[A-Z0-9_]+)["']""")


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in [k for k in os.environ if k.upper().startswith("ANONSTREAM_")]:
        monkeypatch.delenv(key)


def test_generated_tables_are_current() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert text.count("<!-- generated: ") == 3
    assert render(text) == text, "run: python -m stream.config.reference"


def test_every_setting_and_every_name_it_is_read_under_is_documented() -> None:
    text = DOC.read_text(encoding="utf-8")
    paths = [path for path, _ in leaves(Settings)]
    assert ("privacy", "k") in paths and ("windows", "size_s") in paths and ("windows", "feed") not in paths
    missing = [name for name in accepted(Settings) if f"`{name}`" not in text]
    assert not missing, f"not in docs/operations.md: {missing}"


def test_every_variable_read_from_the_environment_is_documented() -> None:
    text = DOC.read_text(encoding="utf-8")
    read = {m.group(1) for path in (ROOT / "stream").rglob("*.py") for m in READ.finditer(path.read_text())}
    assert {"ANONSTREAM_CACHE_DIR", "ANONSTREAM_CLIENT_LOG_LEVEL", "ANONSTREAM_LOG_FORMAT"} <= read
    outside = read - set(accepted(Settings))
    assert outside <= {name for name, _, _ in ENV_ONLY}, f"read outside the settings, not in ENV_ONLY: {outside}"
    assert all(f"`{name}`" in text for name in read)


def test_each_engine_takes_its_privacy_defaults_from_the_one_table() -> None:
    for name in engine_names():
        params = make_params(name, {})
        expected = {n: PrivacyRequirement.default_of(n) for n in PrivacyRequirement.model_fields}
        expected.update(privacy_defaults().get(name, {}))
        assert params.requirement().model_dump() == expected, name
        assert params.requirement() == PrivacyRequirement(**expected)
    assert make_params("kgen", {}).max_suppression == 0.005 and make_params("pbg-ea", {}).max_suppression == 0.01
    assert make_params("optimal", {}).max_suppression == 0.0 and make_params("cg-diverse", {}).l == 3


def test_the_stream_default_is_declared_once_and_passed_to_every_engine() -> None:
    assert Settings().privacy.max_suppression == StreamPrivacy.default_of("max_suppression") == 0.05
    assert Settings().privacy.l == StreamPrivacy.default_of("l") == 2  # issue 39: distinct l 2 by default
    for name in ("kgen", "local-recode", "cg-kanon", "optimal"):
        params = engine_params(Settings(), get_engine(name))  # what the worker passes
        assert params.max_suppression == 0.05, name
        # l goes to the engines that enforce it; the others run without it and the verifier checks it
        assert params.l == (2 if "l" in get_engine(name).models else None), name
    # the stream's l wins over the engine's own default (cg-diverse's 3); engine_params win over both
    assert make_params("cg-diverse", requirement=Settings().privacy).l == 2
    assert make_params("cg-diverse", {"l": 3}, requirement=Settings().privacy).l == 3
    assert make_params("kgen", {"max_suppression": 0.0}, requirement=Settings().privacy).max_suppression == 0.0
