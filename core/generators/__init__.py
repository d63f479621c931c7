"""Synthetic data generators (pure: they take a numpy Generator and return DataFrames, no I/O)."""

from core.generators.crime import (
    DISTRICTS,
    OFFENCES,
    REPORTERS,
    SEVERITY,
    CrimeChunk,
    generate_crime_reports,
    iter_crime_reports,
    station_suburbs,
)

__all__ = ["DISTRICTS", "OFFENCES", "REPORTERS", "SEVERITY", "CrimeChunk", "generate_crime_reports",
           "iter_crime_reports", "station_suburbs"]
