"""What a provider session is: a long-lived agent process behind one conversation.

A :class:`ProviderSession` is started once (spawn and protocol handshake), opens or
resumes one thread, then runs turns one at a time. Each turn delivers the agent's own
events (:class:`ProviderEvent`, the JSON-RPC notification as the agent sent it) to a
callback and ends in a :class:`TurnResult`. A failure to talk to the agent is a
:class:`ProviderError` with a stable ``code`` (the ``error.code`` of the answer).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal, Protocol

__all__ = [
    "PROTOCOLS",
    "EventCallback",
    "ProtocolName",
    "ProviderError",
    "ProviderEvent",
    "ProviderSession",
    "SessionFacts",
    "TurnResult",
    "TurnStatus",
]

ProtocolName = Literal["app-server", "mcp-server"]
PROTOCOLS: Final[tuple[ProtocolName, ...]] = ("app-server", "mcp-server")

TurnStatus = Literal["completed", "failed", "cancelled"]


@dataclass(frozen=True)
class ProviderEvent:
    """One message from the agent: a notification's ``method`` and ``params``.

    ``kind`` is ``notification`` (the agent told us something) or ``server-request``
    (the agent asked us something, e.g. an approval, and what we answered is in
    ``params["agcAnswer"]``).
    """

    method: str
    params: Mapping[str, Any]
    kind: Literal["notification", "server-request"] = "notification"


EventCallback = Callable[[ProviderEvent], Awaitable[None]]


@dataclass(frozen=True)
class TurnResult:
    """How a turn ended.

    Attributes:
        status: ``completed``, ``failed`` or ``cancelled``.
        reply: the assistant's last message of the turn (``None`` when there was none).
        turn_id: the agent's turn id, when it gave one.
        error_code: for a failure, a stable code (``turn_failed``, ``provider_exited`` …).
        error_message: for a failure, a human sentence (no secret: callers redact it).
    """

    status: TurnStatus
    reply: str | None = None
    turn_id: str | None = None
    error_code: str | None = None
    error_message: str | None = None


class ProviderError(Exception):
    """The agent process could not be started, spoken to, or died.

    Attributes:
        code: stable snake_case code for ``error.code`` (``stdio_protocol_not_wired``,
            ``provider_exited``, ``provider_timeout``, ``provider_protocol_error`` …).
        message: a human sentence without secret values.
    """

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass
class SessionFacts:
    """What a started session knows about itself (all optional until known)."""

    thread_id: str | None = None
    session_id: str | None = None
    model: str | None = None
    pid: int | None = None
    agent_version: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class ProviderSession(Protocol):
    """One long-lived agent process for one conversation (see the module docstring)."""

    protocol: ProtocolName
    facts: SessionFacts

    async def start(self) -> None:
        """Spawn the process and complete the protocol handshake.

        Raises:
            ProviderError: ``stdio_protocol_not_wired`` (handshake failed or timed out),
                ``codex_cli_binary_missing`` / ``codex_cli_not_executable`` (spawn failed).
        """

    async def open_thread(self, resume_thread_id: str | None) -> None:
        """Start a new thread, or resume ``resume_thread_id``; fills :attr:`facts`.

        Raises:
            ProviderError: the agent refused or died.
        """

    async def run_turn(self, text: str, on_event: EventCallback, *, client_id: str) -> TurnResult:
        """Send one user message and deliver events until the turn ends.

        Never raises for a turn that failed: the failure is in the result (a dead
        process is ``failed`` with ``provider_exited``).
        """

    async def interrupt(self) -> None:
        """Ask the agent to stop the running turn (no-op when none runs)."""

    def alive(self) -> bool:
        """Whether the process still runs."""

    def kill(self) -> None:
        """SIGKILL the process group at once (a turn that does not stop)."""

    async def close(self) -> None:
        """End the process: close its stdin, then SIGTERM, then SIGKILL its group."""
