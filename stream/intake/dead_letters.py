"""The dead-letter record: a rejected message as the worker sends it to ``crime.reports.dlq``."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from stream.intake.guards import bounded_payload, one_line


class DeadLetter(BaseModel):
    """A rejected message. ``payload`` is an excerpt when ``truncated``
    (see :func:`stream.intake.guards.bounded_payload`);
    ``station_id`` is set only when the message carried a valid one."""

    model_config = ConfigDict(extra="forbid")

    payload: str
    reason: str
    message: str
    station_id: str | None
    at: str
    payload_bytes: int = 0
    payload_sha256: str | None = None
    truncated: bool = False


def dead_letter(raw: bytes | str | None, reason: str, message: str, station_id: str | None,
                at: Any) -> dict[str, Any]:
    """A :class:`DeadLetter` as a dict, its payload bounded (at most 16,384 characters, see
    :func:`stream.intake.guards.bounded_payload`) so it fits any producer's max_request_size."""
    return DeadLetter(reason=reason, message=one_line(message), station_id=station_id, at=at.isoformat(),
                      **bounded_payload(raw)).model_dump()
