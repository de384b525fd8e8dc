"""The records of a turn, as a sink writes them (pure: no file is touched here).

A turn's transcript is, in order: one ``serve.request``, one ``serve.event`` per trace
event (the agent's own messages with ``source: "codex"``, the service's steps with
``source: "serve"``), and one ``serve.reply``. Its tool events are ``tool.call`` (a
tool item started), ``tool.result`` (it completed) and ``tool.approval`` (the agent
asked for an approval and what the service answered). Everything in them has been
through the secret detector; the message is also kept as its SHA-256, so a reader can
check a message they hold without the record keeping more than needed. The formats
are documented in docs/serve.md ("Records").
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any, Final

from agc._core.redact import redact_text, redact_value
from agc.serve._sink import TurnEnd, TurnInfo
from agc.serve._trace import TraceEvent

__all__ = [
    "RECORD_SCHEMA_VERSION",
    "TOOL_ITEM_TYPES",
    "manifest_attributes",
    "reply_record",
    "request_record",
    "tool_event",
    "transcript_record",
]

RECORD_SCHEMA_VERSION: Final = 1

#: app-server ``ThreadItem`` types that are tool calls.
TOOL_ITEM_TYPES: Final = frozenset(
    {
        "commandExecution",
        "fileChange",
        "mcpToolCall",
        "dynamicToolCall",
        "collabAgentToolCall",
        "webSearch",
        "imageView",
        "imageGeneration",
    }
)
_APPROVALS: Final = frozenset(
    {
        "item/commandExecution/requestApproval",
        "item/fileChange/requestApproval",
        "item/permissions/requestApproval",
        "execCommandApproval",
        "applyPatchApproval",
    }
)
# codex mcp-server event types that open and close a tool call (msg.type).
_MCP_TOOL_EVENTS: Final = {
    "exec_command_begin": ("commandExecution", "tool.call"),
    "exec_command_end": ("commandExecution", "tool.result"),
    "mcp_tool_call_begin": ("mcpToolCall", "tool.call"),
    "mcp_tool_call_end": ("mcpToolCall", "tool.result"),
    "patch_apply_begin": ("fileChange", "tool.call"),
    "patch_apply_end": ("fileChange", "tool.result"),
    "web_search_begin": ("webSearch", "tool.call"),
    "web_search_end": ("webSearch", "tool.result"),
}


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def manifest_attributes(turn: TurnInfo) -> dict[str, Any]:
    """The run manifest's ``attributes`` for a turn's run (known at its start)."""
    return {
        "serve": {
            "schema_version": RECORD_SCHEMA_VERSION,
            "trace_id": turn.trace_id,
            "conversation_id": turn.conversation_id,
            "turn": turn.turn_number,
            "provider": turn.provider,
            "created_at_ms": turn.created_at_ms,
        }
    }


def request_record(turn: TurnInfo) -> dict[str, Any]:
    """The first transcript record: the chat request."""
    return {
        "type": "serve.request",
        "schema_version": RECORD_SCHEMA_VERSION,
        "trace_id": turn.trace_id,
        "conversation_id": turn.conversation_id,
        "turn": turn.turn_number,
        "provider": turn.provider,
        "created_at_ms": turn.created_at_ms,
        "message": redact_text(turn.message),
        "message_sha256": _sha256(turn.message),
        "message_chars": len(turn.message),
        "idempotency_key_sha256": None
        if turn.idempotency_key is None
        else _sha256(turn.idempotency_key),
        "attachments": [redact_text(path) for path in turn.attachments],
    }


def transcript_record(event: TraceEvent) -> dict[str, Any]:
    """A trace event as a transcript record (``params`` were redacted already)."""
    return {
        "type": "serve.event",
        "trace_seq": event.seq,
        "at_ms": event.at_ms,
        "source": event.source,
        "kind": event.kind,
        "method": event.method,
        "params": dict(event.params),
    }


def reply_record(turn: TurnInfo, end: TurnEnd) -> dict[str, Any]:
    """The last transcript record: how the turn ended and the reply."""
    return {
        "type": "serve.reply",
        "trace_id": turn.trace_id,
        "status": end.status,
        "reply": None
        if end.reply is None
        else {"role": "assistant", "content": redact_text(end.reply)},
        "error": None if end.error is None else redact_value(dict(end.error)),
        "protocol": end.protocol,
        "model": end.model,
        "thread_id": end.thread_id,
        "session_id": end.session_id,
        "turn_id": end.turn_id,
        "event_count": end.event_count,
        "ended_at_ms": end.ended_at_ms,
        "redactions": end.redactions,
    }


def _text(value: Any, limit: int = 2000) -> str | None:
    return redact_text(value)[:limit] if isinstance(value, str) else None


def _chars(value: Any) -> int | None:
    return len(value) if isinstance(value, str) else None


def _app_server_tool(event: TraceEvent) -> dict[str, Any] | None:
    item = event.params.get("item")
    if not isinstance(item, Mapping) or item.get("type") not in TOOL_ITEM_TYPES:
        return None
    item_type = str(item.get("type"))
    record: dict[str, Any] = {
        "type": "tool.call" if event.method == "item/started" else "tool.result",
        "call_id": item.get("id"),
        "tool": item_type,
        "status": item.get("status"),
        "turn_id": event.params.get("turnId"),
        "trace_seq": event.seq,
        "source": "app-server",
    }
    if item_type == "commandExecution":
        record["command"] = _text(item.get("command"))
        record["cwd"] = _text(item.get("cwd"), 500)
    elif item_type in ("mcpToolCall", "dynamicToolCall"):
        record["server"] = _text(item.get("server") or item.get("namespace"), 200)
        record["name"] = _text(item.get("tool"), 200)
        arguments = item.get("arguments")
        record["arguments_sha256"] = None if arguments is None else _sha256(repr(arguments))
    elif item_type == "fileChange":
        changes = item.get("changes")
        record["paths"] = [
            _text(change.get("path"), 500)
            for change in (changes if isinstance(changes, list) else [])[:64]
            if isinstance(change, Mapping)
        ]
    elif item_type == "webSearch":
        record["query"] = _text(item.get("query"), 400)
    if record["type"] == "tool.result":
        record["exit_code"] = item.get("exitCode")
        record["duration_ms"] = item.get("durationMs")
        record["output_chars"] = _chars(item.get("aggregatedOutput"))
        record["is_error"] = item.get("error") is not None or item.get("success") is False
    return record


def _mcp_server_tool(event: TraceEvent) -> dict[str, Any] | None:
    message = event.params.get("msg")
    kind = message.get("type") if isinstance(message, Mapping) else None
    mapped = _MCP_TOOL_EVENTS.get(kind) if isinstance(kind, str) else None
    if mapped is None or not isinstance(message, Mapping):
        return None
    tool, record_type = mapped
    record: dict[str, Any] = {
        "type": record_type,
        "call_id": message.get("call_id"),
        "tool": tool,
        "trace_seq": event.seq,
        "source": "mcp-server",
    }
    command = message.get("command")
    if isinstance(command, list):
        record["command"] = _text(" ".join(str(part) for part in command))
    if record_type == "tool.result":
        record["exit_code"] = message.get("exit_code")
        record["output_chars"] = _chars(message.get("aggregated_output"))
    return record


def tool_event(event: TraceEvent) -> dict[str, Any] | None:
    """The tool event a trace event stands for, or ``None``."""
    if event.source != "codex":
        return None
    if event.kind == "server-request" and event.method in _APPROVALS:
        answer = event.params.get("agcAnswer")
        decision = answer.get("decision") if isinstance(answer, Mapping) else None
        return {
            "type": "tool.approval",
            "method": event.method,
            "call_id": event.params.get("itemId") or event.params.get("callId"),
            "decision": decision if isinstance(decision, str) else redact_value(decision),
            "trace_seq": event.seq,
        }
    if event.method in ("item/started", "item/completed"):
        return _app_server_tool(event)
    if event.method == "codex/event":
        return _mcp_server_tool(event)
    return None
