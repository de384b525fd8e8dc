"""The ``codex mcp-server`` protocol, spoken with the official MCP Python SDK.

Older Codex builds offer ``codex mcp-server``: an MCP server on stdio whose
``tools/list`` names two tools, ``codex`` (arguments ``prompt``, ``cwd``,
``approval-policy``, ``sandbox``, ``model``; starts a thread and runs its first turn) and
``codex-reply`` (``threadId``, ``prompt``; the next turn of that thread). Both answer
with ``structuredContent: {threadId, content}``, ``content`` being the assistant's reply.
While a call runs, Codex sends its events as ``codex/event`` notifications
(``params.msg.type``: ``session_configured``, ``exec_command_begin`` …).

The handshake is MCP ``initialize`` followed by ``tools/list``: a server that does not
list both tools is not the protocol (``stdio_protocol_not_wired``). A thread lives in
the server process: once the process has ended, its threads cannot be continued
(``thread_not_resumable``); ``codex app-server`` has no such limit.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import mcp_types
from mcp.client.extension import NotificationBinding
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from pydantic import BaseModel, ConfigDict

from agc._core.redact import redact_text
from agc.serve._provider import (
    EventCallback,
    ProtocolName,
    ProviderError,
    ProviderEvent,
    SessionFacts,
    TurnResult,
)

__all__ = ["REQUIRED_TOOLS", "McpServerOptions", "McpServerSession"]

REQUIRED_TOOLS: Final = ("codex", "codex-reply")
EVENT_METHOD: Final = "codex/event"


class _CodexEventParams(BaseModel):
    """A ``codex/event`` notification's params, kept whole."""

    model_config = ConfigDict(extra="allow")


@dataclass(frozen=True)
class McpServerOptions:
    """How to run ``codex mcp-server`` (times in seconds); see
    :class:`~agc.serve._appserver.AppServerOptions` for the shared members.

    Attributes:
        argv: the command; default ``[binary, "mcp-server"]``.
    """

    binary: str
    env: Mapping[str, str]
    workspace: Path
    approval_policy: str = "never"
    sandbox: str | None = None
    model: str | None = None
    handshake_timeout_s: float = 20.0
    client_version: str = "0"
    stderr_log: Path | None = None
    argv: tuple[str, ...] | None = None


class McpServerSession:
    """A ``codex mcp-server`` process for one conversation (see the module docstring)."""

    protocol: ProtocolName = "mcp-server"

    def __init__(self, options: McpServerOptions) -> None:
        self.options = options
        self.facts = SessionFacts()
        self.tools: tuple[str, ...] = ()
        self._session: ClientSession | None = None
        self._owner: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._start_error: ProviderError | None = None
        self._events: asyncio.Queue[ProviderEvent] = asyncio.Queue()
        self._call: asyncio.Task[Any] | None = None

    # -- lifecycle ---------------------------------------------------------------------

    async def start(self) -> None:
        self._owner = asyncio.create_task(self._own(), name="mcp-server-session")
        ready = asyncio.create_task(self._ready.wait())
        try:
            await asyncio.wait(
                {self._owner, ready},
                timeout=self.options.handshake_timeout_s,
                return_when=asyncio.FIRST_COMPLETED,
            )
        finally:
            ready.cancel()
        if self._ready.is_set() and self._start_error is None:
            return
        error = self._start_error or ProviderError(
            "stdio_protocol_not_wired",
            f"codex mcp-server did not finish initialize and tools/list within "
            f"{self.options.handshake_timeout_s:g} s",
        )
        # No session to close in order: the handshake is what did not finish, and the
        # owner would wait for it. Cancelling it ends the process (the SDK's clean-up).
        self.kill()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._owner
        raise error

    async def _own(self) -> None:
        """Enter the SDK's contexts in one task (anyio requires it) and hold them open."""
        options = self.options
        argv = options.argv or (options.binary, "mcp-server")
        params = StdioServerParameters(
            command=argv[0], args=list(argv[1:]), env=dict(options.env), cwd=options.workspace
        )
        log_path = options.stderr_log if options.stderr_log is not None else Path(os.devnull)
        try:
            with log_path.open("a", encoding="utf-8") as errlog:
                async with (
                    stdio_client(params, errlog=errlog) as (read, write),
                    ClientSession(
                        read,
                        write,
                        client_info=mcp_types.Implementation(
                            name="agc_serve", version=options.client_version
                        ),
                        notification_bindings=[
                            NotificationBinding(
                                method=EVENT_METHOD,
                                params_type=_CodexEventParams,
                                handler=self._on_event,
                            )
                        ],
                    ) as session,
                ):
                    initialized = await session.initialize()
                    listed = await session.list_tools()
                    self.tools = tuple(sorted(tool.name for tool in listed.tools))
                    missing = [name for name in REQUIRED_TOOLS if name not in self.tools]
                    if missing:
                        self._start_error = ProviderError(
                            "stdio_protocol_not_wired",
                            "codex mcp-server does not list the tools "
                            + ", ".join(missing)
                            + f" (it lists {len(self.tools)})",
                        )
                        self._ready.set()
                        return
                    info = initialized.server_info
                    self.facts.agent_version = redact_text(f"{info.name} {info.version}")[:200]
                    self._session = session
                    self._ready.set()
                    await self._stop.wait()
        except OSError as exc:
            from agc.serve._stdio import spawn_error  # noqa: PLC0415 - one shared mapping

            self._start_error = spawn_error(exc, argv[0])
        except Exception as exc:
            if not self._ready.is_set():
                self._start_error = ProviderError(
                    "stdio_protocol_not_wired",
                    f"codex mcp-server handshake failed: {redact_text(str(exc))[:300]}",
                )
        finally:
            self._session = None
            self._ready.set()

    async def _on_event(self, params: _CodexEventParams) -> None:
        data = params.model_dump(by_alias=True)
        message = data.get("msg")
        if isinstance(message, Mapping) and message.get("type") == "session_configured":
            session_id = message.get("session_id")
            if isinstance(session_id, str):
                self.facts.thread_id = self.facts.thread_id or session_id
                self.facts.session_id = self.facts.session_id or session_id
            model = message.get("model")
            if isinstance(model, str):
                self.facts.model = model
        self._events.put_nowait(ProviderEvent(EVENT_METHOD, data))

    def alive(self) -> bool:
        return self._session is not None and self._owner is not None and not self._owner.done()

    async def close(self) -> None:
        self._stop.set()
        if self._call is not None and not self._call.done():
            self._call.cancel()
        if self._owner is not None:
            try:
                await asyncio.wait_for(asyncio.shield(self._owner), timeout=10.0)
            except (TimeoutError, Exception):
                self._owner.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await self._owner

    def kill(self) -> None:
        self._stop.set()
        if self._owner is not None:
            self._owner.cancel()

    # -- threads and turns -------------------------------------------------------------

    async def open_thread(self, resume_thread_id: str | None) -> None:
        if resume_thread_id is not None:
            raise ProviderError(
                "thread_not_resumable",
                "codex mcp-server keeps threads in its process, which has ended; "
                "start a new conversation",
            )

    async def run_turn(self, text: str, on_event: EventCallback, *, client_id: str) -> TurnResult:
        del client_id
        session = self._session
        if session is None:
            return TurnResult(
                "failed", error_code="provider_exited", error_message="codex mcp-server has ended"
            )
        options = self.options
        if self.facts.thread_id is None:
            tool = "codex"
            arguments: dict[str, Any] = {
                "prompt": text,
                "cwd": str(options.workspace),
                "approval-policy": options.approval_policy,
            }
            if options.sandbox is not None:
                arguments["sandbox"] = options.sandbox
            if options.model is not None:
                arguments["model"] = options.model
        else:
            tool = "codex-reply"
            arguments = {"threadId": self.facts.thread_id, "prompt": text}
        self._call = asyncio.create_task(session.call_tool(tool, arguments))
        try:
            while True:
                getter = asyncio.create_task(self._events.get())
                done, _ = await asyncio.wait(
                    {self._call, getter}, return_when=asyncio.FIRST_COMPLETED
                )
                if getter in done:
                    await on_event(getter.result())
                    continue
                getter.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await getter
                break
            while not self._events.empty():
                await on_event(self._events.get_nowait())
            result = self._call.result()
        except asyncio.CancelledError:
            if self._call.cancelled():
                return TurnResult(
                    "cancelled",
                    error_code="turn_interrupted",
                    error_message="the call was cancelled",
                )
            raise
        except Exception as exc:
            code = "provider_exited" if not self.alive() else "provider_request_refused"
            return TurnResult(
                "failed", error_code=code, error_message=redact_text(str(exc))[:500] or code
            )
        finally:
            self._call = None
        return self._result(result)

    def _result(self, result: mcp_types.CallToolResult) -> TurnResult:
        structured = result.structured_content
        reply: str | None = None
        if isinstance(structured, Mapping):
            thread_id = structured.get("threadId")
            if isinstance(thread_id, str):
                self.facts.thread_id = thread_id
                self.facts.session_id = self.facts.session_id or thread_id
            content = structured.get("content")
            reply = content if isinstance(content, str) else None
        if reply is None:
            texts = [
                block.text for block in result.content if isinstance(block, mcp_types.TextContent)
            ]
            reply = "\n".join(texts) if texts else None
        if result.is_error:
            return TurnResult(
                "failed",
                error_code="turn_failed",
                error_message=redact_text(reply or "the codex tool reported an error")[:1000],
            )
        return TurnResult("completed", reply=reply)

    async def interrupt(self) -> None:
        if self._call is not None and not self._call.done():
            self._call.cancel()
