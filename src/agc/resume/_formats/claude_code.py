"""Claude Code session files (``~/.claude/projects/<cwd>/<session>.jsonl``).

A message line is ``{"type": "user"|"assistant", "uuid", "parentUuid", "message":
{"role", "content"}, …}``. Claude Code writes one line per content block (one
``tool_use`` per line, one ``tool_result`` per line); as the Messages API does with
consecutive turns of one role, consecutive message lines of one role form one message
of the history. Lines that are not main-chain messages (``summary``, ``progress``,
``system``, ``file-history-snapshot``, sidechain lines, lines that are not JSON
objects, messages whose content is not a list of typed blocks) are kept verbatim.

Writing back keeps unchanged lines byte for byte, rewrites a line whose blocks
changed, drops a line left without blocks (re-pointing its children's ``parentUuid``
to its parent), and adds a synthetic ``tool_result`` as a new user line after the
assistant's last line, chained by ``parentUuid`` so Claude Code loads it.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any, Final

from agc.resume._formats import anthropic
from agc.resume._formats.jsonl import dump_line
from agc.resume._formats.model import Block, FormatSpec, History, Message

__all__ = ["SPEC", "is_message_line", "read", "write"]

_NAMESPACE: Final = uuid.UUID("6f1b1c8e-4d1e-5a0c-9b7e-61676372736d")
_COPIED_KEYS: Final = ("isSidechain", "userType", "cwd", "sessionId", "version", "gitBranch")


def _type(record: dict[str, Any]) -> str | None:
    value = record.get("type")
    return value if isinstance(value, str) else None


def is_message_line(record: Any) -> bool:
    """True for a main-chain user/assistant line whose content the API would accept."""
    if not isinstance(record, dict) or _type(record) not in {"user", "assistant"}:
        return False
    if record.get("isSidechain") is True:
        return False
    message = record.get("message")
    if not isinstance(message, dict) or message.get("role") != record.get("type"):
        return False
    return anthropic.content_blocks(message.get("content"), 0) is not None


def read(records: Sequence[Any]) -> History:
    """Read session lines (parsed JSON, or a line's text when it is not JSON)."""
    messages: list[Message] = []
    skipped: list[int] = []
    for index, record in enumerate(records):
        if not is_message_line(record):
            skipped.append(index)
            continue
        role = record["type"]
        blocks = anthropic.content_blocks(record["message"]["content"], index) or []
        if messages and messages[-1].role == role:
            messages[-1].blocks.extend(blocks)
        else:
            messages.append(Message(role, blocks, raw=None, origin=index))
    return History("claude-code", messages, list(records), skipped=skipped)


def _line_blocks(history: History) -> dict[int, list[Block]]:
    by_line: dict[int, list[Block]] = {}
    for message in history.messages:
        for block in message.blocks:
            if block.origin is not None:
                by_line.setdefault(block.origin, []).append(block)
    return by_line


def write(history: History, messages: list[Message]) -> list[Any]:
    """Return the repaired file's lines (text); see the module docstring."""
    lines = history.lines or [dump_line(record) for record in history.records]
    records = history.records
    original = _line_blocks(history)
    new_blocks: dict[int, list[Block]] = {}
    inserted: dict[int, list[Block]] = {}
    last_assistant_line: int | None = None
    for message in messages:
        targets = _assign_lines(message.blocks)
        written = [target for target in targets if target is not None]
        if message.role == "assistant" and written:
            last_assistant_line = max(written)
        for block, target in zip(message.blocks, targets, strict=True):
            if target is not None:
                new_blocks.setdefault(target, []).append(block)
            else:
                at = last_assistant_line if last_assistant_line is not None else -1
                inserted.setdefault(at, []).append(block)

    # (index of the original line or None, its text if unchanged else None, record)
    entries: list[tuple[int | None, str | None, Any]] = []
    dropped: dict[str, Any] = {}  # uuid of a dropped line -> its parentUuid
    repoint: dict[int, str] = {}  # original line -> new parentUuid (below a new line)
    skipped = set(history.skipped)
    for index in [-1, *range(len(records))]:
        if index >= 0:
            record = records[index]
            blocks = new_blocks.get(index, [])
            if index in skipped or [id(b) for b in blocks] == [
                id(b) for b in original.get(index, [])
            ]:
                # Unchanged, a line that is not a message, or a message line that never
                # held a block (empty content): kept as it is.
                entries.append((index, lines[index], record))
            elif not blocks:
                if isinstance(record.get("uuid"), str):
                    dropped[record["uuid"]] = record.get("parentUuid")
            else:
                changed = dict(record)
                changed["message"] = dict(record["message"])
                changed["message"]["content"] = [anthropic.block_to_raw(b) for b in blocks]
                entries.append((index, None, changed))
        anchor = records[index] if index >= 0 and isinstance(records[index], dict) else {}
        anchor_uuid = anchor.get("uuid")
        parent = anchor_uuid
        for block in inserted.get(index, []):
            line = _synthetic_line(block, anchor, parent)
            entries.append((None, None, line))
            parent = line["uuid"]
        if isinstance(anchor_uuid, str) and isinstance(parent, str) and parent != anchor_uuid:
            for later in range(index + 1, len(records)):
                record = records[later]
                if isinstance(record, dict) and record.get("parentUuid") == anchor_uuid:
                    repoint.setdefault(later, parent)
    return [_emit(index, text, record, dropped, repoint) for index, text, record in entries]


def _assign_lines(blocks: list[Block]) -> list[int | None]:
    """The line each block of one message is written to, so file order is block order.

    A block moved before blocks of earlier lines (text moved before ``tool_use``, a
    ``tool_result`` moved before text) joins the earliest of those lines; a line left
    without blocks is dropped. New blocks (no origin) get ``None``.
    """
    assigned: list[int | None] = [None] * len(blocks)
    floor: int | None = None
    for position in range(len(blocks) - 1, -1, -1):
        origin = blocks[position].origin
        if origin is None:
            continue
        floor = origin if floor is None else min(origin, floor)
        assigned[position] = floor
    return assigned


def _emit(
    index: int | None,
    text: str | None,
    record: Any,
    dropped: dict[str, Any],
    repoint: dict[int, str],
) -> str:
    """The line's text, with ``parentUuid``/``leafUuid`` re-pointed past dropped lines."""
    if not isinstance(record, dict):
        return text if text is not None else dump_line(record)
    changed = dict(record)
    if index is not None and index in repoint:
        changed["parentUuid"] = repoint[index]
    for key in ("parentUuid", "leafUuid"):
        value = changed.get(key)
        seen: set[str] = set()
        while isinstance(value, str) and value in dropped and value not in seen:
            seen.add(value)
            value = dropped[value]
        if key in changed:
            changed[key] = value
    if text is not None and changed == record:
        return text
    return dump_line(changed)


def _synthetic_line(block: Block, anchor: dict[str, Any], parent: Any) -> dict[str, Any]:
    session = anchor.get("sessionId")
    line: dict[str, Any] = {"parentUuid": parent}
    for key in _COPIED_KEYS:
        if key in anchor:
            line[key] = anchor[key]
    line["type"] = "user"
    line["message"] = {"role": "user", "content": [block.raw]}
    line["uuid"] = str(uuid.uuid5(_NAMESPACE, f"agc-synthetic-result:{session}:{block.call_id}"))
    if "timestamp" in anchor:
        line["timestamp"] = anchor["timestamp"]
    return line


def wrap_results(blocks: list[Block]) -> list[Message]:
    return anthropic.wrap_results(blocks)


SPEC = FormatSpec(
    name="claude-code",
    family="anthropic",
    line_based=True,
    can_move=False,
    read=read,
    write=write,
    synthesize=anthropic.synthesize,
    wrap_results=wrap_results,
)
