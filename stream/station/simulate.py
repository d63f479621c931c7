"""Simulated police stations for ``anonstream demo`` and the benchmark (generator: core.generators.crime)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

import numpy as np


def _frame_records(frame: Any) -> list[dict[str, Any]]:
    out = []
    for row in frame.to_dict("records"):
        out.append({k: (v.item() if hasattr(v, "item") else v) for k, v in row.items()})
    return out


def generate_day(stations: int, per_station: int, seed: int, day: datetime,
                 prefix: str = "S") -> dict[str, list[dict[str, Any]]]:
    """A day of reports for ``stations`` stations (``S1`` ... ``Sn``), each in event-time order."""
    from core.generators.crime import iter_crime_reports

    out: dict[str, list[dict[str, Any]]] = {}
    for chunk in iter_crime_reports(np.random.default_rng(seed), stations=stations, days=1, per_day=per_station,
                                    start=day.strftime("%Y-%m-%d"), prefix=prefix):
        out[chunk.station] = sorted(_frame_records(chunk.frame), key=lambda r: str(r["event_time"]))
    return out


def bad_reports(station: str, good: dict[str, Any]) -> list[bytes]:
    """A few broken messages a station might send (malformed JSON, missing field, unknown offence)."""
    missing = {k: v for k, v in good.items() if k != "offence"}
    missing["report_id"] = f"{station}-bad-1"
    unknown = {**good, "report_id": f"{station}-bad-2", "offence": "Not An Offence"}
    return [b'{"report_id": "' + station.encode() + b'-bad-0", "station_id": ', json.dumps(missing).encode(),
            json.dumps(unknown).encode()]


def push_day(producer: Any, topic: str, reports: dict[str, list[dict[str, Any]]], extra: list[tuple[str, bytes]] = (),  # type: ignore[assignment]
             rate: float | None = None, on_progress: Callable[[int], None] | None = None) -> int:
    """Interleave the stations' reports by event time and send them keyed by station; returns the count."""
    merged = sorted(((str(r["event_time"]), st, r) for st, rs in reports.items() for r in rs), key=lambda x: x[0])
    sent = 0
    started = time.monotonic()
    for _t, st, r in merged:
        producer.send(topic, key=st.encode(), value=json.dumps(r, separators=(",", ":")).encode())
        sent += 1
        if rate and sent % 100 == 0:
            ahead = sent / rate - (time.monotonic() - started)
            if ahead > 0:
                time.sleep(ahead)
        if on_progress and sent % 1000 == 0:
            on_progress(sent)
    for st, raw in extra:
        producer.send(topic, key=st.encode(), value=raw)
        sent += 1
    producer.flush()
    return sent
