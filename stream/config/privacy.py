"""A feed's privacy settings: ``Settings.privacy``, a feed's ``privacy`` table, ``ANONSTREAM_PRIVACY__*``.

The privacy requirement's fields (``k``, ``l``, ``l_kind``, ``c``, ``t``, ``t_distance``,
``max_suppression``, ``max_risk``, ``avg_risk``) are declared once, in
:class:`core.privacy.PrivacyRequirement`; this model extends it with the linking guard and the engine's
own parameters. Two defaults differ from the requirement's (:data:`STREAM_DEFAULTS`): the stream allows
``max_suppression`` 0.05, what it has always used, so a window whose last few rows fit no class is
released without them rather than carried or held; and it requires distinct ``l`` 2 on the sensitive
attribute, so no released class gives away its offence to anyone who knows a member's quasi-identifiers
(issue 39; the default engine is then ``cg-diverse``, :mod:`stream.worker.engine_choice`). The batch
commands use each engine's default (its Params' ``privacy_defaults``: :func:`core.engines.registry.privacy_defaults`).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field

from core.engines.registry import engine_module
from core.errors import UnknownEngineError
from core.privacy.requirement import PrivacyRequirement


def _registered(name: str) -> str:
    try:
        engine_module(name)  # the registry's table; the engine itself is not imported
    except UnknownEngineError as exc:
        raise ValueError(exc.message) from None
    return name


EngineName = Annotated[str, AfterValidator(_registered)]
"""The engine a feed runs (``Settings.engine``, a feed's ``engine``): a registered name, checked when the
settings are read, so a typo is one error line before anything starts."""

STREAM_DEFAULTS: dict[str, Any] = {"max_suppression": 0.05, "l": 2}
"""The stream's privacy defaults that are not the requirement's (docs/operations.md, "Privacy defaults")."""


class StreamPrivacy(PrivacyRequirement):
    """What a feed's releases must satisfy, how its history is guarded, and its engine's own parameters."""

    privacy_defaults = STREAM_DEFAULTS

    link_guard: Literal["off", "report", "content", "person"] = Field(
        default="content", description="history rule: report (station + report id), content (also the keyed "
        "content fingerprint, whatever station or report id a report arrives under, counted in occurrences: "
        "the n-th report with a content is blocked only once n were released, so co-offenders are all "
        "released and a re-send is not), person (also any report of an already released person); see "
        "docs/privacy.md")
    engine_params: dict[str, Any] = Field(default_factory=dict, description="the engine's own parameters (JSON "
                                          "table, see `anonstream engines`); they win over the fields above")
