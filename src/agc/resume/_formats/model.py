"""The format-neutral view of a tool-call history that validation and repair work on.

Every format reader turns its native records (messages, items or session-file lines)
into a list of :class:`Message` objects made of :class:`Block` objects, each keeping
the native object it came from (``raw``) and the index of its source record
(``origin``). Writers rebuild native records from the view, reusing ``raw`` untouched
wherever the repair did not change anything, so an unchanged history is written back
byte for byte.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from agc._core import json as strict_json
from agc.errors import JsonInvalidError

__all__ = [
    "FORMAT_NAMES",
    "Block",
    "BlockKind",
    "Family",
    "FormatName",
    "FormatSpec",
    "History",
    "Message",
    "arguments_are_json",
    "foreign_tool_marker",
]

FormatName = Literal["openai-chat", "anthropic", "openai-responses", "codex-rollout", "claude-code"]
FORMAT_NAMES: Final[tuple[FormatName, ...]] = (
    "openai-chat",
    "anthropic",
    "openai-responses",
    "codex-rollout",
    "claude-code",
)

Family = Literal["chat", "anthropic", "responses"]
"""Which provider's pairing rules apply: Chat Completions, Messages, or Responses."""

BlockKind = Literal["call", "result", "text", "reasoning", "other"]


@dataclass(eq=False)
class Block:
    """One part of a message: a tool call, a tool result, text, reasoning or other.

    Attributes:
        kind: what the part is.
        raw: the native object (a content block, a ``tool_calls`` entry, a whole tool
            message or Responses item, or a plain string of content).
        call_id: the tool call id (for calls and results).
        name: the tool name (calls).
        arguments: the call's arguments as stored: a JSON string (OpenAI) or an object
            (Anthropic ``input``).
        origin: index of the native record it came from; ``None`` for a block the
            repair created.
        synthetic: True for a result the repair created.
    """

    kind: BlockKind
    raw: Any
    call_id: str | None = None
    name: str | None = None
    arguments: Any = None
    origin: int | None = None
    synthetic: bool = False


@dataclass(eq=False)
class Message:
    """One message of the neutral view.

    Attributes:
        role: ``user``, ``assistant``, ``tool``, ``system``, ``developer`` …
        blocks: its parts, in order.
        raw: the native message (``None`` when it spans several records or is new).
        origin: index of its first native record (``None`` when new).
        dirty: True when the repair changed it, so the writer must rebuild it.
    """

    role: str
    blocks: list[Block]
    raw: Any = None
    origin: int | None = None
    dirty: bool = False

    def calls(self) -> list[Block]:
        return [block for block in self.blocks if block.kind == "call"]

    def results(self) -> list[Block]:
        return [block for block in self.blocks if block.kind == "result"]


@dataclass
class History:
    """A history read from native records.

    Attributes:
        format: the format it was read as.
        messages: the neutral view.
        records: the native records (parsed JSON values; for session files, one per
            line, a non-JSON line as its text).
        lines: for session files, each line's exact text (without its line break).
        final_newline: for session files, whether the last line ended with a newline.
        skipped: indices of records that are not part of the history (session-file
            lines such as metadata, progress events or lines that are not objects).
        torn: for session files, the index of a torn last line (not JSON and no final
            newline: a write cut off by a crash), else ``None``. See :mod:`.torn`.
    """

    format: FormatName
    messages: list[Message]
    records: list[Any]
    lines: list[str] | None = None
    final_newline: bool = True
    skipped: list[int] = field(default_factory=list)
    torn: int | None = None


@dataclass(frozen=True)
class FormatSpec:
    """How one format is read, written and answered.

    Attributes:
        name: format name.
        family: whose pairing rules apply.
        line_based: True for session files (JSONL), False for JSON arrays.
        can_move: whether the writer can move a result to another place.
        read: native records -> :class:`History`.
        write: history and repaired messages -> native records (JSON values, or lines
            of text for session files).
        synthesize: a call block and the error text -> a synthetic result block, or
            ``None`` when the call's type cannot be answered synthetically.
        wrap_results: result blocks -> the message(s) that carry them.
    """

    name: FormatName
    family: Family
    line_based: bool
    can_move: bool
    read: Callable[[Sequence[Any]], History]
    write: Callable[[History, list[Message]], list[Any]]
    synthesize: Callable[[Block, str], Block | None]
    wrap_results: Callable[[list[Block]], list[Message]]


def arguments_are_json(arguments: Any) -> bool:
    """True when a call's arguments can be replayed: an object, or a JSON object string.

    Source: issue 4 ("Calls whose arguments are not valid JSON are never kept for
    replay"); a stream cut mid-call leaves a truncated arguments string.
    """
    if isinstance(arguments, dict):
        return True
    if not isinstance(arguments, str):
        return False
    try:
        value = strict_json.loads(arguments, allow_lone_surrogates=True)
    except JsonInvalidError:  # a duplicate key is ambiguous: not replayed either
        return False
    return isinstance(value, dict)


_ANTHROPIC_TOOL_PARTS: Final = frozenset({"tool_use", "tool_result"})


def foreign_tool_marker(record: Any, family: Family) -> str | None:
    """Describe a tool-call marker of another API format in one record, else ``None``.

    A record read as the wrong format hides its calls (Chat ``tool_calls`` read as
    Anthropic, Anthropic ``tool_use`` blocks read as Chat text …), so the history would
    be reported valid while its provider rejects it; readers refuse such a record.
    """
    if not isinstance(record, dict):
        return None
    if family != "chat" and (record.get("role") == "tool" or "tool_calls" in record):
        return "OpenAI Chat tool fields (role 'tool' or 'tool_calls')"
    content = record.get("content")
    if family != "anthropic" and isinstance(content, list):
        for part in content:
            if isinstance(part, dict) and part.get("type") in _ANTHROPIC_TOOL_PARTS:
                return f"an Anthropic `{part['type']}` block"
    return None
