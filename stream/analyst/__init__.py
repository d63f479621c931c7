"""The analyst side: consume complete, signed releases and load them into pandas.

``read_releases(path)`` loads consumed releases (:mod:`stream.analyst.dataset`); ``band_counts(df, qi,
level, read_codebook(path))`` counts rows per band at one hierarchy level and ``read_utility(path)`` tabulates
what each release preserves (:mod:`stream.analyst.bands`); ``day_counts(df)`` bounds the reports of each
day from the rows' event date spans (:mod:`stream.analyst.days`).
"""

from stream.analyst.bands import Bands, CoarseBandsWarning, band_counts, read_codebook, read_utility
from stream.analyst.dataset import read_releases
from stream.analyst.days import day_counts

__all__ = ["Bands", "CoarseBandsWarning", "band_counts", "day_counts", "read_codebook", "read_releases",
           "read_utility"]
