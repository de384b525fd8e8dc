"""Anthropic Messages: ``tool_use`` blocks answered by ``tool_result`` blocks.

Rules (Anthropic tool-use documentation): every ``tool_use`` block must have a matching
``tool_result`` block in the *next* message, which is a user message; inside it the
``tool_result`` blocks come first, before any text; a ``tool_result`` must answer a
``tool_use`` of the previous message; ``tool_use`` ids are unique.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from agc.errors import HistoryFormatError
from agc.resume._formats.model import (
    Block,
    BlockKind,
    FormatSpec,
    History,
    Message,
    foreign_tool_marker,
)

__all__ = ["SPEC", "block_from_raw", "content_blocks", "read", "read_one", "write"]

_REASONING_TYPES: Final = frozenset({"thinking", "redacted_thinking"})


def block_from_raw(raw: Any, origin: int) -> Block:
    """Classify one content block (a dict with a string ``type``, or a plain string)."""
    if isinstance(raw, str):
        return Block("text", raw, origin=origin)
    kind: BlockKind
    block_type = raw.get("type")
    if block_type == "tool_use":
        call_id = raw.get("id")
        name = raw.get("name")
        return Block(
            "call",
            raw,
            call_id=call_id if isinstance(call_id, str) and call_id else None,
            name=name if isinstance(name, str) else None,
            arguments=raw.get("input"),
            origin=origin,
        )
    if block_type == "tool_result":
        call_id = raw.get("tool_use_id")
        return Block(
            "result", raw, call_id=call_id if isinstance(call_id, str) else None, origin=origin
        )
    if block_type in _REASONING_TYPES:
        kind = "reasoning"
    elif block_type == "text":
        kind = "text"
    else:
        kind = "other"
    return Block(kind, raw, origin=origin)


def content_blocks(content: Any, origin: int) -> list[Block] | None:
    """Blocks of a message ``content`` (string or list of typed objects), else ``None``."""
    if isinstance(content, str):
        return [Block("text", content, origin=origin)] if content else []
    if not isinstance(content, list):
        return None
    if not all(isinstance(item, dict) and isinstance(item.get("type"), str) for item in content):
        return None
    return [block_from_raw(item, origin) for item in content]


def read(records: Sequence[Any]) -> History:
    """Read a JSON array of Messages API messages.

    Raises:
        HistoryFormatError: an entry is not ``{"role", "content"}`` with a string or a
            list of typed content blocks.
    """
    messages = [read_one(record, index) for index, record in enumerate(records)]
    return History("anthropic", messages, list(records))


def read_one(record: Any, index: int) -> Message:
    """The message of one Messages API record at ``index`` (see :func:`read`)."""
    if not isinstance(record, dict) or not isinstance(record.get("role"), str):
        raise HistoryFormatError(f"message {index} is not an object with a string 'role'")
    foreign = foreign_tool_marker(record, "anthropic")
    if foreign is not None:
        raise HistoryFormatError(f"message {index} holds {foreign}, not an anthropic message")
    blocks = content_blocks(record.get("content"), index)
    if blocks is None:
        raise HistoryFormatError(
            f"message {index}: content is neither a string nor a list of typed blocks"
        )
    return Message(record["role"], blocks, raw=record, origin=index)


def block_to_raw(block: Block) -> Any:
    """The native content block (a plain-string content becomes a ``text`` block)."""
    if isinstance(block.raw, str):
        return {"type": "text", "text": block.raw}
    return block.raw


def write(history: History, messages: list[Message]) -> list[Any]:  # noqa: ARG001 - one signature for every format's writer or fact check
    """Return the repaired messages as Messages API dicts (unchanged ones as read)."""
    out: list[Any] = []
    for message in messages:
        if not message.dirty:
            out.append(message.native())  # a RawRef stays one: written without a copy
            continue
        new = dict(message.raw) if isinstance(message.raw, dict) else {"role": message.role}
        new["content"] = [block_to_raw(block) for block in message.blocks]
        out.append(new)
    return out


def synthesize(call: Block, text: str) -> Block | None:
    """A ``tool_result`` block with ``is_error: true`` answering ``call``."""
    raw = {"type": "tool_result", "tool_use_id": call.call_id, "content": text, "is_error": True}
    return Block("result", raw, call_id=call.call_id, synthetic=True)


def wrap_results(blocks: list[Block]) -> list[Message]:
    """One user message holding all the result blocks."""
    return [Message("user", list(blocks), raw={"role": "user"}, dirty=True)]


SPEC = FormatSpec(
    name="anthropic",
    family="anthropic",
    line_based=False,
    can_move=True,
    read=read,
    write=write,
    synthesize=synthesize,
    wrap_results=wrap_results,
)
