"""The environment variable names of the settings, and the flat names of the nested ones.

* a top-level field ``f`` is ``ANONSTREAM_F``; a field ``f`` of a nested group ``g`` (``privacy``,
  ``windows``) is ``ANONSTREAM_G__F`` (``env_nested_delimiter="__"``), or the whole group as JSON in
  ``ANONSTREAM_G``;
* the flat names the nested fields had before (``ANONSTREAM_K``, ``ANONSTREAM_WINDOW_SIZE_S``, ...) are
  still accepted (:data:`ALIASES`): from the environment (:class:`AliasEnv`, below the nested names),
  as keyword arguments of ``Settings(...)`` and ``with_updates(...)`` (:func:`nest`), and in their
  ``_FILE`` form;
* every accepted name ``N`` may instead be given as ``N_FILE``, a file holding the value
  (:class:`stream.config.secrets.FileSettings`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from typing import Any

from pydantic import AliasChoices, BaseModel
from pydantic.fields import FieldInfo
from pydantic_settings import EnvSettingsSource

ENV_PREFIX = "ANONSTREAM_"

ALIASES: dict[str, tuple[str, str]] = {
    "k": ("privacy", "k"),
    "l": ("privacy", "l"),
    "max_suppression": ("privacy", "max_suppression"),
    "max_risk": ("privacy", "max_risk"),
    "avg_risk": ("privacy", "avg_risk"),
    "link_guard": ("privacy", "link_guard"),
    "engine_params": ("privacy", "engine_params"),
    "window_by": ("windows", "by"),
    "window_size_s": ("windows", "size_s"),
    "allowed_lateness_s": ("windows", "lateness_s"),
    "window_max_reports": ("windows", "cap"),
    "idle_timeout_s": ("windows", "idle_timeout_s"),
    "max_new_windows_per_hour": ("windows", "max_new_windows_per_hour"),
}
"""Flat name (as it was before the settings were nested) -> (group, field)."""

DERIVED = {("windows", "feed")}
"""Nested fields set from another setting, not by the operator (``windows.feed`` is ``feed``)."""


def env_name(path: tuple[str, ...]) -> str:
    return ENV_PREFIX + "__".join(path).upper()


def leaves(model: type[BaseModel], prefix: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], FieldInfo]]:
    """Every setting of ``model`` as (path, field), nested groups walked into (derived fields left out)."""
    for name, field in model.model_fields.items():
        path = (*prefix, name)
        if path in DERIVED:
            continue
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            yield from leaves(annotation, path)
        else:
            yield path, field


def names_of(path: tuple[str, ...], field: FieldInfo) -> list[str]:
    """The variable names of one setting: its own first, then its aliases."""
    if len(path) == 1 and isinstance(field.validation_alias, AliasChoices):
        return [str(c) for c in field.validation_alias.choices if isinstance(c, str)]
    return [env_name(path), *(env_name((flat,)) for flat, target in ALIASES.items() if target == path)]


def accepted(model: type[BaseModel]) -> dict[str, str]:
    """Every accepted variable name -> the (lower-case) name pydantic-settings reads the value under."""
    out: dict[str, str] = {}
    for path, field in leaves(model):
        names = names_of(path, field)
        for name in names:
            out[name] = (name if len(path) == 1 else names[0]).lower()
    return out


def environ() -> dict[str, str]:
    """The process environment with upper-case names (variable names are not case-sensitive)."""
    return {k.upper(): v for k, v in os.environ.items()}


def nest(data: Mapping[str, Any]) -> dict[str, Any]:
    """``data`` with each flat name moved into its group (a flat value wins over the group's own)."""
    out = dict(data)
    for flat, (group, field) in ALIASES.items():
        if flat in out:
            out[group] = {**as_dict(out.get(group)), field: out.pop(flat)}
    return out


def as_dict(value: Any) -> dict[str, Any]:
    if isinstance(value, BaseModel):
        return value.model_dump()
    return dict(value) if isinstance(value, Mapping) else {}


class NestedEnv(EnvSettingsSource):
    """The environment source, but a nested name's ``_FILE`` form is not read as a field of its group
    (``ANONSTREAM_PRIVACY__K_FILE`` is :class:`~stream.config.secrets.FileSettings`' to read)."""

    def _load_env_vars(self) -> Mapping[str, str | None]:
        files = {f"{name}_FILE".lower() for name in accepted(self.settings_cls)}
        return {k: v for k, v in super()._load_env_vars().items() if k.lower() not in files}


class AliasEnv(EnvSettingsSource):
    """The flat names from the environment, read as their nested names (below them in priority)."""

    def _load_env_vars(self) -> Mapping[str, str | None]:
        env = environ()
        flat = {env_name((name,)): env_name(path).lower() for name, path in ALIASES.items()}
        return {target: env[name] for name, target in flat.items() if name in env}
