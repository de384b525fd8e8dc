"""Codex CLI rollout files (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``).

Each line is ``{"timestamp", "type", "payload"}``. The history Codex resumes from is
the ``payload`` of the ``response_item`` lines: Responses API items. A ``compacted``
line replaces everything before it, so only items after the last one are checked.
Other lines (``session_meta``, ``event_msg``, ``turn_context``) are kept verbatim.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agc.resume._formats import openai_responses
from agc.resume._formats.jsonl import dump_line
from agc.resume._formats.model import Block, FormatSpec, History, Message

__all__ = ["SPEC", "is_rollout_line", "read", "write"]

_ROLLOUT_TYPES = frozenset(
    {"session_meta", "response_item", "event_msg", "turn_context", "compacted"}
)


def is_rollout_line(record: Any) -> bool:
    """True for a ``{"timestamp", "type", "payload"}`` line of a known rollout type."""
    return (
        isinstance(record, dict)
        and isinstance(record.get("type"), str)
        and record["type"] in _ROLLOUT_TYPES
        and isinstance(record.get("payload"), dict)
    )


def read(records: Sequence[Any]) -> History:
    """Read rollout lines (parsed JSON, or a line's text when it is not JSON)."""
    messages: list[Message] = []
    skipped: list[int] = []
    for index, record in enumerate(records):
        if isinstance(record, dict) and record.get("type") == "compacted":
            skipped.extend(message.origin for message in messages if message.origin is not None)
            messages = []
            skipped.append(index)
            continue
        message = None
        if isinstance(record, dict) and record.get("type") == "response_item":
            message = openai_responses.item_message(record.get("payload"), index)
        if message is None:
            skipped.append(index)
        else:
            messages.append(message)
    return History("codex-rollout", messages, list(records), skipped=sorted(skipped))


def write(history: History, messages: list[Message]) -> list[Any]:
    """Return the repaired file's lines (text). Unchanged lines are kept byte for byte.

    A dropped item drops its line; a synthetic output becomes a new ``response_item``
    line right after the line of the call it answers, with that line's timestamp.
    """
    lines = history.lines or [dump_line(record) for record in history.records]
    kept: set[int] = set()
    inserted: dict[int, list[str]] = {}
    anchor: int | None = None
    for message in messages:
        if message.origin is not None:
            kept.add(message.origin)
            anchor = message.origin
            continue
        at = anchor if anchor is not None else -1
        record = history.records[at] if at >= 0 else {}
        timestamp = record.get("timestamp") if isinstance(record, dict) else None
        new_line = {"timestamp": timestamp, "type": "response_item", "payload": message.raw}
        inserted.setdefault(at, []).append(dump_line(new_line))
    history_lines = {m.origin for m in history.messages if m.origin is not None}
    out: list[str] = list(inserted.get(-1, []))
    for index, line in enumerate(lines):
        if index not in history_lines or index in kept:
            out.append(line)
        out.extend(inserted.get(index, []))
    return out


def wrap_results(blocks: list[Block]) -> list[Message]:
    return openai_responses.wrap_results(blocks)


SPEC = FormatSpec(
    name="codex-rollout",
    family="responses",
    line_based=True,
    can_move=False,
    read=read,
    write=write,
    # Codex answers its shell tool with a plain function_call_output.
    synthesize=openai_responses.make_synthesizer("function_call_output"),
    wrap_results=wrap_results,
)
