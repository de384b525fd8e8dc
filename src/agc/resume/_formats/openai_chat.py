"""OpenAI Chat Completions messages: ``assistant.tool_calls`` answered by ``tool`` messages.

Rules (OpenAI API reference, Chat Completions ``messages``): an assistant message with
``tool_calls`` must be followed by ``tool`` messages responding to each
``tool_call_id``, and a ``tool`` message must respond to a preceding ``tool_calls``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agc.errors import HistoryFormatError
from agc.resume._formats.model import Block, FormatSpec, History, Message, foreign_tool_marker

__all__ = ["SPEC", "read", "read_one", "write"]


def read(records: Sequence[Any]) -> History:
    """Read a JSON array of Chat Completions messages.

    Raises:
        HistoryFormatError: an entry is not an object with a string ``role``, or a
            ``tool_calls`` entry is not an object.
    """
    messages = [read_one(record, index) for index, record in enumerate(records)]
    return History("openai-chat", messages, list(records))


def read_one(record: Any, index: int) -> Message:
    """The message of one Chat Completions record at ``index`` (see :func:`read`)."""
    if not isinstance(record, dict) or not isinstance(record.get("role"), str):
        raise HistoryFormatError(f"message {index} is not an object with a string 'role'")
    foreign = foreign_tool_marker(record, "chat")
    if foreign is not None:
        raise HistoryFormatError(f"message {index} holds {foreign}, not an openai-chat message")
    role = record["role"]
    blocks: list[Block] = []
    if role == "tool":
        call_id = record.get("tool_call_id")
        blocks.append(
            Block(
                "result",
                record,
                call_id=call_id if isinstance(call_id, str) else None,
                origin=index,
            )
        )
    else:
        content = record.get("content")
        if content not in (None, "", []):
            blocks.append(Block("text", content, origin=index))
        tool_calls = record.get("tool_calls") if role == "assistant" else None
        for call in tool_calls or []:
            if not isinstance(call, dict):
                raise HistoryFormatError(f"message {index}: a tool_calls entry is not an object")
            function = call.get("function")
            if call.get("type") == "custom":  # {"custom": {"name", "input"}}
                function = call.get("custom")
                if isinstance(function, dict):
                    function = {
                        "name": function.get("name"),
                        "arguments": function.get("input"),
                    }
            function = function if isinstance(function, dict) else {}
            call_id = call.get("id")
            blocks.append(
                Block(
                    "call",
                    call,
                    call_id=call_id if isinstance(call_id, str) and call_id else None,
                    name=function.get("name") if isinstance(function.get("name"), str) else None,
                    arguments=function.get("arguments"),
                    origin=index,
                )
            )
    return Message(role, blocks, raw=record, origin=index)


def write(history: History, messages: list[Message]) -> list[Any]:  # noqa: ARG001 - one signature for every format's writer or fact check
    """Return the repaired messages as Chat Completions dicts (unchanged ones as read)."""
    out: list[Any] = []
    for message in messages:
        if not message.dirty:
            out.append(message.native())  # a RawRef stays one: written without a copy
            continue
        new = dict(message.raw) if isinstance(message.raw, dict) else {"role": message.role}
        calls = [block.raw for block in message.blocks if block.kind == "call"]
        texts = [block.raw for block in message.blocks if block.kind == "text"]
        if texts:
            new["content"] = texts[0]
        if calls:
            new["tool_calls"] = calls
        else:
            new.pop("tool_calls", None)
        out.append(new)
    return out


def synthesize(call: Block, text: str) -> Block | None:
    """A ``tool`` message answering ``call`` with ``text``."""
    raw = {"role": "tool", "tool_call_id": call.call_id, "content": text}
    return Block("result", raw, call_id=call.call_id, synthetic=True)


def wrap_results(blocks: list[Block]) -> list[Message]:
    """One ``tool`` message per result (a result block's ``raw`` is the whole message)."""
    return [Message("tool", [block], raw=block.native(), origin=block.origin) for block in blocks]


SPEC = FormatSpec(
    name="openai-chat",
    family="chat",
    line_based=False,
    can_move=True,
    read=read,
    write=write,
    synthesize=synthesize,
    wrap_results=wrap_results,
)
