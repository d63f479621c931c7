"""The stream keys ``spec draft`` proposes: the report id (and how far it is unique), the event time, the
station column, and a station map when the station column holds names the intake refuses as ids.

Rules in docs/spec.md ("How spec draft decides", rule 11); keep the two in step.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import pandas as pd

from core.canonical import station_id
from stream.intake.guards import STATION_RE, valid_station_id
from stream.specdraft.outcome import outcome_like
from stream.specdraft.profile import OUTCOME_PATTERN, STATION_PATTERN, Profile, functional, norm
from stream.specdraft.sensitive import OFFENCE_WORDS, OUTCOME_NAME, OUTCOME_WORDS, word_share

if TYPE_CHECKING:
    from stream.specdraft.model import Column, Draft

YES_NO = {"y", "n", "yes", "no", "true", "false", "0", "1", "t", "f"}
MAX_MAPPED = 500  # more station names than this are not a station column


def stream_keys(draft: Draft, profiles: dict[str, Profile], clean: pd.DataFrame) -> None:
    """``id_column`` (with ``id_scope``), ``time_column`` and ``station_column`` (with its map), each with why."""
    ids = [c.name for c in draft.role("identifier")
           if profiles[c.name].n_missing == 0 and profiles[c.name].distinct == draft.rows
           and re.search(r"id|key|no|num|number", norm(c.name)) and not re.search(STATION_PATTERN, norm(c.name))]
    dates = [c.name for c in draft.role("qi") if c.qi and c.qi["type"] == "date"]
    if dates:
        draft.keys["time_column"] = (dates[0], "the event date picks the report's window")
    stations = [c for c in draft.columns if re.search(STATION_PATTERN, norm(c.name))
                and station_fit(c, profiles[c.name], clean, draft)]
    if stations:  # a station or precinct first, then an agency / office; a place the spec generalizes first
        best = min(stations, key=lambda c: (not re.search(r"station|precinct", norm(c.name)), c.role != "qi"))
        draft.keys["station_column"] = (best.name, "routes each report to its station; published as station_id")
        draft.station_map = propose_station_map(profiles[best.name].values)
        if draft.station_map:
            draft.station_map_why = (f"{len(draft.station_map)} value(s) of '{best.name}' are not station ids "
                                     "(1-64 of A-Z a-z 0-9 . _ -, starting with a letter or digit): each is "
                                     "mapped to one")
    if not ids:  # push needs a report id: without one the spec is for anonymize (render.py says so)
        return
    n_st = profiles[draft.keys["station_column"][0]].distinct if "station_column" in draft.keys else 0
    draft.keys["id_column"] = (ids[0], "unique in the sample: fingerprinted by the stream, then dropped")
    draft.keys["id_scope"] = ("global", f"'{ids[0]}' is unique across the whole sample ({draft.rows} rows"
                                        + (f", {n_st} stations" if n_st > 1 else "") + "): a department-wide key, so "
                                        "the same id from two stations is one report, released once")


def station_fit(col: Column, p: Profile, clean: pd.DataFrame, draft: Draft) -> bool:
    """A column may route windows (and be published as each release's ``station_id``) only if it is a
    place or unit, never the sensitive attribute, an outcome, or something that reveals either."""
    if col.role in {"identifier", "sensitive", "passthrough"} or col.name == draft.class_column or p.n_missing:
        return False
    if re.search(OUTCOME_PATTERN, norm(col.name)) or re.search(OUTCOME_NAME, norm(col.name)) \
            or outcome_like(col.name, p):
        return False
    if p.kind == "date" or (p.distinct_ratio > 0.5 and p.distinct > 50) or p.distinct > MAX_MAPPED:
        return False
    if set(p.values.str.lower().unique()) <= YES_NO:  # a flag (force used: Y/N) is an outcome, not a unit
        return False
    if p.kind == "text" and max(word_share(p, OFFENCE_WORDS), word_share(p, OUTCOME_WORDS)) >= 0.2:
        return False
    sens = draft.role("sensitive")
    return not (sens and p.distinct > 1 and functional(clean, col.name, sens[0].name))


def slug(value: str) -> str:
    """A station id made of a name: runs of other characters become ``-`` (``Queens North`` ->
    ``Queens-North``), at most 64 characters, starting with a letter or digit; ``""`` when none is left."""
    out = re.sub(r"[^A-Za-z0-9._-]+", "-", value.strip())
    out = re.sub(r"^[^A-Za-z0-9]+", "", out)[:64].rstrip("-")
    return out if STATION_RE.fullmatch(out) else ""


def propose_station_map(values: pd.Series) -> dict[str, str]:
    """Each distinct value the intake refuses as a station id -> a station id, different from every other
    station's (compared in canonical form, as the intake compares them); ``{}`` when every value is an id."""
    distinct = sorted({str(v).strip() for v in values if str(v).strip()})
    taken = {station_id(v) for v in distinct if valid_station_id(v) is not None}
    out: dict[str, str] = {}
    for n, value in enumerate(v for v in distinct if valid_station_id(v) is None):
        base = slug(value) or f"station-{n + 1}"
        target, i = base, 1
        while station_id(target) in taken:
            i += 1
            target = f"{base[:60]}-{i}"
        taken.add(station_id(target))
        out[value] = target
    return out
