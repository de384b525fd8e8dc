"""Client session files into runs: tool events and session facts filled on import.

Combines :mod:`agc.capture` (the pure parsers of the clients' session files) with the
evidence layer (:func:`agc.integrity.ingest_stream`): a Codex rollout, a ``codex exec
--json`` stream, a Claude Code session or a Gemini CLI chat recorded or imported as a
transcript gets one tool-events record per tool call and per result, and the run's
manifest ``attributes`` say what the session was (:class:`agc.capture.SessionFacts`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from agc.capture import SessionParser
from agc.integrity import Companion

__all__ = ["SessionCompanion", "session_companion"]


class SessionCompanion:
    """A :class:`agc.integrity.Companion` reading a client's session file as it is
    ingested: tool-event records (``source="session-file"``) and, at the end, the
    session's facts as manifest attributes (``None`` for a file of no known format)."""

    def __init__(self, session_id: str | None = None) -> None:
        self.parser = SessionParser(session_id=session_id)

    def feed(self, line: Mapping[str, Any]) -> list[dict[str, Any]]:
        return [event.to_record() for event in self.parser.feed(line)]

    def attributes(self) -> dict[str, Any] | None:
        facts = self.parser.facts()
        return None if facts is None else facts.to_attributes()


def session_companion(session_id: str | None = None) -> Callable[[], Companion]:
    """What :func:`agc.integrity.ingest_stream` takes as ``companion`` to fill a session
    run's tool-events and attributes (a new :class:`SessionCompanion` per ingest)."""
    return lambda: SessionCompanion(session_id)
