"""Gemini CLI session files (``~/.gemini/tmp/<project>/chats/session-<date>-<id8>.jsonl``).

The file is a log of records, one JSON object a line, that the client replays into a
map of messages by ``id`` when it resumes (Gemini CLI's ``loadConversationRecord``):

- a header ``{"sessionId", "projectHash", "startTime", …}`` (may hold ``messages``);
- ``{"$set": {…}}`` updates the metadata; a ``$set`` holding ``messages`` replaces every
  message with those;
- ``{"$rewindTo": ID}`` removes message ``ID`` and every message after it;
- a message record ``{"id", "timestamp", "type": "user"|"gemini"|"info"|…, "content",
  …}``: a record with an ``id`` already seen replaces that message in its place (the
  client writes a model message once when it starts and again with its ``toolCalls``).

The client then turns the messages into the API's ``contents``
(``convertSessionToClientHistory``): a ``user`` message is a user turn (unless its text
is empty or starts with ``/``, ``?``, ``<session_context>`` or ``<hook_context>``); a
``gemini`` message is a model turn of its thoughts, its content parts and a
``functionCall`` per ``toolCalls`` entry (or its content parts alone when they hold a
``functionCall`` or a thought), followed, when entries carry a ``result``, by a user turn
of those results (``functionResponse`` parts). Consecutive turns of one role are one
message of the view, as the API reads the turn after a function call turn.

Gemini CLI 0.61 records each result twice: in its call's ``toolCalls[].result`` and
again as a ``user`` message of ``functionResponse`` parts, so a resumed session sends
each response twice, which the API refuses (400 ``INVALID_ARGUMENT``: "Please ensure
that the number of function response parts is equal to the number of function call
parts of the function call turn"). The view shows both, as a duplicate result.

Writing back keeps every line the repair does not touch byte for byte; a changed
message is rewritten in its last record (earlier records of its id are superseded); a
``user`` message left without parts is removed with every record of its id (kept
with no part when a ``$rewindTo`` names it: a rewind to a missing id clears every
message); a
synthetic result goes into its call's ``toolCalls`` entry as ``result`` (status
``error``), or, for a call held as a content part, into a new ``user`` record after the
model message.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from agc.resume._formats.jsonl import dump_line
from agc.resume._formats.model import Block, FormatSpec, History, Message

__all__ = ["SPEC", "GeminiHistory", "is_gemini_line", "read", "write", "write_lines"]

_NAMESPACE: Final = uuid.UUID("0b6f3a52-8c1e-5d4a-a1f0-67656d696e69")
_IGNORED_PREFIXES: Final = ("/", "?", "<session_context>", "<hook_context>")
_MESSAGE_TYPES: Final = frozenset({"user", "gemini", "info", "error", "warning"})

Place = tuple[int, tuple[str | int, ...]]
"""Where a message record is: its line and the keys to it inside the line (``()`` for a
message record that is the whole line)."""


@dataclass
class GeminiHistory(History):
    """A :class:`History` of a Gemini CLI session file, with where each part came from.

    Attributes:
        places: each message record of the replayed map, by id, in the map's order.
        slots: ``id(block)`` -> (the record's id, ``"content"`` | ``"thought"`` |
            ``("call", k)`` | ``("result", k)``): the part of the record it is
            (``k``: the ``toolCalls`` entry).
        bare: ``(line, message index)`` of each model message recorded without any part
            (no content, thoughts or ``toolCalls``): the client writes a model message
            when the model's answer starts and its ``toolCalls`` only once the calls
            have finished, so a message left bare is a turn the client stopped in, and
            a call it ran then is not in the file. The client does not send it.
    """

    places: dict[str, Place] = field(default_factory=dict)
    slots: dict[int, tuple[str, Any]] = field(default_factory=dict)
    bare: list[tuple[int, int]] = field(default_factory=list)


def is_gemini_line(record: Any) -> bool:
    """True for a line only a Gemini CLI session file has: its header, a ``$set`` or
    ``$rewindTo`` record, or a ``gemini`` message record."""
    if not isinstance(record, dict):
        return False
    if isinstance(record.get("sessionId"), str) and isinstance(record.get("projectHash"), str):
        return True
    if isinstance(record.get("$set"), dict) or isinstance(record.get("$rewindTo"), str):
        return True
    return (
        record.get("type") == "gemini"
        and isinstance(record.get("id"), str)
        and "message" not in record
    )


def _parts(content: Any) -> list[Any]:
    """Gemini CLI's ``ensurePartArray``: a string is one text part, a list its items."""
    if isinstance(content, list):
        return [{"text": part} if isinstance(part, str) else part for part in content]
    if isinstance(content, str):
        return [{"text": content}]
    return [content]


def _as_text(parts: list[Any]) -> str:
    """Gemini CLI's verbose ``partToString``, as far as whether a user message counts."""
    out: list[str] = []
    for part in parts:
        if not isinstance(part, dict):
            continue
        if isinstance(part.get("text"), str):
            out.append(part["text"])
        elif isinstance(part.get("functionCall"), dict):
            out.append(f"[Function Call: {part['functionCall'].get('name')}]")
        elif isinstance(part.get("functionResponse"), dict):
            out.append(f"[Function Response: {part['functionResponse'].get('name')}]")
        elif part:
            out.append("[part]")
    return "".join(out)


def _block(part: Any, origin: int) -> Block:
    if isinstance(part, dict):
        call = part.get("functionCall")
        if isinstance(call, dict):
            call_id = call.get("id") if isinstance(call.get("id"), str) else None
            return Block(
                "call",
                part,
                call_id=call_id,
                name=call.get("name"),
                arguments=call.get("args"),
                origin=origin,
            )
        response = part.get("functionResponse")
        if isinstance(response, dict):
            call_id = response.get("id") if isinstance(response.get("id"), str) else None
            return Block("result", part, call_id=call_id, name=response.get("name"), origin=origin)
        if part.get("thought") is True:
            return Block("reasoning", part, origin=origin)
        if isinstance(part.get("text"), str):
            return Block("text", part, origin=origin)
    return Block("other", part, origin=origin)


def _replay(records: Sequence[Any]) -> tuple[dict[str, Place], list[int], str | None]:
    """The client's map of messages (id -> place, in order), the lines holding none of
    them, and the session id of the header."""
    places: dict[str, Place] = {}
    session: str | None = None

    def add(messages: Any, line: int, path: tuple[str | int, ...]) -> None:
        if not isinstance(messages, list):
            return
        for position, message in enumerate(messages):
            if isinstance(message, dict) and isinstance(message.get("id"), str):
                places[message["id"]] = (line, (*path, position))

    for index, record in enumerate(records):
        if not isinstance(record, dict):
            continue
        rewind = record.get("$rewindTo")
        if isinstance(rewind, str):
            if rewind in places:
                ids = list(places)
                for gone in ids[ids.index(rewind) :]:
                    del places[gone]
            else:
                places.clear()
        elif isinstance(record.get("id"), str):
            places[record["id"]] = (index, ())
        elif isinstance(record.get("$set"), dict):
            if isinstance(record["$set"].get("messages"), list):
                places.clear()
                add(record["$set"]["messages"], index, ("$set", "messages"))
        elif isinstance(record.get("sessionId"), str) and isinstance(
            record.get("projectHash"), str
        ):
            session = session or record["sessionId"]
            add(record.get("messages"), index, ("messages",))
    held = {line for line, _ in places.values()}
    skipped = [index for index in range(len(records)) if index not in held]
    return places, skipped, session


def _at(records: Sequence[Any], place: Place) -> Any:
    value = records[place[0]]
    for step in place[1]:
        value = value[step]
    return value


def read(records: Sequence[Any]) -> GeminiHistory:
    """Read session lines (parsed JSON, or a line's text when it is not JSON)."""
    places, skipped, session = _replay(records)
    history = GeminiHistory(
        "gemini-chat", [], list(records), skipped=skipped, session_id=session, places=places
    )
    messages = history.messages
    slots = history.slots

    def push(role: str, blocks: list[Block], origin: int) -> None:
        if messages and messages[-1].role == role:
            messages[-1].blocks.extend(blocks)
        else:
            messages.append(Message(role, blocks, raw=None, origin=origin))

    for message_id, place in places.items():
        record = _at(records, place)
        line = place[0]
        kind = record.get("type")
        if kind == "user":
            parts = _parts(record.get("content"))
            text = _as_text(parts).strip()
            if not text or text.startswith(_IGNORED_PREFIXES):
                continue
            blocks = [_block(part, line) for part in parts]
            for block in blocks:
                slots[id(block)] = (message_id, "content")
            push("user", blocks, line)
        elif kind == "gemini" and not _read_model(record, message_id, line, slots, push):
            history.bare.append((line, len(messages)))
    return history


def _read_model(
    record: dict[str, Any], message_id: str, line: int, slots: dict[int, tuple[str, Any]], push: Any
) -> bool:
    """Read one model message; False when it has no part (the client does not send it)."""
    content = record.get("content")
    parts = _parts(content) if content else []
    blocks = [_block(part, line) for part in parts]
    for block in blocks:
        slots[id(block)] = (message_id, "content")
    tool_calls = record.get("toolCalls")
    entries = tool_calls if isinstance(tool_calls, list) else []
    if not any(block.kind in {"call", "reasoning"} for block in blocks):
        thoughts = record.get("thoughts")
        leading: list[Block] = []
        for thought in thoughts if isinstance(thoughts, list) else []:
            block = Block("reasoning", thought, origin=line)
            slots[id(block)] = (message_id, "thought")
            leading.append(block)
        blocks = leading + blocks
        for position, entry in enumerate(entries):
            if not isinstance(entry, dict):
                continue
            call_id = entry.get("id") if isinstance(entry.get("id"), str) else None
            block = Block(
                "call",
                entry,
                call_id=call_id,
                name=entry.get("name"),
                arguments=entry.get("args"),
                origin=line,
            )
            slots[id(block)] = (message_id, ("call", position))
            blocks.append(block)
    if not blocks:
        return False  # no model turn, and then no turn of its results either
    push("assistant", blocks, line)
    results: list[Block] = []
    for position, entry in enumerate(entries):
        if not isinstance(entry, dict) or not entry.get("result"):
            continue
        result = entry["result"]
        if isinstance(result, str):
            call_id = entry.get("id") if isinstance(entry.get("id"), str) else None
            block = Block("result", result, call_id=call_id, name=entry.get("name"), origin=line)
            slots[id(block)] = (message_id, ("result", position))
            results.append(block)
            continue
        for part in _parts(result):
            block = _block(part, line)
            slots[id(block)] = (message_id, ("result", position))
            results.append(block)
    if results:
        push("user", results, line)
    return True


def write(history: History, messages: list[Message]) -> list[Any]:
    """Return the repaired file's lines (text); see the module docstring."""
    return list(write_lines(history, messages))


def write_lines(history: History, messages: list[Message]) -> Iterator[str]:
    """:func:`write`, one line at a time."""
    assert isinstance(history, GeminiHistory)  # read by this module
    records = history.records
    lines: Sequence[str] = (
        history.lines if history.lines is not None else [dump_line(record) for record in records]
    )
    kept = {id(block) for message in messages for block in message.blocks}
    calls_by_id: dict[str, Block] = {}
    for message in history.messages:
        for block in message.calls():
            if block.call_id is not None:
                calls_by_id.setdefault(block.call_id, block)
    new_results: dict[str, list[Block]] = {}  # call's record id -> synthetic results
    for message in messages:
        for block in message.blocks:
            if block.origin is None and block.kind == "result":
                call = calls_by_id.get(block.call_id or "")
                if call is None or id(call) not in history.slots:
                    continue
                new_results.setdefault(history.slots[id(call)][0], []).append(block)

    edited: dict[str, Any] = {}  # record id -> its new record, or None to remove it
    by_record: dict[str, list[Block]] = {}
    for message in history.messages:
        for block in message.blocks:
            by_record.setdefault(history.slots[id(block)][0], []).append(block)
    for record_id, blocks in by_record.items():
        removed = [block for block in blocks if id(block) not in kept]
        added = new_results.get(record_id, [])
        if not removed and not added:
            continue
        edited[record_id] = _edit(
            _at(records, history.places[record_id]), blocks, kept, added, history.slots
        )

    rewinds = {
        record["$rewindTo"]
        for record in records
        if isinstance(record, dict) and isinstance(record.get("$rewindTo"), str)
    }
    for record_id in [key for key, change in edited.items() if change is None]:
        if record_id in rewinds:  # a rewind to a missing id would clear every message
            emptied = dict(_at(records, history.places[record_id]), content=[])
            edited[record_id] = (emptied, None)  # no part: the client does not send it
    removed_ids = {record_id for record_id, record in edited.items() if record is None}
    by_line: dict[int, list[tuple[tuple[str | int, ...], Any]]] = {}
    extra: dict[int, list[Any]] = {}
    for record_id, change in edited.items():
        line, path = history.places[record_id]
        new_record = None
        if change is not None:
            new_record, follow = change
            if follow is not None:
                extra.setdefault(line, []).append(follow)
        by_line.setdefault(line, []).append((path, new_record))
    for index, text in enumerate(lines):
        record = records[index]
        changes = by_line.get(index)
        if changes is None:
            if not (isinstance(record, dict) and record.get("id") in removed_ids):
                yield text
        else:
            new = _apply(record, changes)
            if new is not None:
                yield dump_line(new)
        for follow in extra.get(index, []):
            yield dump_line(follow)


def _apply(record: Any, changes: list[tuple[tuple[str | int, ...], Any]]) -> Any:
    """The line's record with its changed messages replaced (``None``: removed)."""
    for path, new in changes:
        if not path:
            return new
    out = copy.deepcopy(record)
    drops: dict[tuple[str | int, ...], list[int]] = {}
    for path, new in changes:
        holder = out
        for step in path[:-1]:
            holder = holder[step]
        if new is None:
            drops.setdefault(path[:-1], []).append(int(path[-1]))
        else:
            holder[path[-1]] = new
    for holder_path, positions in drops.items():
        holder = out
        for step in holder_path:
            holder = holder[step]
        for position in sorted(positions, reverse=True):
            del holder[position]
    return out


def _edit(
    record: dict[str, Any],
    blocks: list[Block],
    kept: set[int],
    added: list[Block],
    slots: dict[int, tuple[str, Any]],
) -> Any:
    """The record with the parts the repair removed taken out and its synthetic results
    put in: ``None`` for a user message left empty, else ``(record, new user record or
    None)``."""
    out = dict(record)
    content_blocks = [block for block in blocks if slots[id(block)][1] == "content"]
    if any(id(block) not in kept for block in content_blocks):
        out["content"] = [block.raw for block in content_blocks if id(block) in kept]
        if out.get("type") == "user" and not out["content"]:
            return None
    entries = record.get("toolCalls")
    follow: dict[str, Any] | None = None
    if isinstance(entries, list):
        entries = [dict(entry) if isinstance(entry, dict) else entry for entry in entries]
        gone_calls: set[int] = set()
        results: dict[int, list[Block]] = {}
        for block in blocks:
            slot = slots[id(block)][1]
            if isinstance(slot, tuple) and slot[0] == "call" and id(block) not in kept:
                gone_calls.add(slot[1])
            elif isinstance(slot, tuple) and slot[0] == "result":
                results.setdefault(slot[1], []).append(block)
        for position, held in results.items():
            entry = entries[position]
            if all(id(block) in kept for block in held):
                continue
            still = [block.raw for block in held if id(block) in kept]
            if still and isinstance(entry.get("result"), list):
                entry["result"] = still
            elif not still:
                entry.pop("result", None)
        by_call = {
            entry.get("id"): position
            for position, entry in enumerate(entries)
            if isinstance(entry, dict) and position not in gone_calls
        }
        loose: list[Block] = []
        for block in added:
            slot = by_call.get(block.call_id)
            if slot is None:
                loose.append(block)
                continue
            entries[slot]["result"] = [block.raw]
            entries[slot]["status"] = "error"
        out["toolCalls"] = [
            entry for position, entry in enumerate(entries) if position not in gone_calls
        ]
        added = loose
    if added:
        follow = {
            "id": str(uuid.uuid5(_NAMESPACE, f"agc-synthetic-result:{record.get('id')}")),
            "timestamp": record.get("timestamp"),
            "type": "user",
            "content": [block.raw for block in added],
        }
    return (out, follow)


def synthesize(call: Block, text: str) -> Block | None:
    """A ``functionResponse`` part answering ``call`` with an error ``text``."""
    raw = {"functionResponse": {"id": call.call_id, "name": call.name, "response": {"error": text}}}
    return Block("result", raw, call_id=call.call_id, name=call.name, synthetic=True)


def wrap_results(blocks: list[Block]) -> list[Message]:
    return [Message("user", list(blocks), raw=None, dirty=True)]


SPEC = FormatSpec(
    name="gemini-chat",
    family="gemini",
    line_based=True,
    can_move=False,
    read=read,
    write=write,
    synthesize=synthesize,
    wrap_results=wrap_results,
    write_lines=write_lines,
)
