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
import itertools
import sys
import uuid
from array import array
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final

from agc.resume._formats.jsonl import dump_line
from agc.resume._formats.model import (
    Block,
    BlockKind,
    FormatSpec,
    History,
    Message,
    RawRef,
    SpilledFingerprints,
    SpilledLines,
    resolve,
    texts,
)

__all__ = [
    "SPEC",
    "GeminiHistory",
    "LineReader",
    "is_gemini_line",
    "read",
    "write",
    "write_lines",
]

_NAMESPACE: Final = uuid.UUID("0b6f3a52-8c1e-5d4a-a1f0-67656d696e69")
_IGNORED_PREFIXES: Final = ("/", "?", "<session_context>", "<hook_context>")

Path = tuple[str | int, ...]
Place = int | tuple[int, Path]
"""Where a message record is: its line when the record is the whole line, else its line
and the keys to it inside the line (a message of a ``$set`` or of the header)."""


def _where(place: Place) -> tuple[int, Path]:
    """``(line, keys inside the line)`` of a place."""
    return (place, ()) if isinstance(place, int) else place


Slot = str | tuple[str, int]
"""Which part of its record a block is: ``"content"``, ``"thought"``, ``("call", k)`` or
``("result", k)`` (``k``: the ``toolCalls`` entry)."""


class Part(Block):
    """A :class:`Block` read from a message record, knowing which record and which part
    of it it is (``record_id``, ``slot``: see :data:`Slot`).

    Read line by line, a part holds no value: ``path`` is where it is in line
    ``origin`` of the file's parsed lines (held as ``raw``), and ``raw`` reads it from
    there when asked (``native()`` is then a :class:`RawRef`); read whole, ``path`` is
    ``None`` and ``raw`` the value.
    """

    __slots__ = ("path", "record_id", "slot")

    def __init__(
        self,
        kind: BlockKind,
        raw: Any,
        record_id: str,
        slot: Slot,
        call_id: str | None = None,
        name: str | None = None,
        arguments: Any = None,
        origin: int | None = None,
        path: Path | None = None,
    ) -> None:
        # Block.__init__, inline: a long session makes millions of parts.
        self.kind = kind
        self._raw = raw
        self.call_id = call_id
        self.name = name
        self._arguments = arguments
        self.origin = origin
        self.synthetic = False
        self.record_id = record_id
        self.slot = slot
        self.path = path

    @property
    def raw(self) -> Any:
        return resolve(self.native())

    @raw.setter
    def raw(self, value: Any) -> None:
        if type(self._arguments) is tuple:  # held in the line that stops being ``raw``
            self._arguments = self.arguments
        self._raw = value
        self.path = None

    def native(self) -> Any:
        if self.path is None or self.origin is None:
            return self._raw
        return RawRef(self._raw, self.origin, self.path)

    @property
    def arguments(self) -> Any:
        """The call's arguments; read line by line, held as the keys to them in the line
        (a tuple: a parsed JSON value is never one) and read from the file when asked."""
        return resolve(self.held_arguments())

    @arguments.setter
    def arguments(self, value: Any) -> None:
        self._arguments = value

    def held_arguments(self) -> Any:
        held = self._arguments
        if type(held) is tuple and self.origin is not None:
            return RawRef(self._raw, self.origin, held)
        return held


@dataclass
class GeminiHistory(History):
    """A :class:`History` of a Gemini CLI session file, with where each part came from.

    Attributes:
        places: each message record of the replayed map, by id, in the map's order.
        bare: ``(line, message index)`` of each model message recorded without any part
            (no content, thoughts or ``toolCalls``): the client writes a model message
            when the model's answer starts and its ``toolCalls`` only once the calls
            have finished, so a message left bare is a turn the client stopped in, and
            a call it ran then is not in the file. The client does not send it.
        rewinds: every id a ``$rewindTo`` record names.
        id_hashes: per line, ``hash()`` of the ``id`` of the message record the line is
            (``0`` for any other line): lets a writer find the earlier records of an id
            without parsing every line again (a match is confirmed by parsing the line).
        first_line: the first line of the history's part of the file (a streamed read
            lets go of the lines before, with their messages: see
            :meth:`LineReader.settle`); a writer writes the lines from there on.
        hash_base: the line whose hash is ``id_hashes[0]`` (a read in parts lets go of
            the hashes of the lines before the part it last gave).
        journal: read in parts, what each line from ``first_line`` on did to the map
            (see :class:`Replay`); else empty.
        seen: read in parts, the fingerprints of the message ids of the lines let go of
            (:meth:`LineReader.settle`), else ``None``.
    """

    places: dict[str, Place] = field(default_factory=dict)
    bare: list[tuple[int, int]] = field(default_factory=list)
    rewinds: set[str] = field(default_factory=set)
    id_hashes: Sequence[int] = field(default_factory=list)
    first_line: int = 0
    hash_base: int = 0  # the line of id_hashes[0] (the hashes before are let go of)
    journal: Sequence[Any] = ()
    seen: SpilledFingerprints | None = None


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


def _id_hash(message_id: str) -> int:
    return hash(message_id) or 1


class _Holder:
    """Makes the parts of one line: each holding its value (a file read whole), or its
    place in the line (a file read line by line, which keeps no parsed line: ``raw`` is
    the file's parsed lines and ``path`` the keys to the part, a call's ``arguments`` a
    :class:`RawRef` made when asked); read line by line, call ids and tool names are
    interned: a call's id, its result's and the client's copy of the result (a record of
    its own) are one string, and a session has few tool names."""

    __slots__ = ("line", "paths", "refs")

    def __init__(self, refs: Sequence[Any] | None, line: int, paths: dict[Path, Path]) -> None:
        self.refs = refs
        self.line = line
        self.paths = paths

    def at(self, value: Any, path: Path) -> Any:
        """A value held (``arguments``): itself, or its place in the line (the keys to it,
        a tuple: see :attr:`Part.arguments`)."""
        if self.refs is None:
            return value
        return self.paths.setdefault(path, path)

    def part(self, kind: BlockKind, value: Any, record_id: str, slot: Slot, path: Path) -> Part:
        """A part without a call id or a name (text, reasoning, other)."""
        refs = self.refs
        if refs is None:
            return Part(kind, value, record_id, slot, None, None, None, self.line)
        where = self.paths.setdefault(path, path)
        return Part(kind, refs, record_id, slot, None, None, None, self.line, where)

    def named(
        self,
        kind: BlockKind,
        value: Any,
        named: dict[str, Any],
        record_id: str,
        slot: Slot,
        path: Path,
        arguments: Any = None,
    ) -> Part:
        """A call or a result whose call id and tool name are ``named``'s ``id`` and
        ``name`` (a ``functionCall``/``functionResponse``, or a ``toolCalls`` entry)."""
        call_id = named.get("id")
        if type(call_id) is not str:
            call_id = None
        name = named.get("name")
        refs = self.refs
        if refs is None:
            return Part(kind, value, record_id, slot, call_id, name, arguments, self.line)
        if call_id is not None:
            call_id = sys.intern(call_id)
        if type(name) is str:
            name = sys.intern(name)
        where = self.paths.setdefault(path, path)
        return Part(kind, refs, record_id, slot, call_id, name, arguments, self.line, where)


_SLOTS: dict[tuple[str, int], tuple[str, int]] = {}
_ENTRY_PATHS: dict[int, tuple[Path, Path, Path]] = {}
_OPENS_TURN: Final = frozenset({"call", "reasoning"})


def _entry_paths(base: Path, k: int) -> tuple[Path, Path, Path]:
    """The keys to ``toolCalls`` entry ``k`` of the message at ``base``, to its
    ``args`` and to its ``result`` (made once for a message that is a whole line)."""
    if base:
        where = (*base, "toolCalls", k)
        return where, (*where, "args"), (*where, "result")
    paths = _ENTRY_PATHS.get(k)
    if paths is None:
        paths = _ENTRY_PATHS[k] = (
            ("toolCalls", k),
            ("toolCalls", k, "args"),
            ("toolCalls", k, "result"),
        )
    return paths


def _slot(kind: str, position: int) -> tuple[str, int]:
    key = (kind, position)
    return _SLOTS.setdefault(key, key)


def _block(part: Any, record_id: str, slot: Slot, path: Path, hold: _Holder) -> Part:
    """The block of a stored part (a content part, a result part) at ``path``."""
    if isinstance(part, dict):
        call = part.get("functionCall")
        if isinstance(call, dict):
            args = call.get("args")
            held = None if args is None else hold.at(args, (*path, "functionCall", "args"))
            return hold.named("call", part, call, record_id, slot, path, held)
        response = part.get("functionResponse")
        if isinstance(response, dict):
            return hold.named("result", part, response, record_id, slot, path)
        if part.get("thought") is True:
            return hold.part("reasoning", part, record_id, slot, path)
        if isinstance(part.get("text"), str):
            return hold.part("text", part, record_id, slot, path)
    return hold.part("other", part, record_id, slot, path)


def _content_blocks(content: Any, record_id: str, base: Path, hold: _Holder) -> list[Block]:
    """The blocks of a message's ``content`` (:func:`_parts`, each at its place)."""
    where = (*base, "content")
    if isinstance(content, list):
        return [
            _block(
                {"text": part} if isinstance(part, str) else part,
                record_id,
                "content",
                (*where, position),
                hold,
            )
            for position, part in enumerate(content)
        ]
    part = {"text": content} if isinstance(content, str) else content
    return [_block(part, record_id, "content", where, hold)]


def _user_turn(content: Any) -> bool:
    """Whether a ``user`` message is sent (Gemini CLI: its text, trimmed, is not empty and
    starts with none of the ignored prefixes). A first part that is a call or a result
    starts the text with ``[Function …``: sent, without making the text."""
    if isinstance(content, list) and content:
        first = content[0]
        if (
            isinstance(first, dict)
            and "text" not in first
            and (
                isinstance(first.get("functionResponse"), dict)
                or isinstance(first.get("functionCall"), dict)
            )
        ):
            return True
    text = _as_text(_parts(content)).strip()
    return bool(text) and not text.startswith(_IGNORED_PREFIXES)


class _Entry:
    """One message of the replayed map: its place and the messages of the view the
    client makes of it (``first``, then ``second``: a model turn and the turn of its
    results; ``None`` where there is none, both for a message the client does not send);
    ``bare`` for a model message without any part; ``start``: the line of the first
    record of its id since it entered the map."""

    __slots__ = ("bare", "first", "place", "second", "start")

    def __init__(
        self, place: Place, first: Message | None, second: Message | None, bare: bool
    ) -> None:
        self.place = place
        self.first = first
        self.second = second
        self.bare = bare
        self.start = place if isinstance(place, int) else place[0]


def _entry(record: dict[str, Any], record_id: str, place: Place, hold: _Holder) -> _Entry:
    kind = record.get("type")
    line, base = (place, ()) if isinstance(place, int) else place  # _where, inline: per record
    if kind == "user":
        content = record.get("content")
        if not _user_turn(content):
            return _Entry(place, None, None, False)
        blocks = _content_blocks(content, record_id, base, hold)
        return _Entry(place, Message("user", blocks, None, line), None, False)
    if kind != "gemini":
        return _Entry(place, None, None, False)
    content = record.get("content")
    tool_calls = record.get("toolCalls")
    thoughts = record.get("thoughts")
    if not content and not tool_calls and not thoughts:
        return _Entry(place, None, None, True)  # written when the answer starts: no part
    blocks = _content_blocks(content, record_id, base, hold) if content else []
    entries = tool_calls if isinstance(tool_calls, list) else ()
    if not blocks or not any(block.kind in _OPENS_TURN for block in blocks):
        if thoughts and isinstance(thoughts, list):
            blocks = [
                hold.part("reasoning", thought, record_id, "thought", (*base, "thoughts", k))
                for k, thought in enumerate(thoughts)
            ] + blocks
        for k, entry in enumerate(entries):
            if not isinstance(entry, dict):
                continue
            args = entry.get("args")
            where, args_path, _ = _entry_paths(base, k)
            held = None if args is None else hold.at(args, args_path)
            blocks.append(
                hold.named("call", entry, entry, record_id, _slot("call", k), where, held)
            )
    if not blocks:
        return _Entry(place, None, None, True)  # no model turn, and then no turn of its results
    results: list[Block] = []
    for k, entry in enumerate(entries):
        if not isinstance(entry, dict) or not entry.get("result"):
            continue
        result = entry["result"]
        where = _entry_paths(base, k)[2]
        slot = _slot("result", k)
        if isinstance(result, str):
            results.append(hold.named("result", result, entry, record_id, slot, where))
        elif isinstance(result, list):
            for position, part in enumerate(result):
                value = {"text": part} if isinstance(part, str) else part
                results.append(_block(value, record_id, slot, (*where, position), hold))
        else:
            results.append(_block(result, record_id, slot, where, hold))
    model = Message("assistant", blocks, None, line)
    if not results:
        return _Entry(place, model, None, False)
    return _Entry(place, model, Message("user", results, None, line), False)


class LineReader:
    """Replays session lines one at a time, in order, as the client does when it resumes
    (Gemini CLI's ``loadConversationRecord``): the map of messages by id, each held as
    the turns it makes (roles, block kinds, call ids, tool names), never as its record.

    What is held is bounded by the map: the messages a later record could still replace
    and a ``$rewindTo`` could still reach back to are exactly the messages of the map, so
    memory grows with the number of messages the session holds when it is resumed, not
    with the bytes of the file (a record replaced, rewound or cleared is let go). A read
    in parts also lets go of the first messages of the map (:meth:`settle`), keeping
    fingerprints of their ids to tell when a later record reaches back to them
    (:attr:`reach_back`).
    """

    __slots__ = (
        "_hold",
        "_paths",
        "boundary",
        "cut",
        "entries",
        "hash_base",
        "id_hashes",
        "journal",
        "reach_back",
        "rewinds",
        "seen",
        "session_id",
        "unread",
    )

    def __init__(self) -> None:
        self.entries: dict[str, _Entry] = {}
        self.unread = SpilledLines()  # lines that are not JSON objects
        self.rewinds: set[str] = set()
        self.session_id: str | None = None
        self.id_hashes: array[int] = array("q")
        self.hash_base = 0  # the line of id_hashes[0]
        self._paths: dict[Path, Path] = {}
        # Let go of (:meth:`settle`): the lines before ``cut`` and the messages of the
        # map they held; ``seen``, the fingerprints of every message id on those lines.
        self._hold = _Holder(None, 0, self._paths)
        self.cut = 0
        self.seen: SpilledFingerprints | None = None
        self.reach_back = False  # a record after ``cut`` names a message before it
        # The first message of the map after ``cut``: a model turn when the cut was made
        # (the user turn before it ends there). A record that removes it, or makes it
        # anything but a model turn, joins the turns on both sides of the cut.
        self.boundary: str | None = None
        # Read in parts: per line from ``cut`` on, what it did to the map (see Replay).
        self.journal: list[Any] | None = None

    def feed(self, index: int, record: Any, refs: Sequence[Any] | None = None) -> None:
        """Read line ``index`` (every line, in order). ``refs``: the file's parsed lines,
        to hold each part as a :class:`RawRef` to its line instead of the value."""
        hashes = self.id_hashes
        message_id = record.get("id") if isinstance(record, dict) else None
        if isinstance(message_id, str) and not isinstance(record.get("$rewindTo"), str):
            hashes.append(hash(message_id) or 1)  # _id_hash, inline: once per line
            hold = self._hold
            if hold.refs is not refs:
                hold = self._hold = _Holder(refs, index, self._paths)
            hold.line = index  # one holder for the lines: a part keeps its line, not it
            entry = _entry(record, message_id, index, hold)
            if self.journal is not None:
                self.journal.append((message_id, entry))
            # self.put, inline: once per message record.
            entries = self.entries
            earlier = entries.get(message_id)
            if earlier is not None:
                entry.start = earlier.start
                if message_id == self.boundary and (
                    entry.first is None or entry.first.role != "assistant"
                ):
                    self.reach_back = True  # the turn after the cut is no model turn
            entries[message_id] = entry
            return
        hashes.append(0)
        if self.journal is not None:
            self.journal.append(record if _changes_map(record) else None)
        if not isinstance(record, dict):
            self.unread.append(index)  # the client skips it too: a warning says so
            return
        entries = self.entries
        rewind = record.get("$rewindTo")
        if isinstance(rewind, str):
            self.rewinds.add(rewind)
            if self.seen is not None and (
                rewind not in entries or rewind == self.boundary or _id_hash(rewind) in self.seen
            ):
                self.reach_back = True  # a message let go of, or the turn after the cut, removed
            if rewind in entries:
                ids = list(entries)
                for gone in ids[ids.index(rewind) :]:
                    del entries[gone]
            else:
                entries.clear()
            return
        update = record.get("$set")
        if isinstance(update, dict):
            if isinstance(update.get("messages"), list):
                if self.seen is not None:
                    self.reach_back = True  # every message replaced
                entries.clear()
                self._add(update["messages"], ("$set", "messages"), refs, index)
        elif isinstance(record.get("sessionId"), str) and isinstance(
            record.get("projectHash"), str
        ):
            if self.seen is not None and (self.session_id is None or record.get("messages")):
                # the session's identity told only now, or messages it may replace
                self.reach_back = True
            self.session_id = self.session_id or record["sessionId"]
            self._add(record.get("messages"), ("messages",), refs, index)

    def put(self, message_id: str, entry: _Entry) -> None:
        """Put a message record's entry in the map (in the place of an earlier one of
        its id, whose first line it keeps)."""
        entries = self.entries
        earlier = entries.get(message_id)
        if earlier is not None:
            entry.start = earlier.start
            if message_id == self.boundary and (
                entry.first is None or entry.first.role != "assistant"
            ):
                self.reach_back = True  # the turn after the cut is no model turn
        entries[message_id] = entry

    def _add(self, messages: Any, path: Path, refs: Sequence[Any] | None, line: int) -> None:
        if not isinstance(messages, list):
            return
        hold = _Holder(refs, line, self._paths)
        entries = self.entries
        for position, message in enumerate(messages):
            if isinstance(message, dict) and isinstance(message.get("id"), str):
                message_id = message["id"]
                place = (hold.line, (*path, position))
                entry = _entry(message, message_id, place, hold)
                earlier = entries.get(message_id)
                if earlier is not None:
                    entry.start = earlier.start
                entries[message_id] = entry

    def settle_point(self) -> tuple[int, int] | None:
        """Where the map can be cut: ``(count, line)`` such that its first ``count``
        messages can be read, checked and repaired apart from the rest. Their records
        are all before ``line`` and those of the rest from ``line`` on; the last message
        the first ones make in the view is the user's and the next one the model's (the
        API pairs a model turn only with the turn after it, and turns of one role are
        one message). The largest such ``count`` below the map's size, else ``None``."""
        entries = list(self.entries.values())
        count = len(entries)
        if count < 2:
            return None
        starts = [0] * count  # the first line of the messages from here on
        low = 1 << 62
        for position in range(count - 1, -1, -1):
            low = min(low, entries[position].start)
            starts[position] = low
        best: tuple[int, int] | None = None
        high = -1  # the last line of a record of the messages so far
        role: str | None = None  # the role of the last message of the view so far
        for position in range(count - 1):
            entry = entries[position]
            line = entry.place if isinstance(entry.place, int) else entry.place[0]
            high = max(high, line)
            last = entry.second or entry.first
            if last is not None:
                role = last.role
            following = entries[position + 1].first
            if (
                role == "user"
                and following is not None
                and following.role == "assistant"
                and high < starts[position + 1]
            ):
                best = (position + 1, starts[position + 1])
        return best

    def settle(self, count: int, line: int, offset: int) -> GeminiHistory:
        """Let go of the first ``count`` messages of the map and the lines before
        ``line`` (a :meth:`settle_point`): returns the history they make (its view
        numbered from ``offset``, the messages let go of before). A later record that
        names one of those messages, or any message of those lines, sets
        :attr:`reach_back` (the replay then differs: read the file whole)."""
        entries = self.entries
        taken: dict[str, _Entry] = {}
        for message_id in list(itertools.islice(entries, count)):
            taken[message_id] = entries.pop(message_id)
        first = self.cut
        self._see(line)
        self.boundary = next(iter(entries), None)
        journal: list[Any] = []
        if self.journal is not None:
            journal = self.journal[: line - first]
            del self.journal[: line - first]
        history = self._history(taken, offset, first, journal, ())
        assert self.seen is not None  # made by _see
        for message_id, place in history.places.items():
            if not isinstance(place, int):  # a message of a `$set` or of the header
                self.seen.add(_id_hash(message_id))
        return history

    def _history(
        self,
        entries: dict[str, _Entry],
        offset: int,
        first: int,
        journal: Sequence[Any],
        records: Sequence[Any],
        **file: Any,
    ) -> GeminiHistory:
        """The history of the map ``entries`` (its view numbered from ``offset``), whose
        lines start at ``first``; ``file``: the history's ``lines``, ``final_newline``
        and ``skipped``."""
        messages: list[Message] = []
        bare: list[tuple[int, int]] = []
        places = _view(entries, messages, bare, offset)
        return GeminiHistory(
            "gemini-chat",
            messages,
            records,
            session_id=self.session_id,
            places=places,
            bare=bare,
            rewinds=self.rewinds,
            id_hashes=self.id_hashes,
            first_line=first,
            hash_base=self.hash_base,
            journal=journal,
            seen=self.seen,
            unread=self.unread,
            **file,
        )

    def _see(self, line: int) -> None:
        """Hold the fingerprints of the message ids of the lines from :attr:`cut` to
        ``line`` and let go of them; set
        :attr:`reach_back` when one of them is an id of a line before."""
        seen = self.seen if self.seen is not None else SpilledFingerprints()
        hashes, base = self.id_hashes, self.hash_base
        # The part given before is written: the hashes of its lines are let go of.
        del hashes[: self.cut - base]
        self.hash_base = base = self.cut
        batch = set(hashes[: line - base])
        batch.discard(0)
        if seen.add_all(batch):
            self.reach_back = True
        self.seen = seen
        self.cut = line

    def finish(self, lines: int) -> None:
        """Called after the last line when anything was let go of: sets
        :attr:`reach_back` when a line after the last cut names a message before it, or
        a line of a part named a message of an earlier one (found late: see
        :class:`~agc.resume._formats.model.SpilledFingerprints`)."""
        if self.seen is not None:
            seen = self.seen
            batch = set(self.id_hashes[self.cut - self.hash_base : lines - self.hash_base])
            if any(key in seen for key in batch if key) or seen.settle():
                self.reach_back = True

    def history(
        self,
        records: Sequence[Any],
        *,
        lines: Sequence[str] | None = None,
        final_newline: bool = True,
        offset: int = 0,
    ) -> GeminiHistory:
        """The history of the lines fed (``records``: those lines, parsed); ``offset``:
        the messages of the view let go of before (:meth:`settle`)."""
        first = self.cut  # the lines before were let go of (:meth:`settle`)
        skipped: array[int] = array("q")
        history = self._history(
            self.entries,
            offset,
            first,
            self.journal or (),
            records,
            lines=lines,
            final_newline=final_newline,
            skipped=skipped,
        )
        self.entries = {}
        held = bytearray(len(records) - first)  # 1 at the line of each message of the map
        for place in history.places.values():
            held[_where(place)[0] - first] = 1
        skipped.extend(first + index for index, kept in enumerate(held) if not kept)
        return history


def _view(
    entries: dict[str, Any], messages: list[Message], bare: list[tuple[int, int]], offset: int
) -> dict[str, Any]:
    """Make the view of the map ``entries`` into ``messages`` (turns of one role joined)
    and ``bare`` (``(line, message index)``, numbered from ``offset``); the map becomes
    the places by id: each entry is let go of as it is read (a long session's map is
    most of what is held), and no second map is made."""
    places: dict[str, Any] = entries
    own = False  # messages[-1] is an entry's own message (a journal may hold it: kept)
    last_role = messages[-1].role if messages else None  # the role of messages[-1]
    for message_id, entry in places.items():
        places[message_id] = entry.place
        if entry.bare:
            bare.append((_where(entry.place)[0], len(messages) + offset))
        for message in (entry.first, entry.second):
            if message is None:
                continue
            if message.role == last_role:
                if own:
                    last = messages[-1]
                    messages[-1] = Message(last.role, list(last.blocks), None, last.origin)
                    own = False
                messages[-1].blocks.extend(message.blocks)
            else:
                messages.append(message)
                last_role = message.role
                own = True
    return places


def _changes_map(record: Any) -> bool:
    """Whether a line that is no message record changes the map (a ``$rewindTo``, a
    ``$set`` of every message, a header holding messages), as :meth:`LineReader.feed`
    reads it; a header's identity alone changes no message."""
    if not isinstance(record, dict):
        return False
    if isinstance(record.get("$rewindTo"), str):
        return True
    update = record.get("$set")
    if isinstance(update, dict):
        return isinstance(update.get("messages"), list)
    return (
        isinstance(record.get("sessionId"), str)
        and isinstance(record.get("projectHash"), str)
        and isinstance(record.get("messages"), list)
    )


def _moved(entry: _Entry, line: int) -> _Entry:
    """A whole-line message record's entry, read again at ``line`` (its messages new,
    their blocks shared: a view never changes an entry's messages)."""
    first, second = entry.first, entry.second
    return _Entry(
        line,
        None if first is None else Message(first.role, first.blocks, None, line),
        None if second is None else Message(second.role, second.blocks, None, line),
        entry.bare,
    )


class Replay:
    """The view the client makes of the lines a writer writes for one part of a session
    read in parts (:func:`write_lines` of a part's history), line by line as they are
    written, numbered from ``line``. A line written as it was read is replayed from what
    the read noted of it (``journal``: a message record's entry, or the record of a line
    that changes the map), not parsed again; a new line is parsed (``parse``: as the
    read parses a line) and read. The part's records are all among its lines (its map
    pairs with nothing before or after), so the replay starts from an empty map.

    ``apart``: False once a new line holds a message id of another part (one the read
    let go of, ``history.seen``: the new id is added there, so that a later line of the
    read holding it reaches back): the part's view is then not the output's."""

    __slots__ = ("apart", "base", "journal", "line", "parse", "places", "reader", "seen")

    def __init__(self, history: GeminiHistory, line: int, parse: Callable[[str], Any]) -> None:
        self.journal = history.journal
        self.base = history.first_line
        self.places = history.places
        self.seen = history.seen
        self.reader = LineReader()
        self.line = line
        self.parse = parse
        self.apart = True

    def feed(self, line: int | range | str) -> None:
        """Replay an output line: the index of an input line written as it is (or a
        range of them: each in turn), or a new line's text."""
        if type(line) is range:  # the int case below, for each line of the run
            journal, base, reader, at = self.journal, self.base, self.reader, self.line
            for index in line:
                noted = journal[index - base]
                if noted is not None:
                    if type(noted) is tuple:
                        reader.put(noted[0], _moved(noted[1], at))
                    else:
                        reader.feed(at, noted)
                at += 1
            self.line = at
            return
        at = self.line
        self.line = at + 1
        reader = self.reader
        if type(line) is int:
            noted = self.journal[line - self.base]
            if noted is None:
                return
            if type(noted) is tuple:
                reader.put(noted[0], _moved(noted[1], at))
                return
            reader.feed(at, noted)
            return
        assert isinstance(line, str)
        record = self.parse(line)
        reader.feed(at, record)
        message_id = record.get("id") if isinstance(record, dict) else None
        if (
            self.seen is not None
            and isinstance(message_id, str)
            and message_id not in self.places
            and self.seen.add(_id_hash(message_id))
        ):
            self.apart = False

    def history(self, offset: int) -> GeminiHistory:
        """The replayed view (numbered from ``offset``: the output's messages before);
        its ``bare`` name the output's lines. It holds no records."""
        messages: list[Message] = []
        bare: list[tuple[int, int]] = []
        _view(self.reader.entries, messages, bare, offset)
        self.reader.entries = {}
        return GeminiHistory("gemini-chat", messages, (), bare=bare)


def read(records: Sequence[Any]) -> GeminiHistory:
    """Read session lines (parsed JSON, or a line's text when it is not JSON)."""
    reader = LineReader()
    for index, record in enumerate(records):
        reader.feed(index, record)
    return reader.history(records)


def write(history: History, messages: list[Message]) -> list[Any]:
    """Return the repaired file's lines (text); see the module docstring."""
    if history.lines is None:
        history = replace(history, lines=[dump_line(record) for record in history.records])
    return texts(history, write_lines(history, messages))


def write_lines(history: History, messages: list[Message]) -> Iterator[str | int | range]:
    """:func:`write`, one line at a time, from line ``first_line`` on: a new line's
    text, or the index of a line written as it is (a run of them as a range). Only the
    lines that change are parsed again (and a line holding an earlier record of a
    removed message: found by its id's hash, then confirmed)."""
    assert isinstance(history, GeminiHistory)  # read by this module
    records = history.records
    assert history.lines is not None  # a session file's lines
    lines: Sequence[str] = history.lines
    first = history.first_line
    kept = {id(block) for message in messages for block in message.blocks}
    synthetic = [
        block
        for message in messages
        for block in message.blocks
        if block.origin is None and block.kind == "result"
    ]
    new_results: dict[str, list[Block]] = {}  # call's record id -> synthetic results
    if synthetic:
        calls_by_id: dict[str, Block] = {}
        for message in history.messages:
            for block in message.calls():
                if block.call_id is not None:
                    calls_by_id.setdefault(block.call_id, block)
        for block in synthetic:
            call = calls_by_id.get(block.call_id or "")
            if isinstance(call, Part):
                new_results.setdefault(call.record_id, []).append(block)
        del calls_by_id
    # Only the records the repair changes are gathered (a long session has many).
    changed = set(new_results)
    for message in history.messages:
        for block in message.blocks:
            if id(block) not in kept:
                assert isinstance(block, Part)  # every block of the view was read here
                changed.add(block.record_id)
    by_record: dict[str, list[Part]] = {}
    user_records: set[str] = set()
    for message in history.messages:
        for block in message.blocks:
            assert isinstance(block, Part)
            if block.record_id not in changed:
                continue
            by_record.setdefault(block.record_id, []).append(block)
            if message.role == "user" and block.slot == "content":
                user_records.add(block.record_id)
    plans: dict[str, _Plan] = {}
    for record_id, blocks in by_record.items():
        gone = any(id(block) not in kept for block in blocks)
        added = new_results.get(record_id, [])
        if not gone and not added:
            continue
        empty = record_id in user_records and all(id(block) not in kept for block in blocks)
        plans[record_id] = _Plan(
            blocks, added, empty, emptied=empty and record_id in history.rewinds
        )
    # A user message left empty goes with every record of its id, unless a rewind names
    # it: a rewind to a missing id would clear every message, so it stays without parts.
    removed = {key for key, plan in plans.items() if plan.gone}
    removed_hashes = {_id_hash(key) for key in removed}
    by_line: dict[int, list[tuple[Path, _Plan]]] = {}
    dropped = bytearray(len(lines) - first)  # 1: a whole-line record removed (nothing to read)
    for record_id, plan in plans.items():
        line, path = _where(history.places[record_id])
        if not path and plan.gone:
            dropped[line - first] = 1
        else:
            by_line.setdefault(line, []).append((path, plan))
    # Held while the lines are written: the plans of the lines to edit, nothing else.
    del plans, by_record, user_records, changed, synthetic, new_results
    kept = {
        id(block)
        for changes in by_line.values()
        for _, plan in changes
        for block in plan.blocks
        if id(block) in kept
    }
    hashes, hash_base = history.id_hashes, history.hash_base
    stop = len(lines)
    # The lines not written as they are, or maybe not: removed, edited, or holding an
    # id of a removed message (by its hash, confirmed by parsing the line); the lines
    # between are written as they are.
    special = set(by_line)
    found = dropped.find(1)
    while found >= 0:
        special.add(first + found)
        found = dropped.find(1, found + 1)
    if removed_hashes:
        low, high = max(first, hash_base), min(stop, hash_base + len(hashes))
        special.update(
            hash_base + at
            for at, key in enumerate(hashes[low - hash_base : high - hash_base], low - hash_base)
            if key in removed_hashes
        )
    index = first
    for mark in sorted(line for line in special if first <= line < stop):
        if index < mark:
            yield range(index, mark)
        index = mark + 1
        if dropped[mark - first]:
            continue
        changes = by_line.get(mark)
        if changes is None:  # its hash is one of a removed message's id
            record = records[mark]
            if not (isinstance(record, dict) and record.get("id") in removed):
                yield mark
            continue
        new, follows = _apply(records[mark], changes, kept)
        if new is not None:
            yield dump_line(new)
        for follow in follows:
            yield dump_line(follow)
    if index < stop:
        yield range(index, stop)


class _Plan:
    """What changes in one message record: its blocks (as read), the synthetic results
    its calls get, whether it is a user message left without any part, and whether it
    is then kept without parts (``emptied``) rather than removed."""

    __slots__ = ("added", "blocks", "emptied", "empty")

    def __init__(self, blocks: list[Part], added: list[Block], empty: bool, *, emptied: bool):
        self.blocks = blocks
        self.added = added
        self.empty = empty
        self.emptied = emptied

    @property
    def gone(self) -> bool:
        """The record is removed (a user message left empty that no rewind names)."""
        return self.empty and not self.emptied


def _apply(record: Any, changes: list[tuple[Path, _Plan]], kept: set[int]) -> tuple[Any, list[Any]]:
    """The line's record with its changed messages replaced (``None``: removed), and the
    new records to write after it."""
    follows: list[Any] = []
    for path, plan in changes:
        if not path:
            new, follow = _edit(record, plan, kept)
            if follow is not None:
                follows.append(follow)
            return new, follows
    out = copy.deepcopy(record)
    drops: dict[Path, list[int]] = {}
    for path, plan in changes:
        holder = out
        for step in path[:-1]:
            holder = holder[step]
        new, follow = _edit(holder[path[-1]], plan, kept)
        if follow is not None:
            follows.append(follow)
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
    return out, follows


def _edit(record: dict[str, Any], plan: _Plan, kept: set[int]) -> tuple[Any, Any]:
    """The message record with the parts the repair removed taken out and its synthetic
    results put in: ``(None, None)`` for a user message left empty (``(record without
    parts, None)`` when a rewind names it), else ``(record, new user record or None)``.
    Parts are matched to the blocks read from them by position (the reader's rule)."""
    if plan.empty:
        return (dict(record, content=[]), None) if plan.emptied else (None, None)
    out = dict(record)
    blocks = plan.blocks
    content_blocks = [block for block in blocks if block.slot == "content"]
    if any(id(block) not in kept for block in content_blocks):
        parts = _parts(record.get("content"))
        out["content"] = [
            part for part, block in zip(parts, content_blocks, strict=True) if id(block) in kept
        ]
    entries = record.get("toolCalls")
    added = plan.added
    if isinstance(entries, list):
        entries = [dict(entry) if isinstance(entry, dict) else entry for entry in entries]
        gone_calls: set[int] = set()
        results: dict[int, list[Part]] = {}
        for block in blocks:
            slot = block.slot
            if isinstance(slot, tuple) and slot[0] == "call" and id(block) not in kept:
                gone_calls.add(slot[1])
            elif isinstance(slot, tuple) and slot[0] == "result":
                results.setdefault(slot[1], []).append(block)
        for position, held in results.items():
            entry = entries[position]
            if all(id(block) in kept for block in held):
                continue
            result = entry.get("result")
            still = (
                [
                    part
                    for part, block in zip(_parts(result), held, strict=True)
                    if id(block) in kept
                ]
                if not isinstance(result, str)
                else []
            )
            if still and isinstance(result, list):
                entry["result"] = still
            elif not still:
                entry.pop("result", None)
        by_call = {
            entry.get("id"): position
            for position, entry in enumerate(entries)
            if isinstance(entry, dict) and position not in gone_calls
        }
        loose: list[Block] = []
        for new in added:
            answered = by_call.get(new.call_id)
            if answered is None:
                loose.append(new)
                continue
            entries[answered]["result"] = [new.raw]
            entries[answered]["status"] = "error"
        out["toolCalls"] = [
            entry for position, entry in enumerate(entries) if position not in gone_calls
        ]
        added = loose
    follow: dict[str, Any] | None = None
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
