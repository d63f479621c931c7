"""The utility plot on its own: every shape of the manifest's ``utility`` renders, saying what is missing."""

from __future__ import annotations

from stream.console.plots import utility_svg


def test_utility_plot_panels_and_empty_cases() -> None:
    level = {"level": 1, "name": "region", "resolved": 0.9, "tvd": 0.05, "coarser": 1, "withheld": 2,
             "released": {"North": 6, "South": 3}, "original": {"North": 7}}
    svg = utility_svg({"published": 10, "qis": {"suburb": {"levels": [level]}},
                       "sensitive": {"name": "offence", "released": {"Theft": 10}, "suppressed": 0}})
    assert "suburb at region (TVD 0.05)" in svg and "offence (published)" in svg
    assert "original cells under k withheld (2 rows)" in svg and "original counts not published" in svg
    assert "no utility report in this release" in utility_svg(None)
    assert "KeyError" in utility_svg({"public": True, "error": "KeyError: 'x'"})
    assert "no level resolves" in utility_svg({"published": 0, "qis": {}})
