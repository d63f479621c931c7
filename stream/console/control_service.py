"""The console service's controls (:class:`ConsoleControls`, mixed into
:class:`stream.console.service.ConsoleService`): each one applies a :mod:`stream.console.controls`
transaction, or re-verifies a release from the output topic, for the web layer's ``POST`` routes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from db import console_queries as q
from stream.console import controls


class ConsoleControls:
    """Operator controls; expects the service's ``db``, ``settings``, ``_read``, ``scrub_words``,
    ``_spec_info``, ``_schema_of`` and ``_feed_of``."""

    db: Any
    settings: Any

    if TYPE_CHECKING:  # the host's own methods (stream/console/service.py), declared for the type checker
        def _read(self) -> Any: ...
        def scrub_words(self) -> set[str]: ...
        def _spec_info(self, schema: Any = None) -> tuple[list[str] | None, str | None,
                                                           dict[str, float] | None]: ...
        def _schema_of(self, release_id: str) -> Any: ...
        def _feed_of(self, release_id: str) -> Any: ...

    def pause(self, station: str, paused: bool, actor: str, note: str | None = None) -> dict[str, Any]:
        return controls.set_paused(self.db, station, paused, actor, note)

    def flush(self, station: str, actor: str) -> dict[str, Any]:
        """Release the station's reports waiting below ``min_release_rows`` now (at least k)."""
        from stream.intake.guards import valid_station_id

        canonical = valid_station_id(station)  # `08` is station 8
        if canonical is None:
            raise controls.ControlError("invalid station id", 400)
        station = canonical
        done = controls.flush_waiting(self.db, self.settings.windows, [self.settings.window_key_for(station)], actor)
        return {"station": station, "key": done[0]["key"], "waiting": done[0]["pending"],
                "windows_flagged": len(done[0]["windows"])}

    def register(self, stations: str, actor: str, note: str | None = None) -> dict[str, Any]:
        return controls.register_stations(self.db, stations, actor, note)

    def unregister(self, stations: str, actor: str) -> dict[str, Any]:
        return controls.unregister_stations(self.db, stations, actor)

    def release_window(self, window_id: str, actor: str, mode: str = "retry",
                       note: str | None = None) -> dict[str, Any]:
        return controls.release_held_window(self.db, window_id, actor, mode, note,  # type: ignore[arg-type]
                                            self.scrub_words())

    def reverify(self, release_id: str, actor: str, timeout_s: float = 30.0) -> dict[str, Any]:
        from stream.console.reverify import reverify

        with self._read() as s:
            detail = q.release_detail(s, release_id)
        if detail is None:
            raise controls.ControlError("no such release", 404)
        if not self.settings.broker_url:
            raise controls.ControlError("no broker configured (ANONSTREAM_BROKER_URL / --broker)", 503)
        qis, sens, _sev = self._spec_info(self._schema_of(release_id))
        result = reverify(self.settings.bootstrap_servers(), self._feed_of(release_id).topic_anonymized, detail, qis,
                          sens, timeout_s=timeout_s)
        controls.record_reverification(self.db, result, actor)
        return result
