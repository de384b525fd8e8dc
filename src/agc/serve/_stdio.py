"""JSON-RPC 2.0 over a child process's stdin/stdout, one JSON object per line.

The framing is the one ``codex app-server`` speaks on stdio (newline-delimited JSON,
the ``"jsonrpc"`` member optional): requests ``{id, method, params}``, responses
``{id, result}`` or ``{id, error: {code, message}}``, notifications ``{method,
params}``; the child may also send requests of its own (approvals), which get an answer.

The child runs in its own session (process group), so :meth:`StdioRpc.close` can stop
it and every tool process it started. Its stderr is drained so it never blocks; the
text is never returned or logged, only counted, unless a log file is given (then it is
written through the secret detector). The process's environment is given whole by the
caller: nothing of this process's environment leaks in by default.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import signal
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from agc._core import json as strict_json
from agc._core.json import exceeds_depth
from agc._core.redact import redact_text
from agc.errors import JsonInvalidError
from agc.serve._provider import ProviderError, ProviderEvent

__all__ = ["ServerRequestHandler", "StdioRpc", "spawn_error"]

MAX_MESSAGE_DEPTH: Final = 128
"""Deepest nesting of arrays/objects in one message from the agent. Its events are
redacted, recorded and shown by recursive walks; a deeper line is an ``agc/invalidLine``
event (its size and the problem), never a ``RecursionError``."""
_LINE_LIMIT: Final = 64 * 1024 * 1024  # bytes; a command's aggregated output rides in one line
_STDERR_LOG_LIMIT: Final = 8 * 1024 * 1024  # bytes written to an opt-in stderr log

#: Answer to a request of the child: ``(result, None)`` or ``(None, {"code", "message"})``.
ServerRequestHandler = Callable[[str, Mapping[str, Any]], tuple[Any, dict[str, Any] | None]]


def spawn_error(exc: OSError, binary: str) -> ProviderError:
    """The blocker a failed ``exec`` of ``binary`` stands for (``errno`` decides).

    ENOENT for a file that exists means its loader or interpreter is missing (a
    native dependency); EACCES / ENOEXEC mean it is not an executable for this host.
    """
    name = os.path.basename(binary)
    if isinstance(exc, FileNotFoundError):
        if os.path.exists(binary):
            return ProviderError(
                "codex_cli_native_dependency_missing",
                f"{name} exists but cannot be started: its loader or interpreter is missing",
            )
        return ProviderError("codex_cli_binary_missing", f"{name} was not found")
    if isinstance(exc, PermissionError) or exc.errno == 8:  # ENOEXEC
        return ProviderError("codex_cli_not_executable", f"{name} is not executable here")
    return ProviderError(
        "codex_cli_not_executable", f"{name} could not be started ({exc.strerror})"
    )


class StdioRpc:
    """A JSON-RPC connection to a child process (see the module docstring).

    Args:
        argv: the command (``[codex, "app-server"]``).
        env: the child's whole environment.
        cwd: its working folder.
        on_server_request: answers the child's requests; default: method not found.
        stderr_log: append the child's stderr (redacted) to this file, if given.

    Attributes:
        events: notifications and answered child requests, in arrival order; ``None``
            is put once when the child's stdout ends.
        pid: the child's pid once started.
    """

    def __init__(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: Path,
        on_server_request: ServerRequestHandler | None = None,
        stderr_log: Path | None = None,
    ) -> None:
        self.argv = list(argv)
        self.env = dict(env)
        self.cwd = cwd
        self.events: asyncio.Queue[ProviderEvent | None] = asyncio.Queue()
        self.pid: int | None = None
        self.stderr_lines = 0
        self._on_server_request = on_server_request
        self._stderr_log = stderr_log
        self._process: asyncio.subprocess.Process | None = None
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._ids = itertools.count(1)
        self._tasks: list[asyncio.Task[None]] = []
        self._closed = asyncio.Event()
        self._write_lock = asyncio.Lock()
        self.exit_reason: str | None = None

    # -- lifecycle ---------------------------------------------------------------------

    async def start(self) -> None:
        """Spawn the child.

        Raises:
            ProviderError: the binary is missing, not executable or misses a dependency.
        """
        try:
            self._process = await asyncio.create_subprocess_exec(
                *self.argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=self.env,
                cwd=self.cwd,
                start_new_session=True,
                limit=_LINE_LIMIT,
            )
        except OSError as exc:
            raise spawn_error(exc, self.argv[0]) from exc
        self.pid = self._process.pid
        self._tasks = [
            asyncio.create_task(self._read_stdout(), name=f"stdio-rpc-out-{self.pid}"),
            asyncio.create_task(self._drain_stderr(), name=f"stdio-rpc-err-{self.pid}"),
        ]

    def alive(self) -> bool:
        return (
            self._process is not None
            and self._process.returncode is None
            and not self._closed.is_set()
        )

    @property
    def returncode(self) -> int | None:
        return None if self._process is None else self._process.returncode

    async def wait_closed(self) -> None:
        """Wait until the child's stdout has ended."""
        await self._closed.wait()

    async def close(self, *, grace_s: float = 2.0) -> None:
        """Close stdin, give the child ``grace_s`` to exit, then SIGTERM and SIGKILL its
        process group. Idempotent; never raises."""
        process = self._process
        if process is None:
            return
        if process.stdin is not None:
            with contextlib.suppress(Exception):
                process.stdin.close()
        if not await self._exited_within(grace_s):
            self._signal_group(signal.SIGTERM)
            if not await self._exited_within(grace_s):
                self._signal_group(signal.SIGKILL)
                await self._exited_within(5.0)
        # The group may hold tool processes that outlived the child.
        self._signal_group(signal.SIGKILL)
        for task in self._tasks:
            if not task.done():
                task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._fail_pending("the agent process was closed")

    def kill(self) -> None:
        """SIGKILL the child's process group at once (a stuck child)."""
        self._signal_group(signal.SIGKILL)

    async def _exited_within(self, seconds: float) -> bool:
        assert self._process is not None
        try:
            await asyncio.wait_for(self._process.wait(), timeout=seconds)
        except TimeoutError:
            return False
        return True

    def _signal_group(self, sig: signal.Signals) -> None:
        if self.pid is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, sig)

    # -- messages ----------------------------------------------------------------------

    async def request(self, method: str, params: Any, *, timeout_s: float) -> Any:
        """Send a request and wait for its result.

        Raises:
            ProviderError: ``provider_exited`` (the child ended), ``provider_timeout``
                (no answer in ``timeout_s``), ``provider_request_refused`` (an error
                answer; its message is redacted).
        """
        if not self.alive():
            raise ProviderError("provider_exited", self.exit_text())
        request_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        try:
            await self._send({"id": request_id, "method": method, "params": params})
            return await asyncio.wait_for(asyncio.shield(future), timeout=timeout_s)
        except TimeoutError as exc:
            raise ProviderError(
                "provider_timeout", f"no answer to {method} within {timeout_s:g} s"
            ) from exc
        finally:
            self._pending.pop(request_id, None)

    async def notify(self, method: str, params: Any | None = None) -> None:
        """Send a notification (no answer expected)."""
        message: dict[str, Any] = {"method": method}
        if params is not None:
            message["params"] = params
        await self._send(message)

    async def _send(self, message: Mapping[str, Any]) -> None:
        process = self._process
        if process is None or process.stdin is None:
            raise ProviderError("provider_exited", "the agent process is not running")
        data = (json.dumps(message, ensure_ascii=False) + "\n").encode("utf-8")
        async with self._write_lock:
            try:
                process.stdin.write(data)
                await process.stdin.drain()
            except (ConnectionError, RuntimeError, OSError) as exc:
                raise ProviderError("provider_exited", self.exit_text()) from exc

    def exit_text(self) -> str:
        """How the child ended, as a sentence (exit code or signal)."""
        if self.exit_reason is not None:
            return self.exit_reason
        code = self.returncode
        if code is None:
            return "the agent process closed its output"
        if code < 0:
            with contextlib.suppress(ValueError):
                return f"the agent process was killed by {signal.Signals(-code).name}"
        return f"the agent process exited with code {code}"

    async def _read_stdout(self) -> None:
        assert self._process is not None
        assert self._process.stdout is not None
        stdout = self._process.stdout
        try:
            while True:
                try:
                    line = await stdout.readline()
                except (ValueError, asyncio.LimitOverrunError):
                    self.exit_reason = "the agent sent a line over the size limit"
                    break
                if not line:
                    break
                await self._dispatch(line)
        finally:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._process.wait(), timeout=5.0)
            self._closed.set()
            self._fail_pending(self.exit_text())
            self.events.put_nowait(None)

    async def _dispatch(self, line: bytes) -> None:
        try:
            message = strict_json.loads(line, allow_lone_surrogates=True)
            if exceeds_depth(message, MAX_MESSAGE_DEPTH):
                raise JsonInvalidError("nested too deep", problem="depth")
        except ValueError as exc:
            # Not JSON, not UTF-8, or nested deeper than the parser's stack (a
            # RecursionError would end the reader, and with it the session) or than
            # the trace's redaction walks: an event of its own, and the turn goes on.
            problem = getattr(exc, "problem", None) or "not-json"
            self.events.put_nowait(
                ProviderEvent(
                    "agc/invalidLine",
                    {"bytes": len(line), "problem": str(problem)[:40]},
                    kind="notification",
                )
            )
            return
        if not isinstance(message, dict):
            return
        method = message.get("method")
        has_id = "id" in message
        if isinstance(method, str) and has_id:
            await self._answer(message["id"], method, message.get("params"))
        elif isinstance(method, str):
            params = message.get("params")
            self.events.put_nowait(
                ProviderEvent(method, params if isinstance(params, dict) else {"value": params})
            )
        elif has_id:
            future = self._pending.get(message["id"]) if isinstance(message["id"], int) else None
            if future is None or future.done():
                return
            error = message.get("error")
            if isinstance(error, dict):
                text = error.get("message")
                future.set_exception(
                    ProviderError(
                        "provider_request_refused",
                        redact_text(str(text))[:500] if text else "the agent refused the request",
                    )
                )
            else:
                future.set_result(message.get("result"))

    async def _answer(self, request_id: Any, method: str, params: Any) -> None:
        safe_params = params if isinstance(params, Mapping) else {}
        result: Any
        error: dict[str, Any] | None
        if self._on_server_request is None:
            result, error = None, {"code": -32601, "message": f"{method} is not supported"}
        else:
            result, error = self._on_server_request(method, safe_params)
        reply: dict[str, Any] = {"id": request_id}
        if error is not None:
            reply["error"] = error
        else:
            reply["result"] = result
        self.events.put_nowait(
            ProviderEvent(
                method,
                {**safe_params, "agcAnswer": error if error is not None else result},
                kind="server-request",
            )
        )
        with contextlib.suppress(ProviderError):
            await self._send(reply)

    async def _drain_stderr(self) -> None:
        assert self._process is not None
        assert self._process.stderr is not None
        stderr = self._process.stderr
        written = 0
        log = None
        if self._stderr_log is not None:
            with contextlib.suppress(OSError):
                log = self._stderr_log.open("a", encoding="utf-8")
        try:
            while True:
                try:
                    line = await stderr.readline()
                except (ValueError, asyncio.LimitOverrunError):
                    continue
                if not line:
                    break
                self.stderr_lines += 1
                if log is not None and written < _STDERR_LOG_LIMIT:
                    text = redact_text(line.decode("utf-8", errors="replace"))
                    written += len(text)
                    with contextlib.suppress(OSError):
                        log.write(text)
                        log.flush()
        finally:
            if log is not None:
                log.close()

    def _fail_pending(self, reason: str) -> None:
        for future in self._pending.values():
            if not future.done():
                future.set_exception(ProviderError("provider_exited", reason))
