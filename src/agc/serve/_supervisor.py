"""The session supervisor: conversations, their Codex processes, and their turns.

A **conversation** (``conversationId``) maps to one Codex thread and, while it is in
use, one long-lived Codex process (a :class:`~agc.serve._provider.ProviderSession`).
Its ``status`` is

* ``starting``: a process is being started for it (spawn, handshake, thread);
* ``ready``: the process runs and waits for a message;
* ``busy``: a turn runs;
* ``idle``: no process (not started yet, reaped after ``idleTimeoutMs`` without a turn,
  or ended by a crash). The next message starts one and resumes the thread.

A **turn** (``traceId``) is one message and the agent's work on it. ``submit`` answers
at once (the caller polls); the turn runs in the background: the sink is told it
starts, a process is started if the conversation has none, the message is sent, each
event goes to the trace and to the sink, and the turn ends ``completed``, ``failed``
or ``cancelled``: a dead process, a timeout or a cancel never leaves it running. The
turn's ``status`` turns terminal only after the sink sealed its record.

Lifecycle: :meth:`Supervisor.start` starts the reaper (every ``reap_interval_ms``: ends
processes idle for ``idle_timeout_ms``, forgets idle conversations after
``conversation_retention_ms``); :meth:`Supervisor.stop` interrupts running turns, waits
for them to be sealed, and ends every process.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import re
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from agc._core.redact import redact_text
from agc.errors import MissingExtraError
from agc.serve._appserver import AppServerOptions, AppServerSession
from agc.serve._config import ServeConfig
from agc.serve._preflight import Blocker, Preflight, PreflightReport, resolve_binary
from agc.serve._provider import (
    ProtocolName,
    ProviderError,
    ProviderEvent,
    ProviderSession,
    TurnResult,
)
from agc.serve._sink import NullSink, TurnEnd, TurnInfo, TurnSink
from agc.serve._trace import (
    EventSource,
    Trace,
    TraceEvent,
    iso_ms,
    now_ms,
    well_formed,
)

__all__ = [
    "PROVIDER",
    "ChatRefusedError",
    "Conversation",
    "SessionFactory",
    "Supervisor",
    "default_session_factory",
    "offered_files",
]

PROVIDER: Final = "codex-stdio"
_GRACE_S: Final = 10.0  # seconds a turn gets to end after an interrupt before its process dies
_IDEMPOTENCY_KEYS: Final = 10_000
_MAX_ID_CHARS: Final = 128

SessionFactory = Callable[[ProtocolName], ProviderSession]


_MAX_ATTACHMENTS: Final = 32
_MAX_PATH_CHARS: Final = 1024
_DRIVE: Final = re.compile(r"[A-Za-z]:")


def offered_files(workspace: Path, raw: Any) -> tuple[str, ...]:
    """The ``attachments`` of a chat request, checked: each a path relative to the
    workspace of a file that exists there. Returns them as POSIX paths without ``.``
    components, each once, in the order given.

    Raises:
        ChatRefusedError: not a list of at most 32 strings (``400 attachments_invalid``);
            a path that is absolute (POSIX, a drive, ``~``, a backslash), climbs with
            ``..``, leads out of the workspace (a symlink), does not exist or is not a
            regular file (``422 attachment_invalid`` naming the path and the reason).
    """
    if raw is None:
        return ()
    if (
        not isinstance(raw, list)
        or len(raw) > _MAX_ATTACHMENTS
        or not all(isinstance(p, str) and 0 < len(p) <= _MAX_PATH_CHARS for p in raw)
    ):
        raise ChatRefusedError(
            400,
            _error(
                "attachments_invalid",
                f"attachments must be a list of at most {_MAX_ATTACHMENTS} project-relative "
                f"paths (strings of 1-{_MAX_PATH_CHARS} characters)",
            ),
        )
    root = Path(os.path.realpath(workspace))
    found: dict[str, None] = {}
    for index, path in enumerate(raw):
        parts = [part for part in path.split("/") if part not in ("", ".")]
        reason = None
        if (
            path.startswith(("/", "~"))
            or "\\" in path
            or _DRIVE.match(path)
            or not path.isprintable()
        ):
            reason = "not a relative POSIX path"
        elif ".." in parts:
            reason = "climbs out with '..'"
        elif not parts:
            reason = "names no file"
        else:
            real = Path(os.path.realpath(root.joinpath(*parts)))
            if not real.is_relative_to(root):
                reason = "leads out of the workspace"
            elif not real.exists():
                reason = "does not exist in the workspace"
            elif not real.is_file():
                reason = "is not a regular file"
        if reason is not None:
            shown = well_formed(redact_text(path)[:200])
            raise ChatRefusedError(
                422,
                _error(
                    "attachment_invalid",
                    f"attachments[{index}] {shown!r} {reason}",
                    index=index,
                    reason=reason,
                ),
            )
        found["/".join(parts)] = None
    return tuple(found)


class ChatRefusedError(Exception):
    """A chat request that is not accepted: ``http_status`` and the JSON ``body`` to
    answer with (``Retry-After`` seconds when it is worth trying again)."""

    def __init__(self, http_status: int, body: Mapping[str, Any], retry_after: int | None = None):
        super().__init__(str(body))
        self.http_status = http_status
        self.body = dict(body)
        self.retry_after = retry_after


def _error(code: str, message: str, **extra: Any) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, **extra}}


@dataclass
class Conversation:
    """One conversation of the registry (see the module docstring)."""

    conversation_id: str
    created_at_ms: int
    updated_at_ms: int
    idle_timeout_ms: int
    status: str = "idle"
    session: ProviderSession | None = None
    protocol: str | None = None
    thread_id: str | None = None
    session_id: str | None = None
    model: str | None = None
    turn_count: int = 0
    last_trace_id: str | None = None
    last_active: float = 0.0

    @property
    def live(self) -> bool:
        return self.session is not None or self.status == "starting"

    def to_dict(self) -> dict[str, Any]:
        """The registry entry as JSON."""
        return {
            "conversationId": self.conversation_id,
            "sessionId": self.session_id,
            "threadId": self.thread_id,
            "status": self.status,
            "provider": PROVIDER,
            "protocol": self.protocol,
            "model": self.model,
            "createdAt": iso_ms(self.created_at_ms),
            "updatedAt": iso_ms(self.updated_at_ms),
            "idleTimeoutMs": self.idle_timeout_ms,
            "lastTraceId": self.last_trace_id,
            "turnCount": self.turn_count,
            "longLivedSession": True,
            "processRunning": self.session is not None and self.session.alive(),
        }


def default_session_factory(config: ServeConfig, *, client_version: str) -> SessionFactory:
    """Sessions that run the real Codex executable of ``config``.

    The returned factory raises :class:`~agc.errors.MissingExtraError` for the
    ``mcp-server`` protocol when the MCP Python SDK (the ``serve`` extra) is not
    installed.
    """

    def make(protocol: ProtocolName) -> ProviderSession:
        env = config.agent_env()
        binary, _ = resolve_binary(config.codex_bin, env)
        log = None
        if config.codex_log_dir is not None:
            log = config.codex_log_dir / f"codex-{protocol}-{uuid.uuid4().hex[:12]}.log"
        if protocol == "app-server":
            return AppServerSession(
                AppServerOptions(
                    binary=binary or config.codex_bin,
                    env=env,
                    workspace=config.workspace,
                    approval_policy=config.approval_policy,
                    sandbox=config.sandbox,
                    model=config.model,
                    handshake_timeout_s=config.handshake_timeout_ms / 1000,
                    request_timeout_s=config.request_timeout_ms / 1000,
                    client_version=client_version,
                    opt_out_notifications=config.opt_out_notifications,
                    stderr_log=log,
                    extra_args=config.codex_args,
                )
            )
        # The MCP Python SDK (the ``serve`` extra) only for this protocol.
        with MissingExtraError.raised_for("serve", feature="the codex mcp-server protocol"):
            from agc.serve._mcpserver import (  # noqa: PLC0415
                McpServerOptions,
                McpServerSession,
            )

        return McpServerSession(
            McpServerOptions(
                binary=binary or config.codex_bin,
                env=env,
                workspace=config.workspace,
                approval_policy=config.approval_policy,
                sandbox=config.sandbox,
                model=config.model,
                handshake_timeout_s=config.handshake_timeout_ms / 1000,
                client_version=client_version,
                stderr_log=log,
                argv=(binary or config.codex_bin, "mcp-server", *config.codex_args),
            )
        )

    return make


class Supervisor:
    """Runs conversations and turns (see the module docstring).

    Args:
        config: the settings.
        sink: where each turn is recorded (default: nowhere).
        session_factory: makes a session for a protocol (default: the real Codex).
        extra_checks: preflight checks composed in by the caller.
        client_version: sent to Codex as the client's version.
        monotonic: the clock for idle times, in seconds.
        grace_s: seconds a turn gets to end after an interrupt before its process is
            killed (a cancel, a timeout, a shutdown).
    """

    def __init__(
        self,
        config: ServeConfig,
        sink: TurnSink | None = None,
        *,
        session_factory: SessionFactory | None = None,
        extra_checks: Sequence[Callable[[], Blocker | None]] = (),
        client_version: str = "0",
        monotonic: Callable[[], float] = time.monotonic,
        grace_s: float = _GRACE_S,
    ) -> None:
        self.config = config
        self.grace_s = grace_s
        self.sink: TurnSink = sink or NullSink()
        self._factory = session_factory or default_session_factory(
            config, client_version=client_version
        )
        self._monotonic = monotonic
        self.conversations: dict[str, Conversation] = {}
        self.traces: dict[str, Trace] = {}
        self._finished: OrderedDict[str, None] = OrderedDict()
        self._turns: dict[str, tuple[TurnInfo, asyncio.Task[None]]] = {}
        self._idempotency: OrderedDict[str, tuple[str, str, str]] = OrderedDict()
        self._running = False
        self._stopping = False
        self._reaper: asyncio.Task[None] | None = None
        self._background: set[asyncio.Task[Any]] = set()
        self.started_at = monotonic()
        self.stats = {"turns": 0, "reaped": 0, "sessionsStarted": 0}
        self.preflight = Preflight(
            config,
            handshake=self._handshake,
            extra_checks=extra_checks,
            lifecycle=lambda: not self._stopping,
        )

    # -- lifecycle ---------------------------------------------------------------------

    async def start(self) -> None:
        """Start the reaper."""
        self._running = True
        self._reaper = asyncio.create_task(self._reap_loop(), name="agc-serve-reaper")

    async def stop(self) -> None:
        """Interrupt running turns, let them be sealed, end every process."""
        self._stopping = True
        for trace_id in list(self._turns):
            trace = self.traces.get(trace_id)
            if trace is not None:
                trace.cancel_requested = True
        sessions = [c.session for c in self.conversations.values() if c.session is not None]
        await asyncio.gather(*(s.interrupt() for s in sessions), return_exceptions=True)
        tasks = [task for _, task in self._turns.values()]
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=self.grace_s)
            if pending:
                for conversation in self.conversations.values():
                    if conversation.session is not None:
                        _kill(conversation.session)
                await asyncio.wait(pending, timeout=self.grace_s * 3)
        sessions = [c.session for c in self.conversations.values() if c.session is not None]
        for conversation in self.conversations.values():
            conversation.session = None
            conversation.status = "idle"
        if self._reaper is not None:
            self._reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reaper
        await asyncio.gather(*(session.close() for session in sessions), return_exceptions=True)
        if self._background:
            await asyncio.wait(list(self._background), timeout=self.grace_s * 3)
        self._running = False

    def uptime_ms(self) -> int:
        """Milliseconds since the supervisor was made."""
        return int((self._monotonic() - self.started_at) * 1000)

    @property
    def live_sessions(self) -> int:
        return sum(1 for c in self.conversations.values() if c.live)

    async def _handshake(self, protocol: ProtocolName) -> None:
        session = self._factory(protocol)
        try:
            await session.start()
        finally:
            await session.close()

    def _protocol(self) -> ProtocolName:
        choice = self.config.protocol
        if choice != "auto":
            return choice
        return self.preflight.protocol or "app-server"

    # -- submit ------------------------------------------------------------------------

    def _replayed(self, idempotency_key: str | None, fingerprint: str) -> dict[str, Any] | None:
        """The ``202`` body of the turn an earlier submit with this key started, or
        ``None``; a key seen with another request is refused (``422``)."""
        seen = None if idempotency_key is None else self._idempotency.get(idempotency_key)
        if seen is None:
            return None
        trace_id, conv_id, known = seen
        if known != fingerprint:
            raise ChatRefusedError(
                422,
                _error(
                    "idempotency_key_reused", "this Idempotency-Key was used for another request"
                ),
            )
        return {"traceId": trace_id, "conversationId": conv_id, "replayed": True}

    async def submit(
        self,
        message: Any,
        conversation_id: Any,
        *,
        idempotency_key: str | None = None,
        attachments: Any = None,
    ) -> dict[str, Any]:
        """Accept a chat message; returns the ``202`` body ``{traceId, conversationId}``.

        ``attachments``: the files offered with the message (see :func:`offered_files`).

        Raises:
            ChatRefusedError: a bad request (400), an unknown conversation (404), a busy one
                (409), a reused idempotency key or a bad attachment (422), a failed
                preflight (503, the preflight answer), no capacity (503 with
                ``Retry-After``).
        """
        config = self.config
        if not isinstance(message, str) or not message.strip():
            raise ChatRefusedError(
                400, _error("message_invalid", "message must be a non-empty string")
            )
        if len(message) > config.max_message_chars:
            raise ChatRefusedError(
                413,
                _error(
                    "message_too_long",
                    f"message has {len(message)} characters; "
                    f"the limit is {config.max_message_chars}",
                ),
            )
        if conversation_id is not None and (
            not isinstance(conversation_id, str) or not 0 < len(conversation_id) <= _MAX_ID_CHARS
        ):
            raise ChatRefusedError(
                400, _error("conversation_id_invalid", "conversationId must be a string id")
            )
        # JSON keeps a missing conversation (null) apart from the string "None". The
        # attachments as sent: a retry is replayed even if a file is gone since.
        fingerprint = hashlib.sha256(
            json.dumps([conversation_id, message, attachments], sort_keys=True).encode("ascii")
        ).hexdigest()
        replayed = self._replayed(idempotency_key, fingerprint)
        if replayed is not None:
            return replayed
        offered = offered_files(config.workspace, attachments)
        if self._stopping:
            raise ChatRefusedError(
                503, _error("service_stopping", "the service is shutting down"), retry_after=5
            )
        conversation = None
        if conversation_id is not None:
            conversation = self.conversations.get(conversation_id)
            if conversation is None:
                raise ChatRefusedError(
                    404,
                    _error("conversation_not_found", "no such conversation (or it was forgotten)"),
                )
            if conversation.status in ("busy", "starting"):
                raise ChatRefusedError(
                    409,
                    _error(
                        "conversation_busy",
                        "a turn of this conversation is running",
                        lastTraceId=conversation.last_trace_id,
                    ),
                    retry_after=2,
                )
        report = await self.preflight.run(deep=True)
        if not report.ready:
            raise ChatRefusedError(503, report.to_dict())
        # No await from here on: the checks and the reservation are one step.
        if conversation is not None and conversation.status in ("busy", "starting"):
            raise ChatRefusedError(
                409, _error("conversation_busy", "a turn of this conversation is running"), 2
            )
        # Another submit with this key may have been accepted during the preflight:
        # the same request is its replay, another one is refused as before.
        replayed = self._replayed(idempotency_key, fingerprint)
        if replayed is not None:
            return replayed
        needs_process = conversation is None or conversation.session is None
        if needs_process and self.live_sessions >= config.max_sessions:
            victim = self._least_recently_used_ready()
            if victim is None:
                raise ChatRefusedError(
                    503,
                    _error(
                        "at_capacity",
                        f"all {config.max_sessions} sessions are busy; try again shortly",
                    ),
                    retry_after=5,
                )
            self._reap_soon(victim)
        if conversation is None:
            conversation = self._new_conversation()
        now = now_ms()
        conversation.turn_count += 1
        trace = Trace(
            trace_id=f"trc-{uuid.uuid4().hex}",
            conversation_id=conversation.conversation_id,
            turn_number=conversation.turn_count,
            created_at_ms=now,
            max_events=config.max_trace_events,
            max_bytes=config.max_trace_bytes,
            window=config.result_trace_limit,
        )
        conversation.status = "busy" if conversation.session is not None else "starting"
        conversation.last_trace_id = trace.trace_id
        conversation.updated_at_ms = now
        self.traces[trace.trace_id] = trace
        info = TurnInfo(
            trace_id=trace.trace_id,
            conversation_id=conversation.conversation_id,
            turn_number=trace.turn_number,
            message=message,
            created_at_ms=now,
            provider=PROVIDER,
            workspace=config.workspace,
            idempotency_key=idempotency_key,
            attachments=offered,
        )
        if idempotency_key is not None:
            self._idempotency[idempotency_key] = (
                trace.trace_id,
                conversation.conversation_id,
                fingerprint,
            )
            while len(self._idempotency) > _IDEMPOTENCY_KEYS:
                self._idempotency.popitem(last=False)
        task = asyncio.create_task(self._run(conversation, trace, info), name=trace.trace_id)
        self._turns[trace.trace_id] = (info, task)
        self.stats["turns"] += 1
        return {"traceId": trace.trace_id, "conversationId": conversation.conversation_id}

    def _new_conversation(self) -> Conversation:
        config = self.config
        if len(self.conversations) >= config.max_conversations:
            idle = [c for c in self.conversations.values() if c.status == "idle" and not c.live]
            if not idle:
                raise ChatRefusedError(
                    503,
                    _error("at_capacity", "too many open conversations; try again shortly"),
                    retry_after=5,
                )
            oldest = min(idle, key=lambda c: c.updated_at_ms)
            del self.conversations[oldest.conversation_id]
        now = now_ms()
        conversation = Conversation(
            conversation_id=f"conv-{uuid.uuid4().hex}",
            created_at_ms=now,
            updated_at_ms=now,
            idle_timeout_ms=config.idle_timeout_ms,
            last_active=self._monotonic(),
        )
        self.conversations[conversation.conversation_id] = conversation
        return conversation

    def _least_recently_used_ready(self) -> Conversation | None:
        ready = [c for c in self.conversations.values() if c.status == "ready"]
        return min(ready, key=lambda c: c.last_active) if ready else None

    # -- one turn ----------------------------------------------------------------------

    async def _record(
        self,
        info: TurnInfo,
        trace: Trace,
        method: str,
        params: Mapping[str, Any],
        *,
        source: EventSource = "serve",
        kind: str = "serve",
    ) -> None:
        """Add an event to the trace and hand it to the sink (in a worker thread)."""
        event = trace.add(source, method, params, kind)
        if trace.error is not None and trace.error.get("code") == "audit_write_failed":
            return  # the sink already failed; the turn is being stopped
        try:
            await asyncio.to_thread(self.sink.on_event, info, event)
        except Exception as exc:
            trace.error = {
                "code": "audit_write_failed",
                "message": redact_text(f"the turn's record could not be written: {exc}")[:500],
            }
            trace.cancel_requested = True
            conversation = self.conversations.get(trace.conversation_id)
            if conversation is not None and conversation.session is not None:
                self._background_task(conversation.session.interrupt())

    async def _run(self, conversation: Conversation, trace: Trace, info: TurnInfo) -> None:
        result: TurnResult
        started = False
        try:
            try:
                await asyncio.to_thread(self.sink.on_turn_start, info)
                started = True
            except Exception as exc:
                result = TurnResult(
                    "failed",
                    error_code="audit_unavailable",
                    error_message=redact_text(f"the turn's record cannot be opened: {exc}")[:500],
                )
            else:
                trace.status = "running"
                result = await self._drive(conversation, trace, info)
        except Exception as exc:  # a bug: the turn still ends, and is sealed
            result = TurnResult(
                "failed",
                error_code="internal_error",
                error_message=redact_text(f"{type(exc).__name__}: {exc}")[:500],
            )
        await self._finish(conversation, trace, info, result, started=started)

    async def _drive(self, conversation: Conversation, trace: Trace, info: TurnInfo) -> TurnResult:
        async def on_event(event: ProviderEvent) -> None:
            # Deltas of an item are held and recorded joined (agc.serve._stream).
            for method, params, kind in trace.stream.accept(event.method, event.params, event.kind):
                await self._record(info, trace, method, params, source="codex", kind=kind)

        session = conversation.session
        if session is None or not session.alive():
            protocol = self._protocol()
            await self._record(
                info,
                trace,
                "serve.session.starting",
                {"protocol": protocol, "resumeThreadId": conversation.thread_id},
            )
            try:
                session = await self._start_session(conversation, protocol)
            except ProviderError as exc:
                if exc.code == "stdio_protocol_not_wired":
                    self.preflight.invalidate()
                return TurnResult("failed", error_code=exc.code, error_message=exc.message)
            await self._record(
                info,
                trace,
                "serve.session.ready",
                {
                    "protocol": session.protocol,
                    "threadId": session.facts.thread_id,
                    "sessionId": session.facts.session_id,
                    "model": session.facts.model,
                    "resumed": trace.turn_number > 1,
                    "agentVersion": session.facts.agent_version,
                },
            )
        conversation.status = "busy"
        self._copy_facts(conversation, trace, session)
        if trace.cancel_requested:
            return TurnResult(
                "cancelled",
                error_code="turn_cancelled",
                error_message="cancelled before it started",
            )
        run = asyncio.create_task(
            session.run_turn(info.message, on_event, client_id=trace.trace_id)
        )
        timeout_s = self.config.turn_timeout_ms / 1000
        done, _ = await asyncio.wait({run}, timeout=timeout_s)
        timed_out = not done
        if timed_out:
            await self._record(
                info, trace, "serve.turn.timeout", {"turnTimeoutMs": self.config.turn_timeout_ms}
            )
            await self._stop_turn(session, run)
        if not run.done():
            run.cancel()
        try:
            result = await run
        except asyncio.CancelledError:
            result = TurnResult(
                "failed", error_code="provider_exited", error_message="the turn was abandoned"
            )
        self._copy_facts(conversation, trace, session)
        if timed_out:
            return TurnResult(
                "failed",
                reply=result.reply,
                turn_id=result.turn_id,
                error_code="turn_timeout",
                error_message=f"the turn ran longer than {timeout_s:g} s",
            )
        return result

    async def _stop_turn(self, session: ProviderSession, run: asyncio.Task[TurnResult]) -> None:
        """Interrupt; if the turn does not end within the grace, kill the process."""
        await session.interrupt()
        done, _ = await asyncio.wait({run}, timeout=self.grace_s)
        if not done:
            _kill(session)
            await asyncio.wait({run}, timeout=self.grace_s)

    async def _start_session(
        self, conversation: Conversation, protocol: ProtocolName
    ) -> ProviderSession:
        session = self._factory(protocol)
        conversation.session = session
        conversation.status = "starting"
        try:
            await session.start()
            await session.open_thread(conversation.thread_id)
        except ProviderError:
            conversation.session = None
            await session.close()
            raise
        except Exception as exc:
            conversation.session = None
            await session.close()
            raise ProviderError("provider_protocol_error", redact_text(str(exc))[:300]) from exc
        self.stats["sessionsStarted"] += 1
        self.preflight.confirm(protocol)
        conversation.protocol = protocol
        conversation.thread_id = session.facts.thread_id or conversation.thread_id
        conversation.session_id = session.facts.session_id or conversation.session_id
        conversation.model = session.facts.model or conversation.model
        return session

    @staticmethod
    def _copy_facts(conversation: Conversation, trace: Trace, session: ProviderSession) -> None:
        facts = session.facts
        conversation.thread_id = facts.thread_id or conversation.thread_id
        conversation.session_id = facts.session_id or conversation.session_id
        conversation.model = facts.model or conversation.model
        trace.protocol = session.protocol
        trace.thread_id = conversation.thread_id
        trace.session_id = conversation.session_id
        trace.model = conversation.model

    async def _finish(
        self,
        conversation: Conversation,
        trace: Trace,
        info: TurnInfo,
        result: TurnResult,
        *,
        started: bool,
    ) -> None:
        status: str = result.status
        error: dict[str, Any] | None = None
        if result.error_code is not None:
            error = {
                "code": result.error_code,
                "message": well_formed(
                    redact_text(result.error_message or result.error_code)[:1000]
                ),
            }
        if trace.error is not None and trace.error.get("code") == "audit_write_failed":
            status, error = "failed", trace.error
        elif trace.cancel_requested and status != "completed":
            status = "cancelled"
            error = (
                {"code": "service_stopping", "message": "the service was shut down"}
                if self._stopping
                else {"code": "turn_cancelled", "message": "the turn was cancelled"}
            )
        trace.turn_id = result.turn_id or trace.turn_id
        trace.reply = None if result.reply is None else well_formed(redact_text(result.reply))
        trace.error = error
        session = conversation.session
        if session is not None and not session.alive():
            await self._end_session(conversation, "idle")
        if started:
            # What the agent streamed for an item that never completed is still sealed.
            for method, params, kind in trace.stream.drain():
                await self._record(info, trace, method, params, source="codex", kind=kind)
            trace.redactions += trace.stream.stats.total
            await self._record(
                info,
                trace,
                "serve.turn.ended",
                {"status": status, "errorCode": None if error is None else error["code"]},
            )
            end = TurnEnd(
                status=status,
                reply=trace.reply,
                error=error,
                protocol=trace.protocol,
                model=trace.model,
                thread_id=trace.thread_id,
                session_id=trace.session_id,
                turn_id=trace.turn_id,
                event_count=trace.event_count,
                ended_at_ms=now_ms(),
                redactions=trace.redactions,
            )
            try:
                audit = await asyncio.to_thread(self.sink.on_turn_end, info, end)
                trace.audit = dict(audit)
            except Exception as exc:
                trace.audit = {
                    "sealed": False,
                    "error": redact_text(f"{type(exc).__name__}: {exc}")[:500],
                    # What reached the record stays there, for the recovery.
                    "recoverWith": f"agc recover {trace.trace_id}",
                }
                status = "failed"
                trace.error = {
                    "code": "audit_seal_failed",
                    "message": "the turn's record could not be sealed",
                }
        trace.status = status  # type: ignore[assignment]
        trace.waiting_for = None
        trace.ended_at_ms = now_ms()
        trace.updated_at_ms = trace.ended_at_ms
        trace.done.set()
        alive = conversation.session is not None and conversation.session.alive()
        conversation.status = "ready" if alive else "idle"
        conversation.updated_at_ms = trace.ended_at_ms
        conversation.last_active = self._monotonic()
        self._turns.pop(trace.trace_id, None)
        trace.compact(self.config.finished_trace_bytes)
        self._finished[trace.trace_id] = None
        while len(self._finished) > self.config.max_traces:
            old, _ = self._finished.popitem(last=False)
            self.traces.pop(old, None)

    # -- cancel, end, reap -------------------------------------------------------------

    async def cancel(self, trace_id: str) -> dict[str, Any] | None:
        """Ask a running turn to stop; ``None`` for an unknown trace."""
        trace = self.traces.get(trace_id)
        if trace is None:
            return None
        if trace.terminal:
            return {"traceId": trace_id, "status": trace.status, "cancelled": False}
        trace.cancel_requested = True
        conversation = self.conversations.get(trace.conversation_id)
        turn = self._turns.get(trace_id)
        if conversation is not None and conversation.session is not None and turn is not None:
            self._background_task(self._cancel_turn(conversation.session, turn[1]))
        return {"traceId": trace_id, "status": "cancelling", "cancelled": True}

    async def _cancel_turn(self, session: ProviderSession, task: asyncio.Task[None]) -> None:
        await session.interrupt()
        done, _ = await asyncio.wait({task}, timeout=self.grace_s)
        if not done:
            _kill(session)

    async def end_conversation(self, conversation_id: str) -> dict[str, Any] | None:
        """Stop a conversation's turn (if any), end its process, forget it."""
        conversation = self.conversations.get(conversation_id)
        if conversation is None:
            return None
        trace_id = conversation.last_trace_id
        turn = self._turns.get(trace_id) if trace_id else None
        if turn is not None and trace_id is not None:
            await self.cancel(trace_id)
            await asyncio.wait({turn[1]}, timeout=self.grace_s * 2)
        await self._end_session(conversation, "idle")
        self.conversations.pop(conversation_id, None)
        return {"conversationId": conversation_id, "status": "closed"}

    async def _end_session(self, conversation: Conversation, status: str) -> None:
        session = conversation.session
        conversation.session = None
        if session is not None:
            with contextlib.suppress(Exception):
                await session.close()
        if conversation.status not in ("busy",):
            conversation.status = status

    def _reap_soon(self, conversation: Conversation) -> None:
        # Reserve the slot at once; the process ends in the background.
        session = conversation.session
        conversation.session = None
        conversation.status = "idle"
        self.stats["reaped"] += 1
        if session is not None:
            self._background_task(session.close())

    async def reap(self) -> int:
        """End idle processes and forget old idle conversations now; returns how many
        processes were ended."""
        now = self._monotonic()
        idle_s = self.config.idle_timeout_ms / 1000
        retention_s = self.config.conversation_retention_ms / 1000
        idle: list[Conversation] = []
        for conversation in list(self.conversations.values()):
            if conversation.status == "ready" and now - conversation.last_active >= idle_s:
                conversation.status = "idle"
                idle.append(conversation)
            elif (
                conversation.status == "idle"
                and conversation.session is None
                and now - conversation.last_active >= retention_s
            ):
                self.conversations.pop(conversation.conversation_id, None)
        # Detached at once (the entry never says idle with a process), then ended
        # together: each gets its grace, not the sum of them all.
        sessions = [c.session for c in idle if c.session is not None]
        for conversation in idle:
            conversation.session = None
        closing = [self._background_task(session.close()) for session in sessions]
        if closing:
            await asyncio.wait(closing)  # tracked: a stop() that cancels the reaper waits
        self.stats["reaped"] += len(idle)
        return len(idle)

    async def _reap_loop(self) -> None:
        interval = self.config.reap_interval_ms / 1000
        while True:
            await asyncio.sleep(interval)
            with contextlib.suppress(Exception):
                await self.reap()

    def _background_task(self, coroutine: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        task = asyncio.ensure_future(coroutine)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task

    # -- answers -----------------------------------------------------------------------

    def result(self, trace_id: str) -> dict[str, Any] | None:
        """The ``/result`` answer, or ``None`` for an unknown trace."""
        trace = self.traces.get(trace_id)
        if trace is None:
            return None
        limit = self.config.result_trace_limit
        window = list(trace.runner_window)
        provider = list(trace.provider_window)
        body: dict[str, Any] = {
            "traceId": trace.trace_id,
            "conversationId": trace.conversation_id,
            "status": trace.status,
            "provider": PROVIDER,
            "protocol": trace.protocol,
            "backend": None if trace.protocol is None else f"codex-{trace.protocol}",
            "model": trace.model,
            "threadId": trace.thread_id,
            "sessionId": trace.session_id,
            "turnId": trace.turn_id,
            "turn": trace.turn_number,
            "eventCount": trace.event_count,
            "lastEvent": window[-1].to_dict() if window else None,
            "runnerTrace": _window(window, limit, trace.event_count),
            "providerTrace": {
                "provider": PROVIDER,
                "protocol": trace.protocol,
                **_window(provider, limit, trace.provider_count),
            },
            "createdAt": iso_ms(trace.created_at_ms),
            "updatedAt": iso_ms(trace.updated_at_ms),
            "elapsedMs": (trace.ended_at_ms or now_ms()) - trace.created_at_ms,
        }
        if not trace.terminal:
            body["waitingFor"] = trace.waiting_for
        if trace.status == "completed":
            body["reply"] = {"role": "assistant", "content": trace.reply or ""}
        if trace.error is not None and trace.terminal:
            body["error"] = trace.error
        if trace.terminal:
            body["audit"] = trace.audit
        conversation = self.conversations.get(trace.conversation_id)
        if conversation is not None:
            body["session"] = conversation.to_dict()
        return body

    def trace_page(self, trace_id: str, *, after: int, limit: int) -> dict[str, Any] | None:
        """The ``/trace`` answer (events with ``seq > after``), or ``None``."""
        trace = self.traces.get(trace_id)
        if trace is None:
            return None
        limit = max(1, min(limit, self.config.trace_page_limit))
        events, more = trace.page(after, limit)
        body: dict[str, Any] = {
            "traceId": trace.trace_id,
            "conversationId": trace.conversation_id,
            "status": trace.status,
            "eventCount": trace.event_count,
            "firstSeq": trace.first_kept_seq,
            # Events before firstSeq are no longer in memory; the sealed run has them.
            "truncated": trace.first_kept_seq > 0,
            "after": after,
            "events": [event.to_dict() for event in events],
            "nextAfter": events[-1].seq if events else max(after, trace.first_kept_seq - 1),
            "hasMore": more,
        }
        if not trace.terminal:
            body["waitingFor"] = trace.waiting_for
        return body

    def registry(self) -> dict[str, Any]:
        """Every conversation of the registry and the counts."""
        return {
            "provider": PROVIDER,
            "conversations": [c.to_dict() for c in self.conversations.values()],
            "liveSessions": self.live_sessions,
            "runningTurns": len(self._turns),
            "maxSessions": self.config.max_sessions,
            "idleTimeoutMs": self.config.idle_timeout_ms,
        }

    async def readiness(self) -> tuple[PreflightReport, dict[str, Any]]:
        """The preflight (deep) and the ``/readyz`` answer."""
        report = await self.preflight.run(deep=True)
        body = report.to_dict()
        body["sessions"] = {
            "live": self.live_sessions,
            "conversations": len(self.conversations),
            "runningTurns": len(self._turns),
            "maxSessions": self.config.max_sessions,
        }
        return report, body


def _window(events: Sequence[TraceEvent], limit: int, count: int) -> dict[str, Any]:
    """A ``/result`` trace window: the newest ``limit`` events of ``count`` (their strings
    were cut at :data:`~agc.serve._trace.WINDOW_STRING_CHARS` when kept)."""
    return {
        "events": [event.to_dict() for event in events],
        "limit": limit,
        "firstSeq": events[0].seq if events else None,
        "omitted": count - len(events),
    }


def _kill(session: ProviderSession) -> None:
    with contextlib.suppress(Exception):
        session.kill()
