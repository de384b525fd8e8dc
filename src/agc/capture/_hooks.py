"""A client hook's event JSON read into one tool-events record. Pure: bytes in, a value out.

Claude Code, the Codex CLI and the Gemini CLI each run a command hook with the event as
one JSON object on stdin (Claude Code's hooks reference; Codex's
``codex-rs/hooks/schema/generated/*.command.input.schema.json``; the Gemini CLI's hooks
reference). The three share the common members agc reads:

* ``session_id`` (required: it names the run, :func:`~agc.capture.run_id_for`),
  ``hook_event_name``, ``cwd``, ``transcript_path`` (the client's own session file: Claude
  Code's session JSONL, the Codex rollout, the Gemini CLI chat file), ``model`` (Codex),
  ``timestamp`` (Gemini CLI);
* for a tool: ``tool_name``, ``tool_input``, ``tool_use_id`` (Claude Code and Codex; the
  Gemini CLI gives none) and, after the call, ``tool_response`` (Gemini CLI:
  ``{llmContent, returnDisplay, error}``, a shell command's ``Exit Code: N`` in
  ``llmContent``) or ``error`` (Claude Code's ``PostToolUseFailure``). A Codex result
  is the tool's output text alone: a command that failed reads as ``ok``.

Event names are compared without case, ``_`` or ``-`` (Codex's configuration names
``preToolUse``, its payload ``PreToolUse``), in one table for every client
(:data:`EVENT_KINDS`); a name not in it is kept as ``other`` with the client's name.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from agc._core.json import dumps, loads
from agc.capture._events import ClientName, EventKind, ToolEvent
from agc.errors import AgcError, HookEventInvalidError, JsonInvalidError

__all__ = [
    "EVENT_KINDS",
    "MAX_HOOK_EVENT_BYTES",
    "HookEvent",
    "event_kind",
    "parse_hook_event",
]

MAX_HOOK_EVENT_BYTES: Final = 64 << 20
"""The largest event agc reads from a hook's stdin (64 MiB): a ``Write`` call carries
the whole file it writes; past this the event is refused, never cut."""

EVENT_KINDS: Final[Mapping[str, EventKind]] = {
    # Claude Code, Codex
    "sessionstart": "session-start",
    "userpromptsubmit": "prompt",
    "pretooluse": "call",
    "posttooluse": "result",
    "posttoolusefailure": "result",
    "stop": "stop",
    "precompact": "compact",
    "sessionend": "session-end",
    # Gemini CLI
    "beforeagent": "prompt",
    "beforetool": "call",
    "aftertool": "result",
    "afteragent": "stop",
    "precompress": "compact",
}
"""What a client's hook event is, by its name without case, ``_`` and ``-``."""

_FAILURE_EVENTS: Final = frozenset({"posttoolusefailure"})
_NAME_NOISE: Final = re.compile(r"[_\-\s]")
_MAX_NAME: Final = 200


def event_kind(name: str) -> EventKind:
    """The :data:`~agc.capture.EventKind` of a hook event name (``other`` when unknown)."""
    return EVENT_KINDS.get(_NAME_NOISE.sub("", name).lower(), "other")


@dataclass(frozen=True)
class HookEvent:
    """One hook firing, read.

    Attributes:
        record: the tool-events record (``source="hook"``), redacted when written.
        transcript_path: the client's session file as the event names it (a host
            path: never written into a record), ``None`` when not given.
        cwd: the working directory as the event names it (kept only as
            :meth:`~agc.capture.SessionFacts.project_of`), ``None`` when not given.
        model: the model the event names (Codex), else ``None``.
    """

    record: ToolEvent
    transcript_path: str | None = None
    cwd: str | None = None
    model: str | None = None

    @property
    def ends_session(self) -> bool:
        """Whether the client says the session ended (``SessionEnd``)."""
        return self.record.event == "session-end"


def parse_hook_event(client: ClientName, data: bytes) -> HookEvent:
    """Read one hook event (the bytes a hook command got on stdin).

    Args:
        client: the client that ran the hook (the installed command line says which).
        data: the event: one JSON object (UTF-8, strict JSON), at most
            :data:`MAX_HOOK_EVENT_BYTES`.

    Returns:
        The event; members agc does not read are ignored, a member of the wrong type
        is read as absent (a tool name that is not a string: no tool name).

    Raises:
        HookEventInvalidError: the bytes are too many, not strict JSON, not an object,
            or hold no usable ``session_id`` (a non-empty string): nothing names the
            run. The message names the problem, never the event's content.
    """
    if len(data) > MAX_HOOK_EVENT_BYTES:
        raise HookEventInvalidError(
            f"the {client} hook event is {len(data):,} bytes, more than the "
            f"{MAX_HOOK_EVENT_BYTES:,} agc reads"
        )
    try:
        value = loads(data, allow_lone_surrogates=False)
    except JsonInvalidError as exc:
        raise HookEventInvalidError(f"the {client} hook event is not JSON ({exc.problem})") from exc
    if not isinstance(value, dict):
        raise HookEventInvalidError(
            f"the {client} hook event is a JSON {type(value).__name__}, not an object"
        )
    session_id = _text(value, "session_id")
    if not session_id:
        raise HookEventInvalidError(f"the {client} hook event has no session_id")
    name = _text(value, "hook_event_name")
    hook = None if name is None else name[:_MAX_NAME]
    kind = "other" if name is None else event_kind(name)
    failure = name is not None and _NAME_NOISE.sub("", name).lower() in _FAILURE_EVENTS
    tool = _text(value, "tool_name") if kind in {"call", "result"} else None
    call_id = _text(value, "tool_use_id") or _text(value, "tool_call_id")
    status: Literal["ok", "error"] | None = None
    result_bytes: int | None = None
    tool_input = None
    if kind == "call":
        tool_input = value.get("tool_input")
    elif kind == "result":
        outcome = value.get("error") if failure else value.get("tool_response")
        status = "error" if failure or _failed(outcome) or _shell_failed(client, outcome) else "ok"
        result_bytes = _json_size(outcome)
    record = ToolEvent(
        event=kind,
        source="hook",
        client=client,
        session_id=session_id,
        hook=hook,
        tool=tool[:_MAX_NAME] if tool else None,
        call_id=call_id if kind in {"call", "result"} else None,
        input=tool_input,
        status=status,
        result_bytes=result_bytes,
        agent_ts=_text(value, "timestamp"),
    )
    return HookEvent(
        record=record,
        transcript_path=_text(value, "transcript_path"),
        cwd=_text(value, "cwd"),
        model=_text(value, "model"),
    )


def _text(value: Mapping[str, Any], key: str) -> str | None:
    """``value[key]`` when it is a non-empty string, else ``None``."""
    item = value.get(key)
    return item if isinstance(item, str) and item else None


def _failed(outcome: object) -> bool:
    """Whether a tool's response says it failed: an object with a true ``is_error``, a
    non-empty ``error`` (Gemini CLI) or ``success: false``."""
    if not isinstance(outcome, Mapping):
        return False
    if outcome.get("is_error") is True or outcome.get("success") is False:
        return True
    error = outcome.get("error")
    return error not in (None, "", False, {}, [])


_EXIT_CODE: Final = re.compile(r"^Exit Code: (-?[0-9]+)\s*$", re.MULTILINE)


def _shell_failed(client: ClientName, outcome: object) -> bool:
    """Whether a Gemini CLI shell result says its command exited non-zero: the shell
    tool reports ``Exit Code: N`` in its ``llmContent`` and gives no ``error``. (A Codex
    result is the output text alone: its exit code is not in the event.)"""
    if client != "gemini" or not isinstance(outcome, Mapping):
        return False
    content = outcome.get("llmContent")
    if not isinstance(content, str):
        return False
    return any(int(code) != 0 for code in _EXIT_CODE.findall(content))


def _json_size(outcome: object) -> int | None:
    """UTF-8 bytes of the compact JSON text of a tool's response (``None`` when absent)."""
    if outcome is None:
        return None
    try:
        return len(dumps(outcome))
    except AgcError:  # pragma: no cover - a parsed JSON value always encodes
        return None
