"""Tool events and session facts read from a client's own session file. Pure.

One streaming parser for the session files the clients write, fed one parsed JSONL
line (a JSON object) at a time, so that ``agc record`` can fill tool-events while the
agent is still writing:

* a **Codex rollout** (``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl``): lines
  ``{timestamp, type, payload}``; ``session_meta`` names the session (``id``, ``cwd``),
  ``turn_context`` the model; a tool call is a ``response_item`` of type
  ``function_call`` / ``custom_tool_call`` / ``local_shell_call`` answered by the
  ``*_output`` item of the same ``call_id``; a ``web_search_call`` is a call and its own
  result;
* a **``codex exec --json`` stream**: ``thread.started`` names the thread (the id of the
  rollout Codex writes), ``item.started`` / ``item.completed`` of type
  ``command_execution``, ``file_change``, ``mcp_tool_call`` and ``web_search`` are the
  tool calls and their results (a stream carries no timestamps and no model);
* a **Claude Code session** (``~/.claude/projects/<cwd>/<session>.jsonl``): lines with
  ``sessionId``, ``cwd``, ``timestamp`` and a ``message`` whose ``content`` holds
  ``tool_use`` blocks (calls) and ``tool_result`` blocks (results, ``is_error``);
* a **Gemini CLI chat** (``~/.gemini/tmp/<project>/chats/session-*.jsonl``): a first line
  ``{sessionId, projectHash, startTime, …}``, then message records (``id``, ``type``)
  appended again each time they change, so a ``gemini`` message's ``toolCalls`` (``id``,
  ``name``, ``args``, ``status``, ``result``) are read once per call id: the call when
  first seen, the result when first seen with a final status (``success``, ``error``,
  ``cancelled``). Gemini's ``projectHash`` is the SHA-256 of the project root, so it
  gives :attr:`SessionFacts.project` without the path.

Each call gives one ``call`` :class:`~agc.capture.ToolEvent` and each result one
``result`` (``source="session-file"``, ``line`` the 1-based line of the file), in file
order; a result whose call was never seen is still kept. A line of no known format is
skipped (the transcript keeps it).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal, get_args

from agc._core import json as strict_json
from agc.capture._events import ClientName, SessionFacts, ToolEvent
from agc.errors import AgcError

__all__ = [
    "SESSION_FORMATS",
    "SessionFormat",
    "SessionParser",
    "detect_format",
    "parse_session",
]

SessionFormat = Literal["codex-rollout", "codex-exec", "claude-code", "gemini-chat"]
"""The session files agc reads tool events from (see the module docstring)."""

SESSION_FORMATS: Final[tuple[SessionFormat, ...]] = get_args(SessionFormat)

CLIENT_OF: Final[Mapping[SessionFormat, ClientName]] = {
    "codex-rollout": "codex",
    "codex-exec": "codex",
    "claude-code": "claude-code",
    "gemini-chat": "gemini",
}

_ROLLOUT_TYPES: Final = frozenset(
    {"session_meta", "response_item", "event_msg", "turn_context", "compacted"}
)
_EXEC_TYPES: Final = frozenset(
    {
        "thread.started",
        "turn.started",
        "turn.completed",
        "turn.failed",
        "item.started",
        "item.updated",
        "item.completed",
    }
)
_CLAUDE_TYPES: Final = frozenset({"user", "assistant", "system", "progress", "summary"})
_GEMINI_TYPES: Final = frozenset({"user", "gemini", "info", "error", "warning"})
_ROLLOUT_CALLS: Final = frozenset({"function_call", "custom_tool_call", "local_shell_call"})
_ROLLOUT_OUTPUTS: Final = frozenset({"function_call_output", "custom_tool_call_output"})
_EXEC_TOOLS: Final = frozenset({"command_execution", "file_change", "mcp_tool_call", "web_search"})
_GEMINI_FINAL: Final = frozenset({"success", "error", "cancelled"})
_SHA256_HEX: Final = re.compile(r"[0-9a-f]{64}")
# The exit status Codex prints at the head of a shell tool's output
# ("Exit code: 1", "Process exited with code 1").
_EXIT_LINE: Final = re.compile(r"^(?:Exit code:|Process exited with code) (-?[0-9]+)", re.M)


def detect_format(line: Mapping[str, Any]) -> SessionFormat | None:
    """The session format one parsed line belongs to, or ``None`` when it does not say.

    Decisive lines: a rollout line has a ``payload`` and a rollout ``type``; an exec
    event a dotted ``type`` (``thread.started``, ``item.completed`` …); a Gemini chat
    line ``sessionId`` with ``projectHash``, or a message ``id`` with ``type`` ``gemini``;
    a Claude Code line ``sessionId`` with a Claude line ``type``.
    """
    kind = _name(line.get("type"))
    if "payload" in line and kind in _ROLLOUT_TYPES:
        return "codex-rollout"
    if kind in _EXEC_TYPES:
        return "codex-exec"
    if "projectHash" in line and "sessionId" in line:
        return "gemini-chat"
    if kind == "gemini" and isinstance(line.get("id"), str):
        return "gemini-chat"
    if "sessionId" in line and kind in _CLAUDE_TYPES:
        return "claude-code"
    return None


def _size(value: Any) -> int:
    """UTF-8 bytes of ``value`` as compact JSON (a string counts its own text)."""
    if isinstance(value, str):
        return len(value.encode("utf-8", "surrogatepass"))
    try:
        return len(strict_json.dumps(value))
    except (AgcError, TypeError, ValueError):
        return len(repr(value).encode("utf-8", "surrogatepass"))


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _name(value: Any) -> str | None:
    """A ``type`` or ``status`` member when it is a string (else ``None``: never
    looked up in a set, where a list or an object would not hash)."""
    return value if isinstance(value, str) else None


def _arguments(raw: Any) -> Any:
    """Function-call arguments: a JSON text parsed, anything else (or bad JSON) as is."""
    if isinstance(raw, str):
        try:
            return strict_json.loads(raw)
        except AgcError:
            return raw
    return raw


def _codex_output_failed(payload: Mapping[str, Any]) -> bool:
    """Whether a rollout ``*_output`` item reports a failure: ``success: false``, a
    ``metadata.exit_code`` other than 0 (the JSON text older releases wrote) or an
    ``Exit code: N`` / ``Process exited with code N`` line with N other than 0."""
    output = payload.get("output")
    if isinstance(output, Mapping):
        if output.get("success") is False:
            return True
        output = output.get("content")
    if not isinstance(output, str):
        return False
    if output.startswith("{"):
        parsed = _arguments(output)
        if isinstance(parsed, Mapping):
            meta = parsed.get("metadata")
            code = meta.get("exit_code") if isinstance(meta, Mapping) else None
            return isinstance(code, int) and code != 0
    match = _EXIT_LINE.search(output[:512])
    return match is not None and int(match.group(1)) != 0


@dataclass
class _Facts:
    session_id: str | None = None
    model: str | None = None
    project: str | None = None
    first_ts: str | None = None
    last_ts: str | None = None
    calls: int = 0
    failures: int = 0
    thread_id: str | None = None
    seen: bool = False

    def stamp(self, ts: Any) -> str | None:
        text = _text(ts)
        if text is not None:
            self.first_ts = self.first_ts or text
            self.last_ts = text
        return text


@dataclass
class SessionParser:
    """A streaming reader of one session file (see the module docstring).

    Feed every parsed line in file order with :meth:`feed`, then call :meth:`finish`;
    :meth:`facts` says what the session was. The format is the first decisive line's
    (:func:`detect_format`), or ``format`` when given; lines of another format are
    skipped.

    Args:
        format: the format, when the caller knows it.
        session_id: the session id to use until the file names one (e.g. the file's
            name), else ``"unknown"``.
    """

    format: SessionFormat | None = None
    session_id: str | None = None
    _facts: _Facts = field(default_factory=_Facts)
    _calls: dict[str, str | None] = field(default_factory=dict)
    _answered: set[str] = field(default_factory=set)
    _number: int = 0

    @property
    def client(self) -> ClientName | None:
        """The client of the format read so far, ``None`` before a decisive line."""
        return None if self.format is None else CLIENT_OF[self.format]

    @property
    def named_session(self) -> str | None:
        """The session id the file itself gives, once read (``None`` before)."""
        return self._facts.session_id

    def feed(self, line: Any, number: int | None = None) -> list[ToolEvent]:
        """The tool events one parsed line gives (usually none or one).

        Args:
            number: the line's 1-based number in the file (each event's ``line``);
                by default the line after the one fed before (feed every line, a line
                that is not JSON as ``None``).
        """
        self._number = self._number + 1 if number is None else number
        if not isinstance(line, Mapping):
            return []
        if self.format is None:
            self.format = detect_format(line)
            if self.format is None:
                return []
        self._facts.seen = True
        if self.format == "codex-rollout":
            return self._rollout(line)
        if self.format == "codex-exec":
            return self._exec(line)
        if self.format == "claude-code":
            return self._claude(line)
        return self._gemini(line)

    def finish(self) -> list[ToolEvent]:
        """Events owed at the end of input: none (a call with no result stays one)."""
        return []

    def facts(self) -> SessionFacts | None:
        """What the session was, ``None`` when no line of a known format was read."""
        if self.format is None or not self._facts.seen:
            return None
        f = self._facts
        return SessionFacts(
            client=CLIENT_OF[self.format],
            session_id=self._session(),
            model=f.model,
            project=f.project,
            first_agent_ts=f.first_ts,
            last_agent_ts=f.last_ts,
            tool_calls=f.calls,
            tool_failures=f.failures,
            thread_id=f.thread_id,
        )

    # -- shared ---------------------------------------------------------------------

    def _session(self) -> str:
        return self._facts.session_id or self.session_id or "unknown"

    def _set_session(self, value: Any) -> None:
        if self._facts.session_id is None and _text(value) is not None:
            self._facts.session_id = value

    def _call(self, tool: str | None, call_id: str | None, args: Any, ts: str | None) -> ToolEvent:
        self._facts.calls += 1
        if call_id is not None:
            self._calls[call_id] = tool
        return self._event("call", tool=tool, call_id=call_id, input=args, agent_ts=ts)

    def _result(
        self, call_id: str | None, *, failed: bool, value: Any, ts: str | None, tool: str | None
    ) -> ToolEvent:
        self._facts.failures += failed
        if call_id is not None:
            self._answered.add(call_id)
            tool = self._calls.get(call_id, tool)
        return self._event(
            "result",
            tool=tool,
            call_id=call_id,
            status="error" if failed else "ok",
            result_bytes=_size(value),
            agent_ts=ts,
        )

    def _event(self, kind: Literal["call", "result"], **members: Any) -> ToolEvent:
        assert self.format is not None
        return ToolEvent(
            event=kind,
            source="session-file",
            client=CLIENT_OF[self.format],
            session_id=self._session(),
            line=self._number,
            **members,
        )

    # -- Codex rollout --------------------------------------------------------------

    def _rollout(self, line: Mapping[str, Any]) -> list[ToolEvent]:
        payload = line.get("payload")
        if not isinstance(payload, Mapping):
            return []
        ts = self._facts.stamp(line.get("timestamp"))
        kind, item = _name(line.get("type")), _name(payload.get("type"))
        if kind == "session_meta":
            self._set_session(payload.get("id"))
            cwd = _text(payload.get("cwd"))
            if cwd is not None and self._facts.project is None:
                self._facts.project = SessionFacts.project_of(cwd)
            return []
        if kind == "turn_context":
            self._facts.model = self._facts.model or _text(payload.get("model"))
            return []
        if kind != "response_item":
            return []
        call_id = _text(payload.get("call_id")) or _text(payload.get("id"))
        if item in _ROLLOUT_CALLS:
            if item == "local_shell_call":
                action = payload.get("action")
                return [self._call("local_shell", call_id, action, ts)]
            raw = payload.get("input") if item == "custom_tool_call" else payload.get("arguments")
            args = _arguments(raw) if item == "function_call" else raw
            return [self._call(_text(payload.get("name")), call_id, args, ts)]
        if item in _ROLLOUT_OUTPUTS:
            return [
                self._result(
                    _text(payload.get("call_id")),
                    failed=_codex_output_failed(payload),
                    value=payload.get("output"),
                    ts=ts,
                    tool=None,
                )
            ]
        if item == "web_search_call":
            action = payload.get("action")
            status = _name(payload.get("status"))
            return [
                self._call("web_search", call_id, action, ts),
                self._result(
                    call_id,
                    failed=status not in (None, "completed"),
                    value=action,
                    ts=ts,
                    tool="web_search",
                ),
            ]
        return []

    # -- codex exec --json ----------------------------------------------------------

    def _exec(self, line: Mapping[str, Any]) -> list[ToolEvent]:
        kind = _name(line.get("type"))
        if kind == "thread.started":
            thread = _text(line.get("thread_id"))
            self._set_session(thread)
            self._facts.thread_id = self._facts.thread_id or thread
            return []
        item = line.get("item")
        if kind not in {"item.started", "item.completed"} or not isinstance(item, Mapping):
            return []
        if _name(item.get("type")) not in _EXEC_TOOLS:
            return []
        call_id = _text(item.get("id"))
        tool, args = _exec_tool(item)
        events: list[ToolEvent] = []
        if call_id is None or call_id not in self._calls:
            events.append(self._call(tool, call_id, args, None))
        if kind == "item.completed" and (call_id is None or call_id not in self._answered):
            status = _name(item.get("status"))
            code = item.get("exit_code")
            failed = status in {"failed", "declined"} or (isinstance(code, int) and code != 0)
            failed = failed or item.get("error") is not None
            value = item.get("aggregated_output", item.get("result"))
            events.append(self._result(call_id, failed=failed, value=value, ts=None, tool=tool))
        return events

    # -- Claude Code ----------------------------------------------------------------

    def _claude(self, line: Mapping[str, Any]) -> list[ToolEvent]:
        self._set_session(line.get("sessionId"))
        cwd = _text(line.get("cwd"))
        if cwd is not None and self._facts.project is None:
            self._facts.project = SessionFacts.project_of(cwd)
        ts = self._facts.stamp(line.get("timestamp"))
        message = line.get("message")
        if not isinstance(message, Mapping):
            return []
        model = _text(message.get("model"))
        if model is not None and not model.startswith("<") and self._facts.model is None:
            self._facts.model = model
        content = message.get("content")
        if not isinstance(content, list):
            return []
        events: list[ToolEvent] = []
        for block in content:
            if not isinstance(block, Mapping):
                continue
            if block.get("type") == "tool_use":
                call_id = _text(block.get("id"))
                if call_id is not None and call_id in self._calls:
                    continue  # the same block written again
                events.append(self._call(_text(block.get("name")), call_id, block.get("input"), ts))
            elif block.get("type") == "tool_result":
                call_id = _text(block.get("tool_use_id"))
                if call_id is not None and call_id in self._answered:
                    continue
                events.append(
                    self._result(
                        call_id,
                        failed=block.get("is_error") is True,
                        value=block.get("content"),
                        ts=ts,
                        tool=None,
                    )
                )
        return events

    # -- Gemini CLI chat ------------------------------------------------------------

    def _gemini(self, line: Mapping[str, Any]) -> list[ToolEvent]:
        if "sessionId" in line:
            self._set_session(line.get("sessionId"))
            project = line.get("projectHash")
            if isinstance(project, str) and _SHA256_HEX.fullmatch(project):
                self._facts.project = self._facts.project or "sha256:" + project[:16]
            self._facts.stamp(line.get("startTime"))
            return []
        update = line.get("$set")
        if isinstance(update, Mapping):
            messages = update.get("messages")
            if isinstance(messages, list):
                return [e for m in messages if isinstance(m, Mapping) for e in self._gemini(m)]
            return []
        if _name(line.get("type")) not in _GEMINI_TYPES:
            return []
        ts = self._facts.stamp(line.get("timestamp"))
        if line.get("type") != "gemini":
            return []
        model = _text(line.get("model"))
        self._facts.model = self._facts.model or model
        calls = line.get("toolCalls")
        if not isinstance(calls, list):
            return []
        events: list[ToolEvent] = []
        for call in calls:
            if not isinstance(call, Mapping):
                continue
            call_id = _text(call.get("id"))
            name = _text(call.get("name"))
            call_ts = _text(call.get("timestamp")) or ts
            if call_id is None or call_id not in self._calls:
                events.append(self._call(name, call_id, call.get("args"), call_ts))
            status = _name(call.get("status"))
            if status in _GEMINI_FINAL and (call_id is None or call_id not in self._answered):
                events.append(
                    self._result(
                        call_id,
                        failed=status != "success",
                        value=call.get("result"),
                        ts=call_ts,
                        tool=name,
                    )
                )
        return events


def _exec_tool(item: Mapping[str, Any]) -> tuple[str | None, Any]:
    """The tool name and input of a ``codex exec --json`` tool item."""
    item_type = item.get("type")
    if item_type == "command_execution":
        return "command_execution", {"command": item.get("command")}
    if item_type == "file_change":
        return "file_change", {"changes": item.get("changes")}
    if item_type == "web_search":
        return "web_search", {"query": item.get("query")}
    server, tool = _text(item.get("server")), _text(item.get("tool"))
    name = f"mcp__{server}__{tool}" if server and tool else "mcp_tool_call"
    return name, item.get("arguments")


def parse_session(
    lines: Iterable[Any], *, session_id: str | None = None
) -> tuple[list[ToolEvent], SessionFacts | None]:
    """Every tool event of a whole session file (parsed lines) and its facts."""
    parser = SessionParser(session_id=session_id)
    events = [event for line in lines for event in parser.feed(line)]
    events.extend(parser.finish())
    return events, parser.facts()
