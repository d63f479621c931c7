"""What the settings must say for a spec's differentially private counts to hold their guarantee.

Checked before anything starts (``anonstream run``, :func:`stream.worker.dpcounts.check_counts` at a
worker's start): one ``error:`` line, nothing started. docs/privacy.md "The guarantee" says why each
condition is needed.
"""

from __future__ import annotations

from typing import Any

from core.errors import ParamsError


def check_dp_settings(settings: Any, dp: Any) -> None:
    """Refuse (:class:`~core.errors.ParamsError`) settings under which ``dp`` (a spec's ``[dp]``, or None)
    would not hold: a sample other than ``all``, the person unit without every report's person
    fingerprint, ``[dp] person`` columns other than the stream's."""
    if dp is None:
        return
    where = f"feed {settings.feed}: " if settings.feed != "default" else ""
    if settings.delay.enabled:
        raise ParamsError(f"{where}delay mode (ANONSTREAM_DELAY__ENABLED) cannot keep the differentially private "
                          "counts' guarantee (a group of departing reports declares no event days to charge): remove "
                          "the spec's [dp] table or release by window", reason="invalid-setting")
    if settings.sample_policy != "all":
        raise ParamsError(f"{where}differentially private counts need sample_policy = all (it is "
                          f"{settings.sample_policy}): a seeded sample is drawn again when one report is added, so "
                          "one report would move many cells; set ANONSTREAM_SAMPLE_POLICY=all or remove the spec's "
                          "[dp] table", reason="invalid-setting")
    if dp.unit == "person":
        if settings.privacy.link_guard == "off":
            raise ParamsError(f"{where}[dp] unit = person needs every report's person fingerprint: set the linking "
                              "guard (ANONSTREAM_LINK_GUARD) to report, content or person, not off",
                              reason="invalid-setting")
        if set(dp.person) != set(settings.person_columns):
            raise ParamsError(f"{where}[dp] person = {list(dp.person)} is not the stream's person columns "
                              f"{list(settings.person_columns)} (ANONSTREAM_PERSON_COLUMNS): the person bounded in "
                              "the counts must be the one fingerprinted", reason="invalid-setting")
