"""Typed release columns and the codebook: what a released label means, as columns an analyst can use.

Pure (no I/O). :func:`typed_columns` turns released rows into the published table;
:func:`build_codebook` describes it; :func:`event_date_spans` gives the
event dates a row may carry (:mod:`core.columns.dates`). See docs/stream.md "Release columns".
"""

from core.columns.codebook import LABEL_FORMAT, build_codebook, spec_version
from core.columns.dates import EVENT_DATES, day_span, event_date_spans, event_days
from core.columns.interpret import Column, Interpreter, interpreter
from core.columns.typed import CLASS_ID, CONTEXT, SUPPRESSED, release_columns, typed_columns

__all__ = ["CLASS_ID", "CONTEXT", "EVENT_DATES", "LABEL_FORMAT", "SUPPRESSED", "Column", "Interpreter",
           "build_codebook", "day_span", "event_date_spans", "event_days", "interpreter", "release_columns",
           "spec_version", "typed_columns"]
