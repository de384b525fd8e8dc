"""The crash scenarios of the end-to-end suite, for any of the three clients.

Each client runs one scripted turn: a quick shell call (it completes: ``FIRST``), then a
long one (``sleep``: ``LONG``) during which the whole process group is SIGKILLed, then
a final answer that the killed run never gets to. What the kill leaves on disk gives the
crash shapes (:data:`SHAPES`):

``clean``            the same turn, not killed (control: nothing the kill left to repair)
``killed``           the session file exactly as the kill left it
``ends-after-call``  cut right after the line that records the long call (the kill came
                     before anything else was written)
``torn``             that file with its last line (the call) cut in half: the write was
                     interrupted (the cut is in the part after the call id, so what was
                     lost can still be named)

Codex and Claude Code write a call's line when the call starts, so the last two are cut
from the killed run's file. The Gemini CLI writes a call (its ``toolCalls`` entry, the
result inside) only once the call has finished: the killed file never records the long
call, and the last two are cut from the run-to-the-end file, a kill right after the
client recorded the long call (ends-after-call) or while it wrote it (torn), before the
``user`` message that repeats its response.

:class:`Driver` hides what differs between the clients: how a session is started and
resumed, where its file lives, and how a request shows calls and results.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

from tests.e2e.agents import (
    ClaudeSandbox,
    ClientResult,
    CodexSandbox,
    GeminiSandbox,
    kill_group,
    wait_for,
)
from tests.e2e.clients import ClientName
from tests.e2e.model_server import (
    Answer,
    ModelServer,
    RecordedRequest,
    Script,
    ShellCall,
    anthropic_pairing_error,
    gemini_pairing_error,
    responses_pairing_error,
)

__all__ = [
    "FIRST_OUTPUT",
    "SHAPES",
    "Driver",
    "Session",
    "Shape",
    "answered_ids",
    "calls_and_results",
    "crash_shape",
    "new_driver",
    "pairing_error",
    "shape_session",
]

Shape = Literal["clean", "killed", "ends-after-call", "torn"]
SHAPES: Final[tuple[Shape, ...]] = ("clean", "killed", "ends-after-call", "torn")

FIRST_OUTPUT: Final = "agc-e2e-first-done"
FINAL_ANSWER: Final = "All done: the tests pass."
RESUMED_ANSWER: Final = "Resumed and finished."
_STARTED: Final = "long-call-started"


Sandbox = CodexSandbox | ClaudeSandbox | GeminiSandbox


@dataclass(frozen=True)
class Session:
    """One session file as a client left it.

    Attributes:
        session_id: the client's session id (what its resume command takes).
        data: the file's bytes.
        home: the client's home the run had (``CODEX_HOME``, ``CLAUDE_CONFIG_DIR`` or
            ``GEMINI_CLI_HOME``); the file is still there.
        relative: where the file lives under that home.
        first_id: the first (completed) call's id as the file names it.
        long_id: the long call's id as the file names it; None when the file does not
            record it (the Gemini CLI, killed during the call).
        stream: Claude Code's ``stream-json`` output of the run (empty for the others).
        seconds: how long the run took (to the kill, for a killed run).
    """

    session_id: str
    data: bytes
    home: Path
    relative: Path
    first_id: str
    long_id: str | None
    stream: bytes = b""
    seconds: float = 0.0

    @property
    def path(self) -> Path:
        return self.home / self.relative


@dataclass
class Driver:
    """One client against one scripted model server, sessions in a shared work folder.

    ``first_id`` / ``long_id``: the call ids the script gives the two calls (Codex and
    Claude Code use them; the Gemini API's calls carry none and the Gemini CLI makes its
    own: see :attr:`Session.first_id`).
    """

    client: ClientName
    binary: Path
    root: Path
    server: ModelServer
    first_id: str
    long_id: str
    work: Path = field(init=False)
    _homes: int = 0

    def __post_init__(self) -> None:
        self.work = self.root / "work"
        self.work.mkdir(parents=True, exist_ok=True)

    # -- sandboxes -------------------------------------------------------------------

    def sandbox(self) -> Sandbox:
        """A fresh client home (nothing of earlier runs in it), same work folder."""
        self._homes += 1
        root = self.root / f"home-{self._homes}"
        if self.client == "codex":
            return CodexSandbox.create(root, self.server, self.binary, work=self.work)
        if self.client == "gemini":
            return GeminiSandbox.create(root, self.server, self.binary, work=self.work)
        return ClaudeSandbox.create(root, self.server, self.binary, work=self.work)

    @staticmethod
    def _home(box: Sandbox) -> Path:
        return box.config if isinstance(box, ClaudeSandbox) else box.home

    def _script(self, *, long_command: str) -> Script:
        return Script(
            [
                ShellCall(f"echo {FIRST_OUTPUT}", self.first_id),
                ShellCall(long_command, self.long_id),
                Answer(FINAL_ANSWER),
            ]
        )

    # -- runs ------------------------------------------------------------------------

    def run_clean(self) -> Session:
        """The scripted turn run to the end."""
        self.server.script = self._script(long_command="echo long-call-done")
        box = self.sandbox()
        session_id = str(uuid.uuid4())
        started = time.monotonic()
        if isinstance(box, CodexSandbox):
            done = box.exec("Run the two steps.")
        elif isinstance(box, GeminiSandbox):
            done = box.run("Run the two steps.")
        else:
            done = box.run("Run the two steps.", session_id)
        assert done.returncode == 0, done.describe()
        return self._session(box, session_id, time.monotonic() - started, done.stdout.encode())

    def run_killed(self) -> Session:
        """The scripted turn, SIGKILLed (process group) while the long call runs."""
        marker = self.root / _STARTED
        marker.unlink(missing_ok=True)
        # The tool's shell leaves its pid and becomes the sleep (exec): Claude Code starts
        # tool commands outside its own process group, so the group kill below does not
        # reach it, and it is ended here instead of living on for ten minutes.
        pid_file = self.root / "long-call.pid"
        pid_file.unlink(missing_ok=True)
        self.server.script = self._script(
            long_command=f"echo $$ > {pid_file}; touch {marker}; exec sleep 600"
        )
        box = self.sandbox()
        session_id = str(uuid.uuid4())
        started = time.monotonic()
        if isinstance(box, CodexSandbox):
            process = box.start("Run the two steps.")
            log = box.root / "codex-exec.log"
        elif isinstance(box, GeminiSandbox):
            process = box.start("Run the two steps.")
            log = box.root / "gemini-run.log"
        else:
            process = box.start("Run the two steps.", session_id)
            log = box.root / "claude-run.log"
        try:
            wait_for("the long tool call to start", marker.exists, timeout=90)
            # the kill must come after the client wrote the call to its session file (the
            # Gemini CLI: the model message the call came in, see _recorded)
            wait_for(
                "the client to record the long call",
                lambda: self._recorded(box, session_id),
                timeout=30,
            )
        finally:
            kill_group(process)
        seconds = time.monotonic() - started
        try:
            os.killpg(process.pid, 0)
        except ProcessLookupError:
            pass
        else:  # pragma: no cover - a tool process survived the group kill
            os.killpg(process.pid, signal.SIGKILL)
            raise AssertionError("the long tool call survived the process-group SIGKILL")
        finally:
            _end_tool_process(pid_file)
        stream = log.read_bytes() if isinstance(box, ClaudeSandbox) else b""
        return self._session(box, session_id, seconds, stream)

    def _recorded(self, box: Sandbox, session_id: str) -> bool:
        """True once the session file on disk holds a complete line with the long call.

        The Gemini CLI writes a call only once it has finished: there, true once a
        complete line holds the model message after the first call's result (the
        message the long call came in, written when the model's answer started)."""
        if isinstance(box, GeminiSandbox):
            return any(_gemini_after_first(path.read_bytes()) for path in box.session_files())
        home = self._home(box)
        pattern = "rollout-*.jsonl" if isinstance(box, CodexSandbox) else f"{session_id}.jsonl"
        needle = json.dumps(self.long_id).encode()
        for path in home.rglob(pattern):
            lines = path.read_bytes().split(b"\n")[:-1]  # complete lines only
            if any(needle in line for line in lines):
                return True
        return False

    def _session(self, box: Sandbox, session_id: str, seconds: float, stream: bytes) -> Session:
        if isinstance(box, CodexSandbox):
            path = box.session_file()
            session_id = box.session_id_of(path)
        elif isinstance(box, GeminiSandbox):
            path = box.session_file()
            session_id = json.loads(path.read_bytes().split(b"\n", 1)[0])["sessionId"]
        else:
            path = box.session_file(session_id)
        data = path.read_bytes()
        first_id, long_id = self._call_ids(data)
        home = self._home(box)
        return Session(
            session_id, data, home, path.relative_to(home), first_id, long_id, stream, seconds
        )

    def _call_ids(self, data: bytes) -> tuple[str, str | None]:
        """The first and the long call's ids as the file names them (the long one None
        when the file does not record it)."""
        if self.client != "gemini":
            recorded = json.dumps(self.long_id).encode() in data
            return self.first_id, self.long_id if recorded else None
        calls = _gemini_calls(data)
        assert calls, "the file records no call"
        assert FIRST_OUTPUT in calls[0][1], f"the first call is not the script's: {calls}"
        assert len(calls) <= 2, f"more calls than the script made: {calls}"
        return calls[0][0], calls[1][0] if len(calls) == 2 else None

    def resume(self, session: Session, data: bytes, prompt: str) -> Resumed:
        """Put ``data`` where the client keeps ``session`` (a fresh home) and resume it
        with the client's own command; the first model request it sends is kept."""
        self.server.script = Script([Answer(RESUMED_ANSWER)])
        box = self.sandbox()
        path = self._home(box) / session.relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        before = len(self.server.requests)
        done = box.resume(session.session_id, prompt)
        requests = [r for r in self.server.requests[before:] if r.protocol is not None]
        model = [r for r in requests if isinstance(r.body, dict) and r.body.get("tools")]
        return Resumed(done, model, path.read_bytes() if path.exists() else b"")


@dataclass(frozen=True)
class Resumed:
    """A resume: the client's result, the model requests it sent, its file afterwards."""

    result: ClientResult
    requests: list[RecordedRequest]
    file_after: bytes

    @property
    def first(self) -> RecordedRequest:
        assert self.requests, f"the client sent no model request\n{self.result.describe()}"
        return self.requests[0]


def _end_tool_process(pid_file: Path) -> None:
    """SIGKILL the long call's ``sleep`` (its pid in ``pid_file``) if it still runs."""
    try:
        pid = int(pid_file.read_text().strip())
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, ValueError):
        return  # never started, or already gone
    if cmdline.startswith(b"sleep\x00"):  # not a reused pid
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def new_driver(client: ClientName, binary: Path, root: Path, server: ModelServer) -> Driver:
    if client == "codex":
        return Driver(client, binary, root, server, "call_e2e_first", "call_e2e_long")
    if client == "gemini":  # the script's ids are not used (see Driver)
        return Driver(client, binary, root, server, "unused-first", "unused-long")
    return Driver(client, binary, root, server, "toolu_e2e_first", "toolu_e2e_long")


# --- the Gemini CLI's chat file ------------------------------------------------------------


def _gemini_records(data: bytes) -> list[Any]:
    """The complete lines' records (a torn last line left out)."""
    return [json.loads(line) for line in data.split(b"\n")[:-1] if line.strip()]


def _gemini_calls(data: bytes) -> list[tuple[str, str]]:
    """``(call id, command)`` of every ``toolCalls`` entry, from the last record of each
    model message (the client writes a message again when its calls have finished)."""
    last: dict[str, Any] = {}
    for record in _gemini_records(data):
        if isinstance(record, dict) and record.get("type") == "gemini":
            last[record["id"]] = record
    return [
        (entry["id"], str(entry.get("args", {}).get("command", "")))
        for record in last.values()
        for entry in record.get("toolCalls") or []
    ]


def _gemini_after_first(data: bytes) -> bool:
    """True once a complete line holds a model message after the first call's result."""
    lines = data.split(b"\n")[:-1]
    answered = [i for i, line in enumerate(lines) if FIRST_OUTPUT.encode() in line]
    return bool(answered) and any(
        b'"type":"gemini"' in line.replace(b" ", b"") for line in lines[answered[-1] + 1 :]
    )


# --- crash shapes ------------------------------------------------------------------------


def _call_line(lines: list[bytes], long_id: str) -> int:
    needle = json.dumps(long_id).encode()
    for index in range(len(lines) - 1, -1, -1):
        line = lines[index]
        # a Gemini CLI toolCalls entry holds the call and its result
        is_call = b'"function_call"' in line or b'"tool_use"' in line or b'"toolCalls"' in line
        is_result = b'"function_call_output"' in line or b'"tool_result"' in line
        if needle in line and is_call and not is_result:
            return index
    raise AssertionError(f"no line records the call {long_id}")


def shape_session(killed: Session, clean: Session, shape: Shape) -> Session:
    """The run a crash shape is cut from: ``ends-after-call`` and ``torn`` from the
    killed run's file when it records the long call, else from the run to the end (see
    the module docstring)."""
    if shape == "clean":
        return clean
    if shape == "killed" or killed.long_id is not None:
        return killed
    return clean


def crash_shape(killed: Session, clean: Session, shape: Shape) -> bytes:
    """The bytes of a crash shape (see the module docstring)."""
    source = shape_session(killed, clean, shape)
    if shape in {"clean", "killed"}:
        return source.data
    long_id = source.long_id
    assert long_id is not None, "the run to the end records the long call"
    lines = source.data.splitlines(keepends=True)
    cut = _call_line(lines, long_id)
    ends_after_call = b"".join(lines[: cut + 1])
    if shape == "ends-after-call":
        return ends_after_call
    call = lines[cut].rstrip(b"\n")
    after_id = call.index(json.dumps(long_id).encode()) + len(long_id) + 2
    half = after_id + (len(call) - after_id) // 2
    return b"".join(lines[:cut]) + call[:half]


# --- what a request carries ----------------------------------------------------------------


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _gemini_id(part: Any) -> str:
    """A Gemini call's id as the client's file names it: the client sends it without the
    ``<tool>__`` prefix it gives the id in its file (added back here)."""
    name, call_id = str(part.get("name", "")), str(part.get("id", ""))
    return call_id if call_id.startswith(f"{name}__") else f"{name}__{call_id}"


def calls_and_results(request: RecordedRequest) -> tuple[list[str], dict[str, str]]:
    """The call ids a model request carries (in order) and each result's text by call id
    (a Gemini call's id as its session file names it)."""
    body = request.body
    calls: list[str] = []
    results: dict[str, str] = {}
    if request.protocol == "gemini":
        for content in body.get("contents", []):
            for part in content.get("parts", []):
                if isinstance(part.get("functionCall"), dict):
                    calls.append(_gemini_id(part["functionCall"]))
                elif isinstance(part.get("functionResponse"), dict):
                    response = part["functionResponse"]
                    results[_gemini_id(response)] = _text(response.get("response"))
        return calls, results
    if request.protocol == "responses":
        for item in body.get("input", []):
            kind = item.get("type")
            if kind in {"function_call", "custom_tool_call", "local_shell_call"}:
                calls.append(item["call_id"])
            elif kind in {"function_call_output", "custom_tool_call_output"}:
                results[item["call_id"]] = _text(item.get("output"))
        return calls, results
    for message in body.get("messages", []):
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            if block.get("type") == "tool_use":
                calls.append(block["id"])
            elif block.get("type") == "tool_result":
                results[block["tool_use_id"]] = _text(block.get("content"))
    return calls, results


def answered_ids(request: RecordedRequest) -> list[str]:
    """The call id of every result a model request carries, in order, repeats kept."""
    body = request.body
    if request.protocol == "gemini":
        return [
            _gemini_id(part["functionResponse"])
            for content in body.get("contents", [])
            for part in content.get("parts", [])
            if isinstance(part.get("functionResponse"), dict)
        ]
    if request.protocol == "responses":
        return [
            item["call_id"]
            for item in body.get("input", [])
            if item.get("type") in {"function_call_output", "custom_tool_call_output"}
        ]
    return [
        block["tool_use_id"]
        for message in body.get("messages", [])
        if isinstance(message.get("content"), list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]


def pairing_error(request: RecordedRequest) -> str | None:
    """The provider's 400 message for the request's history, or None when it pairs."""
    checks: dict[str | None, Callable[[Any], str | None]] = {
        "responses": responses_pairing_error,
        "gemini": gemini_pairing_error,
    }
    return checks.get(request.protocol, anthropic_pairing_error)(request.body)
