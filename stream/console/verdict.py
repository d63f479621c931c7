"""The deployment's verdict: healthy, or what needs action and the one action that fits each.

:func:`deployment_verdict` ``(service) -> Verdict`` is the one entry point: ``anonstream status`` (and
``status --wait``), ``/health``, ``/api/health`` (HTTP 503 whenever ``not verdict.ok``) and the console's
banner on every page use it. It reads the health view of a :class:`stream.console.service.ConsoleService`
(which embeds the same verdict as ``health()["verdict"]``); :func:`verdict` computes it from that dict,
with no I/O of its own. ``Verdict.ok``, ``Verdict.code`` (the exit code of ``status``) and
``Verdict.reasons`` (``[(what, action)]``, the first the most urgent) are all a page needs.

The checks, in the order they are reported (the first that fires gives the code; every one is listed):

1. **worker** (exit 5): no worker is alive. A worker is alive by its own heartbeat row only (fresh,
   not marked stopped, and its pid running when it ran on this host), never by broker group
   membership: a broker keeps a killed worker in its group for a session timeout or longer;
2. **broker** (exit 3): the configured broker (flag, environment, or the instance file ``run`` wrote)
   does not answer;
3. **held window** (exit 4): a window the worker refused to release, sorted by its reason, with what
   the operator can change and where (:mod:`stream.console.advice`);
4. **lag** (exit 7): the workers are :data:`LAG_ACT` reports or more behind the reports topic;
5. **dead letters** (exit 6): reports were dead-lettered in the last :data:`DLQ_RECENT_S` seconds.

Exit codes of ``anonstream status`` (docs/operations.md, "Exit codes"): 0 healthy, 1 still busy after
``--wait``, 2 usage, 3 a service unreachable (database: before any verdict; broker: the check above),
then the codes above. :data:`SETTLED` are the codes waiting does not change.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from stream.console.advice import advise

EXIT_HEALTHY, EXIT_BROKER, EXIT_HELD, EXIT_WORKER, EXIT_DLQ, EXIT_LAG = 0, 3, 4, 5, 6, 7
EXIT_MEANINGS = {EXIT_BROKER: "a service unreachable (the database, or the configured broker does not answer)",
                 EXIT_HELD: "a window is held (a release was refused): review it, then release it or carry it",
                 EXIT_WORKER: "no worker is running", EXIT_DLQ: "reports are being dead-lettered",
                 EXIT_LAG: "the workers are behind the reports topic"}
SETTLED = (EXIT_BROKER, EXIT_HELD, EXIT_WORKER)  # states that waiting alone will not change
LAG_ACT = 1000  # reports behind before the lag needs action
DLQ_RECENT_S = 900.0  # dead letters this recent count as "growing"
RELEASE_BUTTON = "“release after review” (console, Health page, Held windows)"


@dataclass(frozen=True)
class Finding:
    """One thing that needs action: what, and what to do about it."""

    check: str  # worker | broker | held | lag | dlq
    what: str
    action: str
    code: int

    @property
    def line(self) -> str:
        return f"{self.what}: {self.action}"


@dataclass(frozen=True)
class Verdict:
    """Healthy (``ok``, code 0), or the findings that need action, the most urgent first."""

    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # not failures: what could not be checked

    @property
    def ok(self) -> bool:
        return not self.findings

    @property
    def healthy(self) -> bool:
        return self.ok

    @property
    def code(self) -> int:
        return self.findings[0].code if self.findings else EXIT_HEALTHY

    @property
    def reasons(self) -> list[tuple[str, str]]:
        """``[(what needs action, the action that fits)]``, the most urgent first; empty when ``ok``."""
        return [(f.what, f.action) for f in self.findings]

    @property
    def settled(self) -> bool:
        """Whether waiting alone will not change the verdict (a worker dead, the broker gone, a window held)."""
        return self.code in SETTLED

    @property
    def line(self) -> str:
        if self.findings:
            more = len(self.findings) - 1
            return f"ACTION NEEDED: {self.findings[0].line}" + (f" (and {more} more below)" if more else "")
        worker = "" if any(n.startswith("no worker") for n in self.notes) else "worker running, "
        return f"HEALTHY: {worker}no held window, no backlog, no recent dead letters" + (
            f" ({'; '.join(self.notes)})" if self.notes else "")

    def as_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "healthy": self.ok, "code": self.code, "line": self.line, "notes": self.notes,
                "reasons": [list(r) for r in self.reasons],
                "findings": [{"check": f.check, "what": f.what, "action": f.action, "code": f.code}
                             for f in self.findings]}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Verdict:
        """The verdict :meth:`as_dict` gave (``health()["verdict"]``)."""
        return cls([Finding(f["check"], f["what"], f["action"], int(f["code"])) for f in d.get("findings") or []],
                   list(d.get("notes") or []))


class HealthSource(Protocol):
    """What :func:`deployment_verdict` reads: a :class:`stream.console.service.ConsoleService`."""

    def health(self) -> dict[str, Any]: ...


def deployment_verdict(service: HealthSource) -> Verdict:
    """The deployment's verdict, from ``service.health()`` (ledger, heartbeats, a bounded broker look-up)."""
    return Verdict.from_dict(service.health()["verdict"])


def age_text(seconds: float | None) -> str:
    """``42 s``, ``17 min``, ``3.5 h``, ``2.0 days``; ``–`` when unknown."""
    if seconds is None:
        return "–"
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h" if seconds < 172800 else f"{seconds / 86400:.1f} days"


def _when(iso: str | None, now: datetime) -> float | None:
    if not iso:
        return None
    try:
        t = datetime.fromisoformat(iso)
    except ValueError:
        return None
    return (now - (t if t.tzinfo else t.replace(tzinfo=UTC))).total_seconds()


BEAT_WHY = {"stopped": "stopped cleanly", "gone": "its process is gone", "stale": "last heartbeat"}


def _worker(h: dict[str, Any], now: datetime) -> Finding | None:
    wk = h.get("worker") or {}
    if wk.get("status") == "running":
        return None
    pending = (h.get("pool") or {}).get("pending_total") or 0
    beats = [b for b in wk.get("heartbeats") or [] if b.get("heartbeat_age_s") is not None]
    if beats:
        last = min(beats, key=lambda b: b["heartbeat_age_s"])
        age = float(last["heartbeat_age_s"])
        why = BEAT_WHY.get(str(last.get("state")), "last heartbeat")
        since = (f"since {now - timedelta(seconds=age):%Y-%m-%d %H:%M} UTC ({age_text(age)} ago: {why}, "
                 f"{last['worker']})")
    elif not pending:  # a new ledger: nothing ran and nothing waits (a note, not a failure)
        return None
    else:
        since = "(no worker has ever written a heartbeat to this ledger)"
    return Finding("worker", f"no worker running {since}" + (f"; {pending} report(s) wait" if pending else ""),
                   "start one (`anonstream run`, or `docker compose up -d worker`)"
                   + ("" if str(wk.get("status")) == "stopped" else " and read the last worker's log for why it "
                      "stopped"), EXIT_WORKER)


def _broker(h: dict[str, Any]) -> Finding | None:
    b = h.get("broker") or {}
    if not b.get("url") or not b.get("error"):
        return None
    return Finding("broker", f"broker {b['url']} does not answer ({b['error']})",
                   "start it again (`anonstream run` restarts its embedded broker; compose: `docker compose up -d "
                   "kafka`); the workers exit when it stays away and resume from the ledger", EXIT_BROKER)


def held_kind(reason: str) -> tuple[str, str, str]:
    """What kind of refusal a held window's reason is, what to fix first, and the release mode to pick then
    (:func:`stream.console.advice.advise`)."""
    a = advise(reason)
    return a.kind, a.fix, a.mode


def _held(h: dict[str, Any], now: datetime) -> Finding | None:
    held = (h.get("windows") or {}).get("held") or []
    if not held:
        return None
    w = held[-1]  # the oldest (the list is newest first)
    kind, fix, mode = held_kind(str(w.get("reason") or ""))
    age = _when(w.get("closed_at"), now)
    more = f" (and {len(held) - 1} more held window(s))" if len(held) > 1 else ""
    return Finding("held", f"window {w['id']} held for {age_text(max(age or 0.0, 0.0))}, {w.get('count')} report(s) "
                   f"unpublished: {kind} ({w.get('reason')}){more}",
                   f"{fix}; then press {RELEASE_BUTTON} with “{mode}”", EXIT_HELD)


def _lag(h: dict[str, Any]) -> Finding | None:
    lag = h.get("lag") or {}
    total = lag.get("total")
    if lag.get("error") or not isinstance(total, int | float) or total < LAG_ACT:
        return None
    return Finding("lag", f"the workers are {int(total)} report(s) behind {lag.get('topic')}",
                   "check that every worker is running and not failing (its log, `anonstream_failures_total`); "
                   "add workers (compose `deploy.replicas`) if they are all busy", EXIT_LAG)


def _dlq(h: dict[str, Any], now: datetime) -> Finding | None:
    recent = [e for e in (h.get("dlq") or {}).get("recent") or []
              if (age := _when(e.get("at"), now)) is not None and age <= DLQ_RECENT_S]
    if not recent:
        return None
    by: dict[str, set[str]] = {}
    for e in recent:
        by.setdefault(str(e.get("reason")), set()).add(str(e.get("station")).strip("()"))
    n = f"{len(recent)}+" if len(recent) == len((h.get("dlq") or {}).get("recent") or []) >= 20 else str(len(recent))
    reasons = ", ".join(f"{reason} ({', '.join(sorted(st))})" for reason, st in sorted(by.items()))
    if "unknown-station" in by:
        fix = (f"register the station(s): `anonstream stations add {' '.join(sorted(by['unknown-station']))}` "
               "(their reports are rejected until then); other reasons: fix the export at the station and push again")
    else:
        fix = "fix the export at the station and push it again (reasons: Health page → Dead-letter queue)"
    return Finding("dlq", f"{n} report(s) dead-lettered in the last {DLQ_RECENT_S / 60:.0f} min: {reasons}", fix,
                   EXIT_DLQ)


def verdict(h: dict[str, Any], now: datetime | None = None) -> Verdict:
    """The verdict on a health dict (see the module docstring for the checks and their order)."""
    now = now or datetime.now(UTC)
    found = [f for f in (_worker(h, now), _broker(h), _held(h, now), _lag(h), _dlq(h, now)) if f is not None]
    notes = []
    lag = h.get("lag") or {}
    if lag.get("error") and not (h.get("broker") or {}).get("error"):
        notes.append(f"consumer lag not checked: {lag['error']}")
    wk = h.get("worker") or {}
    if wk.get("status") != "running" and not any(f.check == "worker" for f in found):
        notes.append("no worker has run on this ledger yet")
    return Verdict(found, notes)
