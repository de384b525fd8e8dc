"""The ``codex app-server`` protocol: one long-lived Codex process per conversation.

JSON-RPC over stdio as the Codex app-server protocol (v2) defines it: ``initialize``
(``clientInfo``, ``capabilities``) answered with ``userAgent`` / ``codexHome``, then the
``initialized`` notification; ``thread/start`` (``cwd``, ``approvalPolicy``, ``sandbox``,
``model``) or ``thread/resume`` (``threadId``) answered with a ``thread`` (``id``,
``sessionId``) and the ``model``; ``turn/start`` (``threadId``, ``input: [{type:
"text", text}]``) answered with the ``turn`` (``id``), followed by ``turn/started``,
``item/started`` / ``item/completed`` (``commandExecution``, ``agentMessage`` …) and
``turn/completed`` (``turn.status``: ``completed``, ``interrupted``, ``failed``; a
failure in ``turn.error.message``); ``turn/interrupt`` (``threadId``, ``turnId``) stops a
turn. The schema is what ``codex app-server generate-json-schema`` prints.

Extensions (:class:`AppServerOptions` ``skill_roots``, ``mcp_servers``): after the
handshake the skill roots are registered with ``skills/extraRoots/set`` (``extraRoots``)
and checked with ``skills/list`` (``cwds``, ``forceReload``; answered with ``data: [{cwd,
skills: [{name, path, scope, enabled}], errors: [{path, message}]}]``); once the thread
is open, the ``mcpServer/startupStatus/updated`` notifications (``name``, ``status``:
``starting``, ``ready``, ``failed``, ``cancelled``; ``error``) are awaited until every
named server reached ``ready``, ``failed`` or ``cancelled``, bounded by
``mcp_startup_wait_s``. What Codex reported is :attr:`SessionFacts.extra`
``["extensions"]``; the notifications read while waiting still reach the first turn.

The service runs unattended: the thread's approval policy defaults to ``never``, and an
approval the agent asks for anyway is declined (the request and the answer are events
of the turn).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from agc._core.redact import redact_text
from agc.serve._provider import (
    EventCallback,
    ProtocolName,
    ProviderError,
    SessionFacts,
    TurnResult,
)
from agc.serve._stdio import StdioRpc
from agc.serve._trace import well_formed

__all__ = ["AppServerOptions", "AppServerSession", "answer_server_request"]

_DECLINED: Final = "agc serve runs unattended: approvals are declined"
MCP_STATUS_METHOD: Final = "mcpServer/startupStatus/updated"
_MCP_SETTLED: Final = frozenset({"ready", "failed", "cancelled"})
_MAX_REPORTED: Final = 500  # skills and errors kept from one skills/list answer
_TURN_STATUS: Final = {"completed": "completed", "interrupted": "cancelled", "failed": "failed"}


@dataclass(frozen=True)
class AppServerOptions:
    """How to run ``codex app-server`` (times in seconds).

    Attributes:
        binary: the Codex executable.
        env: the process's whole environment (``CODEX_HOME`` set in it).
        workspace: the thread's working folder (``cwd``).
        approval_policy: the thread's ``approvalPolicy`` (``never`` for a service).
        sandbox: the thread's ``sandbox`` mode, or ``None`` for Codex's configuration.
        model: the thread's ``model``, or ``None`` for Codex's configuration.
        handshake_timeout_s: for spawn + ``initialize``.
        request_timeout_s: for ``thread/*`` and ``turn/start`` answers.
        client_version: sent as ``clientInfo.version``.
        opt_out_notifications: notification methods Codex should not send.
        stderr_log: append Codex's stderr (redacted) to this file.
        extra_args: arguments after ``app-server`` (``-c key=value`` …).
        skill_roots: folders to register with ``skills/extraRoots/set``.
        mcp_servers: MCP server names whose startup is awaited after the thread opens.
        mcp_startup_wait_s: the longest such wait.
    """

    binary: str
    env: Mapping[str, str]
    workspace: Path
    approval_policy: str = "never"
    sandbox: str | None = None
    model: str | None = None
    handshake_timeout_s: float = 20.0
    request_timeout_s: float = 60.0
    client_version: str = "0"
    opt_out_notifications: Sequence[str] = ()
    stderr_log: Path | None = None
    extra_args: Sequence[str] = field(default_factory=tuple)
    skill_roots: Sequence[Path] = ()
    mcp_servers: Sequence[str] = ()
    mcp_startup_wait_s: float = 120.0


def answer_server_request(method: str, params: Mapping[str, Any]) -> tuple[Any, Any]:
    """The unattended answer to a request Codex sends us: approvals are declined, other
    requests are refused as unsupported (JSON-RPC ``-32601``)."""
    del params
    if method in ("item/commandExecution/requestApproval", "item/fileChange/requestApproval"):
        return {"decision": "decline"}, None
    if method in ("execCommandApproval", "applyPatchApproval"):
        return {"decision": {"denied": {"rejection": _DECLINED}}}, None
    return None, {"code": -32601, "message": f"agc serve does not answer {method}"}


class AppServerSession:
    """A ``codex app-server`` process for one conversation (see the module docstring)."""

    protocol: ProtocolName = "app-server"

    def __init__(self, options: AppServerOptions) -> None:
        self.options = options
        self.facts = SessionFacts()
        self._rpc = StdioRpc(
            [options.binary, "app-server", *options.extra_args],
            env=options.env,
            cwd=options.workspace,
            on_server_request=answer_server_request,
            stderr_log=options.stderr_log,
        )
        self._turn_id: str | None = None

    @property
    def rpc(self) -> StdioRpc:
        return self._rpc

    async def start(self) -> None:
        options = self.options
        await self._rpc.start()
        self.facts.pid = self._rpc.pid
        capabilities: dict[str, Any] = {"experimentalApi": False, "requestAttestation": False}
        if options.opt_out_notifications:
            capabilities["optOutNotificationMethods"] = list(options.opt_out_notifications)
        try:
            answer = await self._rpc.request(
                "initialize",
                {
                    "clientInfo": {
                        "name": "agc_serve",
                        "title": "agc serve",
                        "version": options.client_version,
                    },
                    "capabilities": capabilities,
                },
                timeout_s=options.handshake_timeout_s,
            )
            await self._rpc.notify("initialized")
        except ProviderError as exc:
            await self._rpc.close(grace_s=0.5)
            raise ProviderError(
                "stdio_protocol_not_wired",
                f"codex app-server did not answer initialize: {exc.message}",
            ) from exc
        if not isinstance(answer, Mapping) or not isinstance(answer.get("userAgent"), str):
            await self._rpc.close(grace_s=0.5)
            raise ProviderError(
                "stdio_protocol_not_wired",
                "codex app-server answered initialize without a userAgent",
            )
        self.facts.agent_version = redact_text(str(answer["userAgent"]))[:200]
        if options.skill_roots or options.mcp_servers:
            self.facts.extra["extensions"] = {
                "skills": await self._register_skills(),
                "mcpServers": None,
            }

    async def _register_skills(self) -> dict[str, Any] | None:
        """``skills/extraRoots/set`` with the skill roots, then ``skills/list``: the
        skills Codex found under them and its errors there, or the failed request."""
        roots = [str(root) for root in self.options.skill_roots]
        if not roots:
            return None
        timeout = self.options.request_timeout_s
        try:
            await self._rpc.request(
                "skills/extraRoots/set", {"extraRoots": roots}, timeout_s=timeout
            )
            listing = await self._rpc.request(
                "skills/list",
                {"cwds": [str(self.options.workspace)], "forceReload": True},
                timeout_s=timeout,
            )
        except ProviderError as exc:
            return {"roots": roots, "skills": [], "errors": [], "failed": _shown(exc.message)}
        return {"roots": roots, **_skills_under(listing, roots), "failed": None}

    async def _await_mcp_startup(self) -> dict[str, Any]:
        """Read events until every awaited MCP server settled or the wait is over;
        returns ``{servers: {name: {status, error}}, waitedMs, timedOut}``. The events
        read are put back, in order, for the first turn."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        deadline = started + self.options.mcp_startup_wait_s
        pending = set(self.options.mcp_servers)
        servers: dict[str, dict[str, Any]] = {
            name: {"status": "notReported", "error": None} for name in self.options.mcp_servers
        }
        held: list[Any] = []
        queue = self._rpc.events
        try:
            while pending:
                remaining = deadline - loop.time()
                if remaining <= 0:
                    break
                try:
                    event = await asyncio.wait_for(queue.get(), remaining)
                except TimeoutError:
                    break
                held.append(event)
                if event is None:
                    break
                if event.method != MCP_STATUS_METHOD:
                    continue
                name, status = event.params.get("name"), event.params.get("status")
                if not isinstance(name, str) or name not in servers or not isinstance(status, str):
                    continue
                error = event.params.get("error")
                servers[name] = {
                    "status": status[:40],
                    "error": _shown(error) if isinstance(error, str) and error else None,
                }
                if status in _MCP_SETTLED:
                    pending.discard(name)
        finally:
            while not queue.empty():
                held.append(queue.get_nowait())
            for event in held:
                queue.put_nowait(event)
        return {
            "servers": servers,
            "waitedMs": int((loop.time() - started) * 1000),
            "timedOut": bool(pending),
        }

    async def open_thread(self, resume_thread_id: str | None) -> None:
        options = self.options
        params: dict[str, Any] = {
            "cwd": str(options.workspace),
            "approvalPolicy": options.approval_policy,
        }
        if options.sandbox is not None:
            params["sandbox"] = options.sandbox
        if options.model is not None:
            params["model"] = options.model
        if resume_thread_id is None:
            method = "thread/start"
        else:
            method = "thread/resume"
            params["threadId"] = resume_thread_id
            params["excludeTurns"] = True
        answer = await self._rpc.request(method, params, timeout_s=options.request_timeout_s)
        thread = answer.get("thread") if isinstance(answer, Mapping) else None
        if not isinstance(thread, Mapping) or not isinstance(thread.get("id"), str):
            raise ProviderError(
                "provider_protocol_error", f"codex app-server answered {method} without a thread"
            )
        self.facts.thread_id = thread["id"]
        session_id = thread.get("sessionId")
        self.facts.session_id = session_id if isinstance(session_id, str) else thread["id"]
        model = answer.get("model")
        self.facts.model = model if isinstance(model, str) else self.facts.model
        extensions = self.facts.extra.get("extensions")
        if isinstance(extensions, dict) and self.options.mcp_servers:
            extensions["mcpServers"] = await self._await_mcp_startup()

    async def run_turn(self, text: str, on_event: EventCallback, *, client_id: str) -> TurnResult:
        rpc = self._rpc
        thread_id = self.facts.thread_id
        if thread_id is None:
            return TurnResult(
                "failed", error_code="provider_protocol_error", error_message="no thread"
            )
        # What arrived between turns (a warning, a status change) belongs to this one.
        while not rpc.events.empty():
            stale = rpc.events.get_nowait()
            if stale is None:
                return TurnResult(
                    "failed", error_code="provider_exited", error_message=rpc.exit_text()
                )
            await on_event(stale)
        try:
            answer = await rpc.request(
                "turn/start",
                {
                    "threadId": thread_id,
                    "clientUserMessageId": client_id,
                    "input": [{"type": "text", "text": text, "text_elements": []}],
                },
                timeout_s=self.options.request_timeout_s,
            )
        except ProviderError as exc:
            return TurnResult("failed", error_code=exc.code, error_message=exc.message)
        turn = answer.get("turn") if isinstance(answer, Mapping) else None
        turn_id = turn.get("id") if isinstance(turn, Mapping) else None
        if not isinstance(turn_id, str):
            return TurnResult(
                "failed",
                error_code="provider_protocol_error",
                error_message="codex app-server answered turn/start without a turn id",
            )
        self._turn_id = turn_id
        reply: str | None = None
        last_error: str | None = None
        try:
            while True:
                event = await rpc.events.get()
                if event is None:
                    return TurnResult(
                        "failed",
                        reply=reply,
                        turn_id=turn_id,
                        error_code="provider_exited",
                        error_message=rpc.exit_text(),
                    )
                await on_event(event)
                params = event.params
                if params.get("turnId", turn_id) != turn_id and event.method != "turn/completed":
                    continue
                if event.method == "item/completed":
                    item = params.get("item")
                    if isinstance(item, Mapping) and item.get("type") == "agentMessage":
                        text_value = item.get("text")
                        if isinstance(text_value, str):
                            reply = text_value
                elif event.method == "error" and params.get("willRetry") is not True:
                    error = params.get("error")
                    if isinstance(error, Mapping) and isinstance(error.get("message"), str):
                        last_error = error["message"]
                elif event.method == "turn/completed":
                    done = params.get("turn")
                    if not isinstance(done, Mapping) or done.get("id") != turn_id:
                        continue
                    return _turn_result(done, turn_id, reply, last_error)
        finally:
            self._turn_id = None

    async def interrupt(self) -> None:
        turn_id, thread_id = self._turn_id, self.facts.thread_id
        if turn_id is None or thread_id is None or not self._rpc.alive():
            return
        # On failure the caller kills the process if the turn does not end.
        with contextlib.suppress(ProviderError):
            await self._rpc.request(
                "turn/interrupt", {"threadId": thread_id, "turnId": turn_id}, timeout_s=10.0
            )

    def alive(self) -> bool:
        return self._rpc.alive()

    async def close(self) -> None:
        await self._rpc.close()

    def kill(self) -> None:
        self._rpc.kill()


def _shown(text: str) -> str:
    """Text Codex relayed (a server's own output): redacted, well-formed, 1000 chars."""
    return str(well_formed(redact_text(text)))[:1000]


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _skills_under(listing: Any, roots: Sequence[str]) -> dict[str, Any]:
    """From a ``skills/list`` answer: ``skills`` (``name``, ``path``, ``enabled``) and
    ``errors`` (``path``, ``message``) under one of ``roots``, each list bounded."""
    skills: list[dict[str, Any]] = []
    errors: list[dict[str, Any]] = []
    prefixes = tuple(root.rstrip("/") + "/" for root in roots)
    for entry in _as_list(listing.get("data") if isinstance(listing, Mapping) else None):
        if not isinstance(entry, Mapping):
            continue
        for skill in _as_list(entry.get("skills")):
            path = skill.get("path") if isinstance(skill, Mapping) else None
            if isinstance(path, str) and path.startswith(prefixes) and len(skills) < _MAX_REPORTED:
                skills.append(
                    {
                        "name": _shown(str(skill.get("name"))),
                        "path": path,
                        "enabled": skill.get("enabled") is not False,
                    }
                )
        for error in _as_list(entry.get("errors")):
            path = error.get("path") if isinstance(error, Mapping) else None
            if isinstance(path, str) and path.startswith(prefixes) and len(errors) < _MAX_REPORTED:
                errors.append({"path": path, "message": _shown(str(error.get("message")))})
    return {"skills": skills, "errors": errors}


def _turn_result(
    turn: Mapping[str, Any], turn_id: str, reply: str | None, last_error: str | None
) -> TurnResult:
    status = _TURN_STATUS.get(str(turn.get("status")), "failed")
    if reply is None:
        for item in turn.get("items") or ():
            if isinstance(item, Mapping) and item.get("type") == "agentMessage":
                text = item.get("text")
                reply = text if isinstance(text, str) else reply
    if status == "completed":
        return TurnResult("completed", reply=reply, turn_id=turn_id)
    error = turn.get("error")
    message = error.get("message") if isinstance(error, Mapping) else None
    text = message if isinstance(message, str) else last_error
    code = "turn_interrupted" if status == "cancelled" else "turn_failed"
    return TurnResult(
        status,  # type: ignore[arg-type]
        reply=reply,
        turn_id=turn_id,
        error_code=code,
        error_message=redact_text(text)[:1000] if text else f"the turn ended {turn.get('status')}",
    )
