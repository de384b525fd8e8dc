"""OpenAI Responses input items: ``function_call`` answered by ``function_call_output``.

Rules (OpenAI Responses API): every ``function_call`` (``custom_tool_call`` …) in the
input needs an output item with its ``call_id`` ("No tool output found for function
call …"); an output needs an earlier call ("No tool call found for function call
output …"); a ``reasoning`` item must be followed by the output item it produced
("… of type 'reasoning' was provided without its required following item").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from agc.errors import HistoryFormatError
from agc.resume.formats.model import Block, FormatSpec, History, Message

__all__ = ["CALL_TYPES", "OUTPUT_TYPES", "SPEC", "item_message", "read", "write"]

CALL_TYPES: Final[dict[str, str | None]] = {
    "function_call": "function_call_output",
    "custom_tool_call": "custom_tool_call_output",
    "local_shell_call": "local_shell_call_output",
    "computer_call": None,  # its output is a screenshot: never synthesized
}
OUTPUT_TYPES: Final = frozenset(
    {
        "function_call_output",
        "custom_tool_call_output",
        "local_shell_call_output",
        "computer_call_output",
    }
)


def item_message(item: Any, origin: int) -> Message | None:
    """The neutral message for one Responses item, or ``None`` if it is not an item."""
    if not isinstance(item, dict):
        return None
    item_type = item.get("type")
    if item_type is None and isinstance(item.get("role"), str):
        item_type = "message"
    if not isinstance(item_type, str):
        return None
    if item_type == "message":
        role = item.get("role")
        return Message(
            role if isinstance(role, str) else "user",
            [Block("text", item, origin=origin)],
            raw=item,
            origin=origin,
        )
    call_id = item.get("call_id")
    call_id = call_id if isinstance(call_id, str) and call_id else None
    if item_type in CALL_TYPES:
        name = item.get("name")
        arguments = item.get("arguments", item.get("input", item.get("action")))
        block = Block(
            "call",
            item,
            call_id=call_id,
            name=name if isinstance(name, str) else item_type,
            arguments=arguments,
            origin=origin,
        )
        return Message("assistant", [block], raw=item, origin=origin)
    if item_type in OUTPUT_TYPES:
        return Message(
            "tool", [Block("result", item, call_id=call_id, origin=origin)], raw=item, origin=origin
        )
    if item_type == "reasoning":
        return Message(
            "assistant", [Block("reasoning", item, origin=origin)], raw=item, origin=origin
        )
    return Message("assistant", [Block("other", item, origin=origin)], raw=item, origin=origin)


def read(records: Sequence[Any]) -> History:
    """Read a JSON array of Responses input items.

    Raises:
        HistoryFormatError: an entry is not an object with a ``type`` or a ``role``.
    """
    messages: list[Message] = []
    for index, record in enumerate(records):
        message = item_message(record, index)
        if message is None:
            raise HistoryFormatError(f"item {index} is not an object with a 'type' or 'role'")
        messages.append(message)
    return History("openai-responses", messages, list(records))


def write(history: History, messages: list[Message]) -> list[Any]:  # noqa: ARG001 - one signature for every format's writer or fact check
    """Return the repaired items (items are never edited, only kept, dropped or added)."""
    return [message.raw for message in messages]


def make_synthesizer(shell_output_type: str) -> Any:
    """A ``synthesize`` function; ``shell_output_type`` answers ``local_shell_call``."""

    def synthesize(call: Block, text: str) -> Block | None:
        call_type = call.raw.get("type") if isinstance(call.raw, dict) else None
        output_type = CALL_TYPES.get(call_type or "function_call")
        if call_type == "local_shell_call":
            output_type = shell_output_type
        if output_type is None:
            return None
        raw = {"type": output_type, "call_id": call.call_id, "output": text}
        return Block("result", raw, call_id=call.call_id, synthetic=True)

    return synthesize


def wrap_results(blocks: list[Block]) -> list[Message]:
    """One output item per result."""
    return [Message("tool", [block], raw=block.raw, origin=block.origin) for block in blocks]


SPEC = FormatSpec(
    name="openai-responses",
    family="responses",
    line_based=False,
    can_move=True,
    read=read,
    write=write,
    synthesize=make_synthesizer("local_shell_call_output"),
    wrap_results=wrap_results,
)
