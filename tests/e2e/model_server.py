"""A scripted model server on 127.0.0.1 for the real Codex CLI, Claude Code and Gemini CLI.

It speaks the three wire protocols the clients use, as far as they use them:

* OpenAI Responses: ``POST /v1/responses`` answered as a server-sent event stream
  (``response.created``, ``response.output_item.done`` per output item,
  ``response.completed``), the shapes Codex's own test mocks use.
* Anthropic Messages: ``POST /v1/messages`` answered as the documented event stream
  (``message_start``, ``content_block_start`` / ``_delta`` / ``_stop``,
  ``message_delta``, ``message_stop``) and ``POST /v1/messages/count_tokens``.
* the Gemini API: ``POST /v1beta/models/<model>:streamGenerateContent?alt=sse`` answered
  as server-sent events (``data: <GenerateContentResponse>``), ``:generateContent`` as
  one JSON ``GenerateContentResponse`` (a request asking for JSON, the client's model
  routers, gets :data:`GEMINI_ROUTE`) and ``:countTokens``.

The server follows a :class:`Script`: each request that offers tools is answered by the
script's next step (a shell tool call or a final text answer); a request that offers no
tools (a client's side request: a title, a summary) gets a short text answer and does not
advance the script. Every request body is kept (:attr:`ModelServer.requests`).

Before it answers, the server checks the history it was sent against the provider's
documented pairing rule and answers a history that breaks it with the provider's own
400 error (:func:`responses_pairing_error`, :func:`anthropic_pairing_error`,
:func:`gemini_pairing_error`), so a client
that sends a broken history fails as it would against the real service.

The same server is the clients' HTTP(S) proxy (:func:`proxy_env`): a request for any
other host (a ``CONNECT`` tunnel or an absolute URL) is refused with 403 and recorded in
:attr:`ModelServer.outside_attempts`, which the tests assert empty. Nothing leaves the
machine.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Final, Literal

import zstandard

__all__ = [
    "Answer",
    "ModelServer",
    "ReactiveScript",
    "RecordedRequest",
    "Script",
    "ShellCall",
    "anthropic_pairing_error",
    "gemini_pairing_error",
    "proxy_env",
    "responses_pairing_error",
]

Protocol = Literal["responses", "messages", "gemini"]

_MAX_BODY: Final = 64 * 1024 * 1024


@dataclass(frozen=True)
class ShellCall:
    """Ask the client to run ``command`` with its shell tool; ``call_id`` is ours."""

    command: str
    call_id: str


@dataclass(frozen=True)
class Answer:
    """End the turn with this assistant text; with ``chunk``, the Responses stream also
    sends it as ``response.output_text.delta`` events of that many characters, as a
    model streams its reply."""

    text: str
    chunk: int | None = None


@dataclass(frozen=True)
class ToolCall:
    """Ask the client to call its tool whose name ends with ``tool`` (Codex prefixes an
    MCP server's tools with the server's name) with ``arguments``; Responses only."""

    tool: str
    arguments: Mapping[str, Any]
    call_id: str


Step = ShellCall | ToolCall | Answer


@dataclass
class Script:
    """The steps answered in order; past the end, the last step is repeated.

    ``steps`` must end with an :class:`Answer` so a client always gets to finish.
    """

    steps: Sequence[Step]
    _next: int = 0

    def __post_init__(self) -> None:
        if not self.steps or not isinstance(self.steps[-1], Answer):
            raise ValueError("a script must end with an Answer")

    def advance(self) -> Step:
        step = self.steps[min(self._next, len(self.steps) - 1)]
        self._next += 1
        return step

    def rewind(self, to: int = 0) -> None:
        self._next = to

    def step_for(self, body: Any) -> Step:
        """The step answering the request ``body`` (called under the server's lock).

        This script ignores the body and answers its steps in order; see
        :class:`ReactiveScript` for one that answers each request from its own history.
        """
        del body
        return self.advance()


_RUN_PREFIX: Final = "run:"
_TOOL_PREFIX: Final = "tool:"


class ReactiveScript(Script):
    """Answers each Responses request from its own history, so any number of
    conversations can run at once (each gets the same behaviour):

    * the last user message ``run: COMMAND`` with no tool output after it: a shell call
      running ``COMMAND`` (a fresh call id);
    * the same with a tool output after it: the answer ``"agc-e2e reply: <output>"``
      (the text after Codex's ``Output:`` header, stripped, at most 200 characters);
    * the last user message ``tool: NAME TEXT``: the same with a call of the tool whose
      name ends with ``NAME``, arguments ``{"text": TEXT}``;
    * any other last user message: the answer ``"ready"``.
    """

    def __init__(self, *, chunk: int | None = None) -> None:
        super().__init__([Answer("ready")])
        self._calls = itertools.count(1)
        self._chunk = chunk

    def step_for(self, body: Any) -> Step:
        items = body.get("input") if isinstance(body, dict) else None
        items = [item for item in items or () if isinstance(item, dict)]
        last_user = max(
            (i for i, item in enumerate(items) if item.get("role") == "user"), default=None
        )
        if last_user is None:
            return Answer("ready")
        text = _message_text(items[last_user]).strip()
        if not text.startswith((_RUN_PREFIX, _TOOL_PREFIX)):
            return Answer("ready")
        outputs = [
            item for item in items[last_user + 1 :] if item.get("type") == "function_call_output"
        ]
        if not outputs and text.startswith(_TOOL_PREFIX):
            tool, _, argument = text[len(_TOOL_PREFIX) :].strip().partition(" ")
            return ToolCall(tool, {"text": argument}, f"call_r{next(self._calls)}")
        if not outputs:
            return ShellCall(text[len(_RUN_PREFIX) :].strip(), f"call_r{next(self._calls)}")
        output = outputs[-1].get("output")
        output = output if isinstance(output, str) else json.dumps(output)
        tail = output.rsplit("Output:", 1)[-1].strip()[:200]
        return Answer(f"agc-e2e reply: {tail}", self._chunk)


def _message_text(item: dict[str, Any]) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    parts = [part.get("text") for part in content or () if isinstance(part, dict)]
    return "".join(part for part in parts if isinstance(part, str))


@dataclass(frozen=True)
class RecordedRequest:
    """One request as received: its path, headers, parsed JSON body and our answer."""

    method: str
    path: str
    headers: Mapping[str, str]
    body: Any
    status: int
    step: Step | None

    @property
    def protocol(self) -> Protocol | None:
        """``responses``, ``messages`` or ``gemini`` for a model request, else None."""
        path = self.path.split("?", 1)[0].rstrip("/")
        if path.endswith((":generateContent", ":streamGenerateContent")):
            return "gemini"
        if path.endswith("/responses"):
            return "responses"
        if path.endswith("/messages"):
            return "messages"
        return None


# --- the providers' pairing rules (written from their documented errors) ---------------

_RESPONSES_CALLS: Final = {
    "function_call": "function_call_output",
    "custom_tool_call": "custom_tool_call_output",
    "local_shell_call": "function_call_output",
}
_RESPONSES_OUTPUTS: Final = {"function_call_output", "custom_tool_call_output"}


def responses_pairing_error(body: Any) -> str | None:
    """The Responses API's 400 message for ``body["input"]``, or None when it pairs.

    Rule (OpenAI Responses): every ``function_call`` / ``custom_tool_call`` in ``input``
    has an output item with its ``call_id`` ("No tool output found for function call
    <id>."), and every output answers a call earlier in ``input`` ("No tool call found for
    function call output with call_id <id>.").
    """
    items = body.get("input") if isinstance(body, dict) else None
    if not isinstance(items, list):
        return None
    calls: dict[str, str] = {}
    answered: set[str] = set()
    for item in items:
        if not isinstance(item, dict):
            continue
        kind, call_id = item.get("type"), item.get("call_id")
        if not isinstance(call_id, str):
            continue
        if kind in _RESPONSES_CALLS:
            calls[call_id] = str(kind)
        elif kind in _RESPONSES_OUTPUTS:
            if call_id not in calls:
                return f"No tool call found for function call output with call_id {call_id}."
            answered.add(call_id)
    for call_id, kind in calls.items():
        if call_id not in answered:
            noun = "custom tool call" if kind == "custom_tool_call" else "function call"
            return f"No tool output found for {noun} {call_id}."
    return None


def _blocks(message: Any) -> list[dict[str, Any]]:
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list):
        return []
    return [block for block in content if isinstance(block, dict)]


def anthropic_pairing_error(body: Any) -> str | None:
    """The Messages API's 400 message for ``body["messages"]``, or None when it pairs.

    Rule (Anthropic Messages, tool use): each ``tool_use`` block has a ``tool_result``
    with its id in the *next* message, and each ``tool_result`` answers a ``tool_use`` of
    the message right before it.
    """
    messages = body.get("messages") if isinstance(body, dict) else None
    if not isinstance(messages, list):
        return None
    for index, message in enumerate(messages):
        uses = [b["id"] for b in _blocks(message) if b.get("type") == "tool_use" and "id" in b]
        following = messages[index + 1] if index + 1 < len(messages) else None
        results = {
            b.get("tool_use_id") for b in _blocks(following) if b.get("type") == "tool_result"
        }
        missing = [use for use in uses if use not in results]
        if missing:
            return (
                f"messages.{index}: `tool_use` ids were found without `tool_result` blocks "
                f"immediately after: {', '.join(missing)}. Each `tool_use` block must have a "
                "corresponding `tool_result` block in the next message."
            )
        previous = messages[index - 1] if index > 0 else None
        offered = {b.get("id") for b in _blocks(previous) if b.get("type") == "tool_use"}
        for position, block in enumerate(_blocks(message)):
            if block.get("type") == "tool_result" and block.get("tool_use_id") not in offered:
                return (
                    f"messages.{index}.content.{position}: unexpected `tool_use_id` found in "
                    f"`tool_result` blocks: {block.get('tool_use_id')}. Each `tool_result` "
                    "block must have a corresponding `tool_use` block in the previous message."
                )
    return None


def _parts(content: Any) -> list[dict[str, Any]]:
    parts = content.get("parts") if isinstance(content, dict) else None
    if not isinstance(parts, list):
        return []
    return [part for part in parts if isinstance(part, dict)]


GEMINI_PAIRING_MESSAGE: Final = (
    "Please ensure that the number of function response parts is equal to the number of "
    "function call parts of the function call turn."
)


def gemini_pairing_error(body: Any) -> str | None:
    """The Gemini API's 400 message for ``body["contents"]``, or None when it pairs.

    Rule (Gemini API, function calling): a model turn with N ``functionCall`` parts is
    followed by a turn with exactly N ``functionResponse`` parts (the API's
    ``INVALID_ARGUMENT`` "Please ensure that the number of function response parts is
    equal to the number of function call parts of the function call turn."), and a
    ``functionResponse`` answers a function call turn right before it.
    """
    contents = body.get("contents") if isinstance(body, dict) else None
    if not isinstance(contents, list):
        return None
    for index, content in enumerate(contents):
        calls = sum(1 for part in _parts(content) if "functionCall" in part)
        responses = sum(1 for part in _parts(content) if "functionResponse" in part)
        previous = contents[index - 1] if index > 0 else None
        previous_calls = sum(1 for part in _parts(previous) if "functionCall" in part)
        if responses and responses != previous_calls:
            return GEMINI_PAIRING_MESSAGE
        following = contents[index + 1] if index + 1 < len(contents) else None
        if calls and following is not None:
            answered = sum(1 for part in _parts(following) if "functionResponse" in part)
            if answered != calls:
                return GEMINI_PAIRING_MESSAGE
    return None


# --- the wire formats -------------------------------------------------------------------


def _sse(events: Sequence[Mapping[str, Any]]) -> bytes:
    out = []
    for event in events:
        out.append(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n")
    return "".join(out).encode("utf-8")


def _shell_tool(tools: Any) -> tuple[str, str]:
    """The client's shell tool in a Responses request: (name, kind of its argument).

    Codex offers one of ``shell_command`` (``{"command": str}``), ``exec_command``
    (``{"cmd": str}``) or ``shell`` (``{"command": [argv]}``), depending on version and
    configuration.
    """
    names = {t.get("name") for t in tools or () if isinstance(t, dict)}
    for name, kind in (("shell_command", "command"), ("exec_command", "cmd"), ("shell", "argv")):
        if name in names:
            return name, kind
    raise LookupError(f"the request offers no shell tool (tools: {sorted(map(str, names))})")


def _responses_arguments(kind: str, command: str) -> str:
    if kind == "argv":
        return json.dumps({"command": ["bash", "-lc", command], "timeout_ms": 600_000})
    if kind == "cmd":
        return json.dumps({"cmd": command, "yield_time_ms": 600_000})
    return json.dumps({"command": command, "timeout_ms": 600_000})


def _tool_named(tools: Any, suffix: str) -> tuple[str | None, str]:
    """The offered function tool ending with ``suffix``: ``(namespace, name)``, the
    namespace (``None`` for a top-level tool) that holds it, as Codex offers an MCP
    server's tools (``{"type": "namespace", "name": "mcp__<server>", "tools": [...]}``)."""
    names: list[str] = []
    for tool in tools or ():
        if not isinstance(tool, dict):
            continue
        inner = tool.get("tools") if tool.get("type") == "namespace" else None
        for entry in inner if isinstance(inner, list) else [tool]:
            name = str(entry.get("name")) if isinstance(entry, dict) else ""
            names.append(name)
            if name.endswith(suffix):
                return (str(tool["name"]) if inner is not None else None), name
    raise LookupError(f"the request offers no tool named *{suffix} (tools: {sorted(names)})")


def responses_stream(step: Step, tools: Any, response_id: str) -> bytes:
    """The SSE body answering a Responses request with ``step``."""
    if isinstance(step, ToolCall):
        namespace, name = _tool_named(tools, step.tool)
        item: dict[str, Any] = {
            "type": "function_call",
            "id": f"fc_{step.call_id}",
            "call_id": step.call_id,
            "name": name,
            "arguments": json.dumps(dict(step.arguments)),
        }
        if namespace is not None:
            item["namespace"] = namespace
    elif isinstance(step, ShellCall):
        name, kind = _shell_tool(tools)
        item = {
            "type": "function_call",
            "id": f"fc_{step.call_id}",
            "call_id": step.call_id,
            "name": name,
            "arguments": _responses_arguments(kind, step.command),
        }
    else:
        item = {
            "type": "message",
            "role": "assistant",
            "id": f"msg_{response_id}",
            "content": [{"type": "output_text", "text": step.text}],
        }
    usage = {
        "input_tokens": 10,
        "input_tokens_details": None,
        "output_tokens": 5,
        "output_tokens_details": None,
        "total_tokens": 15,
    }
    deltas: list[dict[str, Any]] = []
    if isinstance(step, Answer) and step.chunk:
        deltas = [
            {
                "type": "response.output_text.delta",
                "item_id": item["id"],
                "output_index": 0,
                "content_index": 0,
                "delta": step.text[start : start + step.chunk],
            }
            for start in range(0, len(step.text), step.chunk)
        ]
    return _sse(
        [
            {"type": "response.created", "response": {"id": response_id}},
            {"type": "response.output_item.added", "output_index": 0, "item": item},
            *deltas,
            {"type": "response.output_item.done", "output_index": 0, "item": item},
            {"type": "response.completed", "response": {"id": response_id, "usage": usage}},
        ]
    )


def messages_stream(step: Step, model: str, message_id: str) -> bytes:
    """The SSE body answering a Messages request with ``step`` (Bash tool for a call)."""
    usage = {"input_tokens": 10, "output_tokens": 1}
    events: list[dict[str, Any]] = [
        {
            "type": "message_start",
            "message": {
                "id": message_id,
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": usage,
            },
        }
    ]
    if isinstance(step, ToolCall):
        raise NotImplementedError("a named tool call is scripted for the Responses API only")
    if isinstance(step, ShellCall):
        events += [
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {
                    "type": "tool_use",
                    "id": step.call_id,
                    "name": "Bash",
                    "input": {},
                },
            },
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {
                    "type": "input_json_delta",
                    "partial_json": json.dumps(
                        {"command": step.command, "description": "agc e2e step", "timeout": 600000}
                    ),
                },
            },
            {"type": "content_block_stop", "index": 0},
        ]
        stop = "tool_use"
    else:
        events += [
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": step.text},
            },
            {"type": "content_block_stop", "index": 0},
        ]
        stop = "end_turn"
    events += [
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": 5},
        },
        {"type": "message_stop"},
    ]
    return _sse(events)


GEMINI_SHELL_TOOL: Final = "run_shell_command"


def _gemini_tool_names(tools: Any) -> set[str]:
    names: set[str] = set()
    for tool in tools or ():
        declarations = tool.get("functionDeclarations") if isinstance(tool, dict) else None
        for declaration in declarations or ():
            if isinstance(declaration, dict) and isinstance(declaration.get("name"), str):
                names.add(declaration["name"])
    return names


def gemini_response(step: Step, tools: Any, model: str, response_id: str) -> dict[str, Any]:
    """The ``GenerateContentResponse`` answering a Gemini request with ``step``.

    A :class:`ShellCall` becomes a ``functionCall`` of the client's shell tool
    (``run_shell_command``, ``{"command", "description"}``) with no call id, as the Gemini
    API sends it; the client names the call itself.
    """
    if isinstance(step, ToolCall):
        raise NotImplementedError("a named tool call is scripted for the Responses API only")
    if isinstance(step, ShellCall):
        names = _gemini_tool_names(tools)
        if GEMINI_SHELL_TOOL not in names:
            raise LookupError(f"the request offers no shell tool (tools: {sorted(names)})")
        part: dict[str, Any] = {
            "functionCall": {
                "name": GEMINI_SHELL_TOOL,
                "args": {"command": step.command, "description": "agc e2e step"},
            }
        }
    else:
        part = {"text": step.text}
    return {
        "candidates": [
            {"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
        "modelVersion": model,
        "responseId": response_id,
    }


def _gemini_model(path: str) -> str:
    """``gemini-x`` from ``/v1beta/models/gemini-x:streamGenerateContent``."""
    return path.rsplit("/", 1)[-1].split(":", 1)[0]


def _wants_json(body: Any) -> bool:
    config = body.get("generationConfig") if isinstance(body, dict) else None
    return isinstance(config, dict) and config.get("responseMimeType") == "application/json"


#: The answer to the client's model routers (a JSON request with no tools): the fields
#: of both classifiers the Gemini CLI asks (a choice, and a complexity score).
GEMINI_ROUTE: Final = json.dumps(
    {
        "reasoning": "agc e2e",
        "model_choice": "flash",
        "complexity_reasoning": "agc e2e",
        "complexity_score": 10,
    }
)


# --- the server -------------------------------------------------------------------------


@dataclass
class ModelServer:
    """The scripted server; use as a context manager (starts and stops its thread).

    ``log`` (optional) receives one JSON line per request, for reading a failure.
    """

    script: Script
    log: Path | None = None
    requests: list[RecordedRequest] = field(default_factory=list)
    outside_attempts: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    _httpd: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        assert self._httpd is not None, "the server is not running"
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> ModelServer:
        handler = _make_handler(self)
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def model_requests(self, protocol: Protocol | None = None) -> list[RecordedRequest]:
        """The model requests received (those that offered tools), in order."""
        with self._lock:
            return [
                r
                for r in self.requests
                if r.protocol is not None
                and (protocol is None or r.protocol == protocol)
                and isinstance(r.body, dict)
                and r.body.get("tools")
            ]

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)
            if self.log is not None:
                entry = {
                    "method": request.method,
                    "path": request.path,
                    "status": request.status,
                    "step": repr(request.step),
                    "body": request.body,
                }
                with self.log.open("a", encoding="utf-8") as fh:
                    fh.write(json.dumps(entry) + "\n")

    def _answer(
        self, protocol: Protocol, body: Any, path: str = ""
    ) -> tuple[int, str, bytes, Step | None]:
        """(status, content type, body, step) for one model request."""
        if protocol == "gemini":
            return self._answer_gemini(body, path)
        if protocol == "responses":
            error = responses_pairing_error(body)
            if error is not None:
                payload: dict[str, Any] = {
                    "error": {
                        "message": error,
                        "type": "invalid_request_error",
                        "param": "input",
                        "code": None,
                    }
                }
                return 400, "application/json", json.dumps(payload).encode(), None
        else:
            error = anthropic_pairing_error(body)
            if error is not None:
                payload = {
                    "type": "error",
                    "error": {"type": "invalid_request_error", "message": error},
                }
                return 400, "application/json", json.dumps(payload).encode(), None
        has_tools = isinstance(body, dict) and bool(body.get("tools"))
        with self._lock:
            step: Step = self.script.step_for(body) if has_tools else Answer("agc e2e")
            number = next(self._ids)
        if protocol == "responses":
            data = responses_stream(step, body.get("tools"), f"resp_{number}")
        else:
            data = messages_stream(step, str(body.get("model", "claude")), f"msg_{number:024d}")
        return 200, "text/event-stream", data, step

    def _answer_gemini(self, body: Any, path: str) -> tuple[int, str, bytes, Step | None]:
        error = gemini_pairing_error(body)
        if error is not None:
            payload = {"error": {"code": 400, "message": error, "status": "INVALID_ARGUMENT"}}
            return 400, "application/json", json.dumps(payload).encode(), None
        has_tools = isinstance(body, dict) and bool(body.get("tools"))
        with self._lock:
            if has_tools:
                step: Step = self.script.step_for(body)
            else:
                step = Answer(GEMINI_ROUTE if _wants_json(body) else "agc e2e")
            number = next(self._ids)
        answer = gemini_response(step, body.get("tools"), _gemini_model(path), f"gem_{number}")
        if path.endswith(":streamGenerateContent"):
            return 200, "text/event-stream", f"data: {json.dumps(answer)}\r\n\r\n".encode(), step
        return 200, "application/json", json.dumps(answer).encode(), step


def _make_handler(server: ModelServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: requests are recorded, not printed."""

        def _local(self) -> bool:
            return self.path.startswith("/")

        def _refuse_outside(self) -> None:
            with server._lock:
                server.outside_attempts.append(f"{self.command} {self.path}")
            self._send(HTTPStatus.FORBIDDEN, "text/plain", b"agc e2e: no outside calls\n")

        def _send(self, status: int, content_type: str, data: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            if content_type == "text/event-stream":
                self.send_header("Cache-Control", "no-cache")
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()

        def _body(self) -> Any:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(min(length, _MAX_BODY)) if length else b""
            if self.headers.get("Content-Encoding") == "zstd":
                raw = zstandard.ZstdDecompressor().decompress(raw, max_output_size=_MAX_BODY)
            try:
                return json.loads(raw) if raw else None
            except ValueError:
                return raw.decode("utf-8", "replace")

        def do_CONNECT(self) -> None:
            self._refuse_outside()
            self.close_connection = True

        def do_GET(self) -> None:
            if not self._local():
                self._refuse_outside()
                return
            path = self.path.split("?", 1)[0].rstrip("/")
            if path.endswith("/models"):
                data = json.dumps({"object": "list", "data": [], "models": []}).encode()
                status = 200
            else:
                data, status = b'{"error": {"message": "not found"}}', 404
            server._record(
                RecordedRequest("GET", self.path, dict(self.headers), None, status, None)
            )
            self._send(status, "application/json", data)

        def do_POST(self) -> None:
            if not self._local():
                self._refuse_outside()
                return
            body = self._body()
            path = self.path.split("?", 1)[0].rstrip("/")
            step: Step | None = None
            if path.endswith("/messages/count_tokens"):
                status, kind, data = 200, "application/json", b'{"input_tokens": 10}'
            elif path.endswith(":countTokens"):
                status, kind, data = 200, "application/json", b'{"totalTokens": 10}'
            elif path.endswith((":generateContent", ":streamGenerateContent")):
                status, kind, data, step = server._answer("gemini", body, path)
            elif path.endswith("/responses"):
                status, kind, data, step = server._answer("responses", body)
            elif path.endswith("/messages"):
                status, kind, data, step = server._answer("messages", body)
            else:
                status, kind, data = 404, "application/json", b'{"error": {"message": "not found"}}'
            server._record(
                RecordedRequest("POST", self.path, dict(self.headers), body, status, step)
            )
            self._send(status, kind, data)

        def do_PUT(self) -> None:
            self._refuse_outside()

        def do_HEAD(self) -> None:
            self._refuse_outside()

    return Handler


def proxy_env(server: ModelServer) -> dict[str, str]:
    """Environment that sends every client HTTP(S) request for another host to ``server``.

    Requests to the server itself (127.0.0.1) go direct (``NO_PROXY``).
    """
    url = server.url
    env = {}
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        env[name] = url
        env[name.lower()] = url
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    return env
