"""What a captured session is made of: its run id, its tool-event records, its facts.

One shape for every source, so that a hook's record and a record read back from the
client's own session file can be compared call by call:

* :func:`run_id_for` names the run of a client's session;
* :class:`ToolEvent` is one tool-events record (a hook firing, or a call or result read
  from a session file), redacted by the one secret detector when it is made;
* :class:`SessionFacts` is what the run's manifest ``attributes`` say about the session.

The record format is in ``docs/format.md`` (section "Captured sessions").
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeAlias

from agc._core.capture_failures import CAPTURE_CLIENTS, CaptureClient
from agc._core.redact import redact_value
from agc.errors import UsageError

__all__ = [
    "CLIENTS",
    "ClientName",
    "EventKind",
    "EventSource",
    "SessionFacts",
    "ToolEvent",
    "run_id_for",
]

ClientName: TypeAlias = CaptureClient
"""The agent clients agc captures: Claude Code, the Codex CLI and the Gemini CLI."""

CLIENTS: Final[tuple[ClientName, ...]] = CAPTURE_CLIENTS

EventKind = Literal[
    "session-start",
    "prompt",
    "call",
    "result",
    "stop",
    "compact",
    "session-end",
    "other",
    "sealed",
    "capture-failed",
]
"""What a record tells: a session began or ended, the user prompted, the agent called a
tool (``call``) or got its result (``result``), a turn stopped, the context was compacted;
``other`` for an event agc keeps but does not interpret. Two are agc's own, written by
``agc hook`` (never read from a client): ``sealed`` (the client's session file was
sealed as the run's transcript up to a byte count, with that prefix's digest) and
``capture-failed`` (an event of the session could not be captured)."""

EventSource = Literal["hook", "session-file"]
"""Where a record comes from: a client hook as it fired, or the client's session file."""

_SAFE_SESSION: Final = re.compile(r"[A-Za-z0-9._-]{1,100}")


def _redacted(value: Any) -> Any:
    """``value`` redacted (:func:`agc._core.redact.redact_value`); ``None`` stays."""
    return None if value is None else redact_value(value)


def run_id_for(client: ClientName, session_id: str) -> str:
    """The run id of one client session: ``<client>-<session id>``.

    A session id that is not 1-100 characters of ``A-Z a-z 0-9 . _ -`` (the run-id
    alphabet) is replaced by ``h`` and the first 32 hex digits of its SHA-256, so every
    session id gives one valid run id and different ids give different runs.

    Raises:
        UsageError: ``client`` is not one of :data:`CLIENTS` or ``session_id`` is empty.
    """
    if client not in CLIENTS:
        raise UsageError(f"unknown client {client!r}; known: {', '.join(CLIENTS)}")
    if not session_id:
        raise UsageError(f"a {client} session id is empty")
    if _SAFE_SESSION.fullmatch(session_id) is None or session_id in {".", ".."}:
        session_id = (
            "h" + hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]
        )
    return f"{client}-{session_id}"


@dataclass(frozen=True)
class ToolEvent:
    """One tool-events record of a captured session.

    Attributes:
        event: what happened (:data:`EventKind`).
        source: ``hook`` or ``session-file``.
        client: the client (:data:`ClientName`).
        session_id: the client's session id, as the client gave it.
        hook: the client's own name of the hook event (``PreToolUse``, ``preToolUse``,
            ``BeforeTool`` …), ``None`` for a record read from a session file.
        tool: the tool's name as the client names it (``Bash``, ``shell``,
            ``run_shell_command`` …), ``None`` when the event is not about a tool.
        call_id: the client's id of the tool call, ``None`` when the client gives none
            (Gemini CLI hooks carry no call id).
        input: the tool's input (JSON value), redacted; ``None`` when not a call.
        status: ``ok`` or ``error`` for a result, else ``None``.
        result_bytes: the size of the result in UTF-8 bytes of its JSON text, ``None``
            when not a result.
        agent_ts: the client's own timestamp of the event (ISO 8601 text as the client
            wrote it), ``None`` when the client gives none.
        line: for a record read from a session file, the 1-based line of that file it
            came from; ``None`` for a hook.
    """

    event: EventKind
    source: EventSource
    client: ClientName
    session_id: str
    hook: str | None = None
    tool: str | None = None
    call_id: str | None = None
    input: Any = None
    status: Literal["ok", "error"] | None = None
    result_bytes: int | None = None
    agent_ts: str | None = None
    line: int | None = None

    def to_record(self) -> dict[str, Any]:
        """The record to append (the writer adds ``seq``, ``ts`` and ``run_id``); every
        string is redacted by :func:`agc._core.redact.redact_value`.

        The members whose values are one of a fixed set (``event``, ``source``,
        ``client``, ``status``) and the member names are agc's own words, never scanned;
        every other string, and every key inside ``input``, is (the same result as
        redacting the whole record, at a fraction of the cost for a session of many
        calls)."""
        return {
            "event": self.event,
            "source": self.source,
            "client": self.client,
            "session_id": _redacted(self.session_id),
            "hook": _redacted(self.hook),
            "tool": _redacted(self.tool),
            "call_id": _redacted(self.call_id),
            "input": _redacted(self.input),
            "status": self.status,
            "result_bytes": self.result_bytes,
            "agent_ts": _redacted(self.agent_ts),
            "line": self.line,
        }

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> ToolEvent:
        """A record read back from a sealed tool-events file (writer fields ignored).

        Raises:
            UsageError: the record is not a captured-session record.
        """
        try:
            return cls(
                event=record["event"],
                source=record["source"],
                client=record["client"],
                session_id=record["session_id"],
                hook=record.get("hook"),
                tool=record.get("tool"),
                call_id=record.get("call_id"),
                input=record.get("input"),
                status=record.get("status"),
                result_bytes=record.get("result_bytes"),
                agent_ts=record.get("agent_ts"),
                line=record.get("line"),
            )
        except (KeyError, TypeError) as exc:
            raise UsageError(f"not a captured-session tool event: missing {exc}") from exc


@dataclass(frozen=True)
class SessionFacts:
    """What a run says about the session it captured (its manifest ``attributes``).

    Attributes:
        client: the client.
        session_id: the client's session id.
        model: the model the session used, when known.
        project: the working directory as ``sha256:<first 16 hex>`` of its absolute path
            (never the host path itself), when known.
        first_agent_ts / last_agent_ts: the client's own first and last timestamps.
        tool_calls / tool_failures: calls made and results that failed.
        thread_id: a Codex thread id (``codex exec --json``'s ``thread.started``), which
            names the rollout file Codex wrote.
    """

    client: ClientName
    session_id: str
    model: str | None = None
    project: str | None = None
    first_agent_ts: str | None = None
    last_agent_ts: str | None = None
    tool_calls: int | None = None
    tool_failures: int | None = None
    thread_id: str | None = None

    def to_attributes(self) -> dict[str, Any]:
        """The manifest ``attributes`` object: members that are ``None`` are left out."""
        return {key: value for key, value in vars(self).items() if value is not None}

    @staticmethod
    def project_of(cwd: str) -> str:
        """``sha256:<16 hex>`` of a working directory: names a project without a host path."""
        return "sha256:" + hashlib.sha256(cwd.encode("utf-8", "surrogatepass")).hexdigest()[:16]
