"""The nested settings groups (privacy, windows) and the flat names they keep accepting (stream/config/names.py)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from core.errors import AnonymizationError, ParamsError
from db import WindowPolicy
from stream.config.feeds import feeds
from stream.config.names import ALIASES, env_name
from stream.config.settings import Settings, load_settings
from stream.worker.release import window_policy

# every flat name accepted before the nesting, with a valid value other than its default
OLD: dict[str, tuple[str, Any]] = {
       "k": ("7", 7), "l": ("2", 2), "max_suppression": ("0.2", 0.2), "max_risk": ("0.25", 0.25),
       "avg_risk": ("0.1", 0.1), "link_guard": ("person", "person"), "engine_params": ('{"cap_factor": 3}',
       {"cap_factor": 3}), "window_by": ("global", "global"), "window_size_s": ("60", 60),
       "allowed_lateness_s": ("5", 5), "window_max_reports": ("40", 40), "idle_timeout_s": ("2.5", 2.5),
       "max_new_windows_per_hour": ("9", 9)}


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in [k for k in os.environ if k.upper().startswith("ANONSTREAM_")]:
        monkeypatch.delenv(key)


def _get(settings: Settings, flat: str) -> object:
    group, field = ALIASES[flat]
    return getattr(getattr(settings, group), field)


def test_every_old_name_is_an_alias() -> None:
    assert set(OLD) == set(ALIASES)


@pytest.mark.parametrize("flat", sorted(OLD))
def test_an_old_variable_sets_its_nested_field(flat: str, monkeypatch: pytest.MonkeyPatch) -> None:
    raw, value = OLD[flat]
    monkeypatch.setenv(env_name((flat,)), raw)
    assert _get(Settings(), flat) == value
    monkeypatch.delenv(env_name((flat,)))
    monkeypatch.setenv(env_name(ALIASES[flat]), raw)  # the nested name
    assert _get(Settings(), flat) == value


@pytest.mark.parametrize("flat", sorted(OLD))
def test_an_old_name_works_in_its_file_form_and_as_a_keyword(flat: str, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    raw, value = OLD[flat]
    (tmp_path / "value").write_text(raw + "\n")
    monkeypatch.setenv(f"{env_name((flat,))}_FILE", str(tmp_path / "value"))
    assert _get(Settings(), flat) == value
    monkeypatch.delenv(f"{env_name((flat,))}_FILE")
    assert _get(Settings(**{flat: value}), flat) == value
    assert _get(Settings().with_updates(**{flat: value}), flat) == value
    assert _get(load_settings(**{flat: value}), flat) == value


def test_precedence_nested_over_flat_over_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "k").write_text("4")
    monkeypatch.setenv("ANONSTREAM_PRIVACY__K_FILE", str(tmp_path / "k"))
    assert Settings().privacy.k == 4
    monkeypatch.setenv("ANONSTREAM_K", "6")
    assert Settings().privacy.k == 6  # a variable set directly wins over a _FILE form
    monkeypatch.setenv("ANONSTREAM_PRIVACY__K", "8")
    assert Settings().privacy.k == 8  # the nested name wins over the flat one
    # flat names (names.ALIASES) are keyword arguments at run time only: mypy sees the declared fields
    assert Settings(k=3).privacy.k == 3  # type: ignore[call-arg]  # keywords (command-line options) win over env
    monkeypatch.setenv("ANONSTREAM_PRIVACY", '{"k": 9, "l": 2}')  # a whole group as JSON
    assert (Settings().privacy.k, Settings().privacy.l) == (8, 2)


def test_a_group_keeps_what_an_update_leaves_out() -> None:
    # flat names (names.ALIASES) are keyword arguments at run time only: mypy sees the declared fields
    base = Settings(k=3, window_size_s=60, engine_params={"cap_factor": 2})  # type: ignore[call-arg]
    assert (base.privacy.max_suppression, base.windows.lateness_s) == (0.05, 3600)  # the defaults
    s = base.with_updates(privacy={"l": 2}, windows={"cap": 7}, feed="crime")
    assert (s.privacy.k, s.privacy.l, s.privacy.engine_params) == (3, 2, {"cap_factor": 2})
    assert (s.windows.size_s, s.windows.cap) == (60, 7)
    assert window_policy(s) == s.windows and s.windows.feed == "crime"  # the policy's feed is the feed
    assert Settings(windows=WindowPolicy(cap=5, feed="other")).windows == WindowPolicy(cap=5)


def test_environment_of_a_subprocess_gives_back_the_same_settings(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # flat names (names.ALIASES) are keyword arguments at run time only: mypy sees the declared fields
    s = Settings(data_dir=tmp_path, k=4, l=2, engine_params={"cap_factor": 3}, window_by="region",  # type: ignore[call-arg]
                 regions={"S1": "north"}, person_columns=("name",), fingerprint_key=SecretStr("f" * 64))
    env = s.env()
    assert env["ANONSTREAM_PRIVACY__K"] == "4" and env["ANONSTREAM_WINDOWS__BY"] == "region"
    assert "ANONSTREAM_WINDOWS__FEED" not in env and "ANONSTREAM_K" not in env
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert Settings() == s


@pytest.mark.parametrize(("variable", "value", "named"), [
    ("ANONSTREAM_K", "0", "ANONSTREAM_K:"),
    ("ANONSTREAM_PRIVACY__K", "0", "ANONSTREAM_PRIVACY__K:"),
    ("ANONSTREAM_WINDOW_MAX_REPORTS", "0", "ANONSTREAM_WINDOW_MAX_REPORTS:"),
    ("ANONSTREAM_WINDOWS__SIZE_S", "x", "ANONSTREAM_WINDOWS__SIZE_S:"),
    ("ANONSTREAM_PRIVACY__COLOUR", "red", "ANONSTREAM_PRIVACY__COLOUR:"),
])
def test_an_invalid_value_names_the_variable_that_was_set(variable: str, value: str, named: str,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(AnonymizationError, match="invalid setting") as err:
        load_settings()
    assert named in err.value.message and "\n" not in err.value.message


FEED = """
[[feed]]
name = "a"
input = "a.in"
spec = "crime"
outputs = {{ records = "a.out", releases = "a.rel", dlq = "a.dlq" }}
{extra}
"""


@pytest.mark.parametrize(("extra", "message"), [
    ("privacy = { colour = 1 }", r"feed\[1\]\.privacy\.colour: unknown key"),
    ("privacy = { k = 0 }", r"feed\[1\]\.privacy\.k: Input should be greater than or equal to 1"),
    ("windows = { feed = 'b' }", r"feed\[1\]\.windows\.feed: unknown key"),
    ("windows = { size_s = 0 }", r"feed\[1\]\.windows\.size_s: Input should be greater than or equal to 1"),
    ("privacy = { l = 0 }", r"feed\[1\]\.privacy\.l: Input should be greater than or equal to 1"),
])
def test_a_feeds_bad_group_value_is_one_line(tmp_path: Path, extra: str, message: str) -> None:
    path = tmp_path / "feeds.toml"
    path.write_text(FEED.format(extra=extra))
    with pytest.raises(ParamsError, match=message) as err:
        feeds(Settings(data_dir=tmp_path, pipelines=path))
    assert "\n" not in err.value.message


def test_a_feed_takes_any_field_of_its_groups_and_keeps_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "feeds.toml"
    path.write_text(FEED.format(extra="privacy = { l = 2, t = 0.3, link_guard = 'report' }\n"
                                      "windows = { max_new_windows_per_hour = 3, idle_timeout_s = 5 }"))
    # flat names (names.ALIASES) are keyword arguments at run time only: mypy sees the declared fields
    (a,) = feeds(Settings(data_dir=tmp_path, pipelines=path, k=4, allowed_lateness_s=7))  # type: ignore[call-arg]
    assert (a.privacy.k, a.privacy.l, a.privacy.t, a.privacy.link_guard) == (4, 2, 0.3, "report")
    assert (a.windows.lateness_s, a.windows.max_new_windows_per_hour, a.windows.idle_timeout_s) == (7, 3, 5.0)
    assert a.windows.feed == "a"
