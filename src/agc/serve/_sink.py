"""Where a turn's record goes: the :class:`TurnSink` the service is given.

The service calls a sink three times per turn, in order, from a worker thread (never
the event loop), one turn's calls one after the other; calls of different turns may
overlap, so a sink keeps per-turn state by ``trace_id``:

* :meth:`TurnSink.on_turn_start` before the turn starts (the request is known);
* :meth:`TurnSink.on_event` for each trace event (already redacted);
* :meth:`TurnSink.on_turn_end` once, after the last event, whatever the outcome; its
  answer (a JSON object: which run holds the record, whether it is sealed) is shown as
  ``audit`` in ``/result``.

A sink that raises from ``on_turn_start`` stops the turn before the agent sees it
(``audit_unavailable``); one that raises from ``on_event`` stops the turn
(``audit_write_failed``). :class:`NullSink` records nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from agc.serve._trace import TraceEvent

__all__ = ["NullSink", "TurnEnd", "TurnInfo", "TurnSink"]


@dataclass(frozen=True)
class TurnInfo:
    """A turn as the sink sees it at its start.

    Attributes:
        trace_id: the turn's trace id (also a valid agc run id and ledger turn id).
        conversation_id: its conversation.
        turn_number: 1 for the first turn of the conversation, then 2, 3 …
        message: the user's message as sent (a sink stores it redacted or hashed).
        created_at_ms: Unix ms of the request.
        provider: ``codex-stdio``.
        workspace: the agent's working folder.
        idempotency_key: the request's ``Idempotency-Key`` header, if any.
        attachments: the files the request offered the agent: workspace-relative POSIX
            paths of files that existed when it was accepted (no ``..``, not absolute).
    """

    trace_id: str
    conversation_id: str
    turn_number: int
    message: str
    created_at_ms: int
    provider: str
    workspace: Path
    idempotency_key: str | None = None
    attachments: tuple[str, ...] = ()


@dataclass(frozen=True)
class TurnEnd:
    """How the turn ended (``status``: ``completed``, ``failed`` or ``cancelled``)."""

    status: str
    reply: str | None
    error: Mapping[str, Any] | None
    protocol: str | None
    model: str | None
    thread_id: str | None
    session_id: str | None
    turn_id: str | None
    event_count: int
    ended_at_ms: int
    redactions: int = 0


class TurnSink(Protocol):
    """Receives a turn's record (see the module docstring)."""

    def on_turn_start(self, turn: TurnInfo) -> None:
        """The turn is about to start. Raising refuses the turn."""

    def on_event(self, turn: TurnInfo, event: TraceEvent) -> None:
        """One trace event. Raising stops the turn."""

    def on_turn_end(self, turn: TurnInfo, end: TurnEnd) -> Mapping[str, Any]:
        """The turn ended; seal what was written. Returns the ``audit`` summary."""


class NullSink:
    """A sink that records nothing (``audit: {"recorded": false}``)."""

    def on_turn_start(self, turn: TurnInfo) -> None:
        del turn

    def on_event(self, turn: TurnInfo, event: TraceEvent) -> None:
        del turn, event

    def on_turn_end(self, turn: TurnInfo, end: TurnEnd) -> Mapping[str, Any]:
        del turn, end
        return {"recorded": False}
