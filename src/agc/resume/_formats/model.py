"""The format-neutral view of a tool-call history that validation and repair work on.

Every format reader turns its native records (messages, items or session-file lines)
into a list of :class:`Message` objects made of :class:`Block` objects, each keeping
the native object it came from (``raw``) and the index of its source record
(``origin``). Writers rebuild native records from the view, reusing ``raw`` untouched
wherever the repair did not change anything, so an unchanged history is written back
byte for byte.
"""

from __future__ import annotations

import os
import pickle
from array import array
from collections.abc import Callable, Container, Iterable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from agc._core import json as strict_json
from agc.errors import JsonInvalidError

__all__ = [
    "FORMAT_NAMES",
    "MAX_SNAPSHOT_BYTES",
    "Block",
    "BlockKind",
    "CallIdSet",
    "Family",
    "FormatName",
    "FormatSpec",
    "History",
    "Message",
    "RawRef",
    "Settled",
    "SpilledCallIds",
    "SpilledLines",
    "SpilledMap",
    "arguments_are_json",
    "foreign_tool_marker",
    "resolve",
    "texts",
]

FormatName = Literal[
    "openai-chat", "anthropic", "openai-responses", "codex-rollout", "claude-code", "gemini-chat"
]
FORMAT_NAMES: Final[tuple[FormatName, ...]] = (
    "openai-chat",
    "anthropic",
    "openai-responses",
    "codex-rollout",
    "claude-code",
    "gemini-chat",
)

MAX_SNAPSHOT_BYTES: Final = 512 * 1024 * 1024
"""Largest snapshot, or history read whole, that agc reads (bytes), compressed or not;
guards against zstd bombs too."""

Family = Literal["chat", "anthropic", "responses", "gemini"]
"""Which provider's pairing rules apply: Chat Completions, Messages, Responses, or the
Gemini API's ``generateContent``."""

BlockKind = Literal["call", "result", "text", "reasoning", "other"]


class RawRef:
    """Where a native object of a history read from a file is, instead of the object.

    A long history read by :func:`~agc.resume._formats.detect.load_history` keeps its
    records as the file's text (see :mod:`.lean`), not as parsed objects (which take
    several times the file's size); a message's ``raw`` then names record ``index`` and
    the ``path`` of keys and list positions inside it, and is parsed again when read.
    """

    __slots__ = ("index", "path", "records")

    def __init__(self, records: Sequence[Any], index: int, path: tuple[str | int, ...]) -> None:
        self.records = records
        self.index = index
        self.path = path

    def resolve(self) -> Any:
        """The native object (a fresh copy at each call)."""
        value = self.records[self.index]
        for step in self.path:
            value = value[step]
        return value


def resolve(raw: Any) -> Any:
    """``raw`` itself, or the object a :class:`RawRef` names."""
    return raw.resolve() if type(raw) is RawRef else raw


class _HoldsRaw:
    """The ``raw`` attribute of :class:`Block` and :class:`Message`: held as given (an
    object or a :class:`RawRef`), parsed only when read."""

    __slots__ = ("_raw",)

    @property
    def raw(self) -> Any:
        return resolve(self._raw)

    @raw.setter
    def raw(self, value: Any) -> None:
        self._raw = value

    def native(self) -> Any:
        """``raw`` as held: the object, or its :class:`RawRef` (not parsed)."""
        return self._raw


class Block(_HoldsRaw):
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

    Compared by identity; ``__slots__``: a long history holds millions of them.
    """

    __slots__ = ("_arguments", "call_id", "kind", "name", "origin", "synthetic")

    def __init__(
        self,
        kind: BlockKind,
        raw: Any,
        call_id: str | None = None,
        name: str | None = None,
        arguments: Any = None,
        origin: int | None = None,
        synthetic: bool = False,
    ) -> None:
        self.kind: BlockKind = kind
        self._raw = raw
        self.call_id = call_id
        self.name = name
        self._arguments = arguments
        self.origin = origin
        self.synthetic = synthetic

    @property
    def arguments(self) -> Any:
        """The call's arguments as stored (a :class:`RawRef` held is parsed when read)."""
        return resolve(self._arguments)

    @arguments.setter
    def arguments(self, value: Any) -> None:
        self._arguments = value

    def held_arguments(self) -> Any:
        """``arguments`` as held: the value, or its :class:`RawRef` (not parsed)."""
        return self._arguments

    def __repr__(self) -> str:
        return (
            f"Block({self.kind!r}, call_id={self.call_id!r}, name={self.name!r}, "
            f"origin={self.origin!r}, synthetic={self.synthetic!r})"
        )


class Message(_HoldsRaw):
    """One message of the neutral view.

    Attributes:
        role: ``user``, ``assistant``, ``tool``, ``system``, ``developer`` …
        blocks: its parts, in order.
        raw: the native message (``None`` when it spans several records or is new).
        origin: index of its first native record (``None`` when new).
        dirty: True when the repair changed it, so the writer must rebuild it.

    Compared by identity; ``__slots__``, as :class:`Block`.
    """

    __slots__ = ("blocks", "dirty", "origin", "role")

    def __init__(
        self,
        role: str,
        blocks: list[Block],
        raw: Any = None,
        origin: int | None = None,
        dirty: bool = False,
    ) -> None:
        self.role = role
        self.blocks = blocks
        self._raw = raw
        self.origin = origin
        self.dirty = dirty

    def calls(self) -> list[Block]:
        return [block for block in self.blocks if block.kind == "call"]

    def results(self) -> list[Block]:
        return [block for block in self.blocks if block.kind == "result"]

    def __repr__(self) -> str:
        return f"Message({self.role!r}, {self.blocks!r}, origin={self.origin!r})"


class CallIdSet:
    """A set of call ids that takes a few bytes per id, for the calls of a long history
    that a streamed read let go of: membership is exact, the ids themselves are not
    held.

    Each id is held as its 64-bit ``hash()`` (keyed per process, see
    :data:`sys.hash_info`) beside the line it was read from, in an open-addressing
    table of two arrays (12 bytes a slot, at most two thirds full). A fingerprint match
    is confirmed by ``confirm(line, call_id)`` (the line read again: does it hold a call
    with that id?), so two ids that share a fingerprint are never taken for one; without
    ``confirm`` (or for a line ``-1``, unknown, or past 2**32) the ids are held as they
    are.
    """

    __slots__ = (
        "_base",
        "_confirm",
        "_confirmed",
        "_exact",
        "_keys",
        "_lines",
        "_mask",
        "_size",
    )

    def __init__(
        self,
        confirm: Callable[[int, str], bool] | None = None,
        *,
        base: Container[str] = (),
    ) -> None:
        self._confirm = confirm
        self._base = base  # ids held before these (of another file), also members
        self._exact: set[str] = set()  # ids whose line is unknown, or with no confirm
        # The ids confirmed last (a line read again each): an id used again and again
        # is read once, not at each use. Emptied when full: bounded.
        self._confirmed: set[str] = set()
        self._keys = array("q", bytes(8 * _FIRST_SLOTS))  # 0: empty
        self._lines = array("I", bytes(4 * _FIRST_SLOTS))
        self._mask = _FIRST_SLOTS - 1
        self._size = 0

    def __len__(self) -> int:
        """How many ids were added (an id added twice counts twice)."""
        return self._size + len(self._exact)

    def add(self, call_id: str, line: int) -> None:
        """Hold ``call_id``, read from line ``line`` (0-based; ``-1``: unknown)."""
        if self._confirm is None or not 0 <= line < _MAX_LINE:
            self._exact.add(call_id)
            return
        if 3 * (self._size + 1) > 2 * (self._mask + 1):
            self._grow()
        self._put(self._key(call_id), line)
        self._size += 1

    def _key(self, call_id: str) -> int:
        """The fingerprint of ``call_id``: never 0 (an empty slot)."""
        return hash(call_id) or 1

    def _put(self, key: int, line: int) -> None:
        keys, mask = self._keys, self._mask
        slot = key & mask
        while keys[slot]:
            slot = (slot + 1) & mask
        keys[slot] = key
        self._lines[slot] = line

    def _grow(self) -> None:
        keys, lines = self._keys, self._lines
        slots = 2 * (self._mask + 1)
        self._keys = array("q", bytes(8 * slots))
        self._lines = array("I", bytes(4 * slots))
        self._mask = slots - 1
        for key, line in zip(keys, lines, strict=True):
            if key:
                self._put(key, line)

    def fingerprints(self) -> list[int]:
        """The fingerprints of the ids added (of the ids held as they are too)."""
        return [key for key in self._keys if key] + [self._key(i) for i in self._exact]

    def __contains__(self, call_id: object) -> bool:
        if not isinstance(call_id, str):
            return False
        if (self._exact and call_id in self._exact) or (self._base and call_id in self._base):
            return True
        if not self._size:
            return False
        if call_id in self._confirmed:
            return True
        key = self._key(call_id)
        keys, mask = self._keys, self._mask
        slot = key & mask
        while True:
            found = keys[slot]
            if not found:
                return False
            if found == key:
                assert self._confirm is not None  # only confirmable ids are in the table
                if self._confirm(self._lines[slot], call_id):
                    if len(self._confirmed) >= _CONFIRMED:
                        self._confirmed.clear()
                    self._confirmed.add(call_id)
                    return True
            slot = (slot + 1) & mask


class SpilledCallIds:
    """A :class:`CallIdSet` whose memory stays bounded however many ids are added: the
    latest (up to a quarter of :data:`SPILL_AT`) are held exactly in a :class:`CallIdSet`, the
    fingerprints of the others in :class:`SpilledFingerprints` (spilled to a private
    temporary file, 8 bytes an id).

    An id asked for that is not among the latest is answered "absent" at once and the
    answer checked later, against the fingerprints of the older ids (at their next
    spill, or by :meth:`seal`): a match, or a fingerprint added twice, makes the set
    :attr:`unsure`, and whoever read with it reads again with a :class:`CallIdSet`
    (a call id used again far apart: exact either way, the bounded read is only the
    common case's). After :meth:`seal` the ids given there are answered from what was
    checked; another id is compared with the older fingerprints at once (a match
    answers "present" and makes the set :attr:`unsure`)."""

    __slots__ = (
        "_base",
        "_cleared",
        "_confirm",
        "_older",
        "_recent",
        "_size",
        "_spill_at",
        "_unsure",
    )

    def __init__(self, confirm: Callable[[int, str], bool], *, base: Container[str] = ()) -> None:
        self._confirm = confirm
        self._base = base  # ids held before these (of another file), also members
        self._recent = CallIdSet(confirm)
        self._spill_at = max(SPILL_AT >> 2, 1)  # a table of 384 KiB (12 bytes a slot)
        self._older = SpilledFingerprints(self._spill_at)  # asks checked as often
        self._size = 0  # ids among the older
        self._unsure = False
        self._cleared: set[str] | None = None  # the ids checked by seal

    def __len__(self) -> int:
        """How many ids were added (an id added twice counts twice)."""
        return self._size + len(self._recent)

    @property
    def unsure(self) -> bool:
        """Whether an answer given may be wrong (see the class docstring)."""
        return self._unsure or self._older.found

    def add(self, call_id: str, line: int) -> None:
        """:meth:`CallIdSet.add`."""
        recent = self._recent
        recent.add(call_id, line)
        if len(recent) >= self._spill_at:
            # A fingerprint twice (an id twice, or two alike) sets found: unsure.
            self._older.spill(recent.fingerprints())
            self._size += len(recent)
            self._recent = CallIdSet(self._confirm)

    def __contains__(self, call_id: object) -> bool:
        if not isinstance(call_id, str):
            return False
        if (self._base and call_id in self._base) or call_id in self._recent:
            return True
        if not self._size:
            return False
        if self._cleared is not None:
            if call_id in self._cleared:
                return False  # checked by seal
            key = hash(call_id) or 1
            if key in self._older or self._older.settle():
                self._unsure = True
                return True
            return False
        if (hash(call_id) or 1) in self._older:  # else checked later
            self._unsure = True
        return False

    def seal(self, ids: Iterable[str]) -> bool:
        """Ask for each of ``ids`` (those still to be asked for: the held messages'),
        check every answer given, and from now on answer ``ids`` from it. Whether
        every answer given was right (not :attr:`unsure`)."""
        cleared = set(ids)
        for call_id in cleared:
            _ = call_id in self
        if self._older.settle():
            self._unsure = True
        self._cleared = cleared
        return not self._unsure


class Fingerprints:
    """The 64-bit fingerprints (``hash()``, never 0) of strings, held in a set (its
    lookups at C speed: a long session adds one per message id and per call id): a match
    says the string may have been added (two strings can share a fingerprint: a match is
    a maybe, never a proof), no match that it was not. :class:`SpilledFingerprints`
    bounds how many are held (about 60 bytes each)."""

    __slots__ = ("_keys",)

    def __init__(self) -> None:
        self._keys: set[int] = set()

    def __len__(self) -> int:
        return len(self._keys)

    def add(self, key: int) -> bool:
        """Hold the fingerprint ``key`` (``hash(string) or 1``) once; whether it was
        held already."""
        keys = self._keys
        if key in keys:
            return True
        keys.add(key)
        return False

    def __contains__(self, key: object) -> bool:
        return type(key) is int and key in self._keys

    def keys(self) -> list[int]:
        """The fingerprints held, in no order."""
        return list(self._keys)


class SpilledFingerprints:
    """:class:`Fingerprints` whose memory stays bounded however many are added: the
    latest (up to ``spill_at``) are held in memory, the others spilled to a private
    temporary file (8 bytes each). A fingerprint found among those held is told at
    once (:meth:`add` returns True, ``in`` holds); one that may match a spilled one is
    found when the held ones are next spilled, or at the latest by :meth:`settle`, and
    sets :attr:`found`: a caller that reads on after a miss asks :meth:`settle` before
    it trusts what it read. Each spill reads the file once in pieces of 1 MiB, so the
    work is the fingerprints spilled times the spills (a few per hundred megabytes of
    a session file)."""

    __slots__ = ("_asked", "_file", "_recent", "_spill_at", "found")

    def __init__(self, spill_at: int | None = None) -> None:
        self._recent = Fingerprints()
        self._spill_at = spill_at if spill_at is not None else SPILL_AT
        self._file: Any = None  # a temporary file of the spilled fingerprints
        self._asked: list[int] = []  # looked up and not held: to check against the file
        self.found = False

    def add(self, key: int) -> bool:
        """:meth:`Fingerprints.add`, True only when ``key`` is among those held."""
        recent = self._recent._keys
        if key in recent:
            return True
        recent.add(key)
        if len(recent) >= self._spill_at:
            self._spill()
        return False

    def add_all(self, keys: AbstractSet[int]) -> bool:
        """:meth:`add` of each of ``keys`` (a set: no key twice): whether any was among
        those held. They are added at once (the spill comes after the last)."""
        recent = self._recent._keys
        found = not recent.isdisjoint(keys)
        recent.update(keys)
        if len(recent) >= self._spill_at:
            self._spill()
        return found

    def __contains__(self, key: object) -> bool:
        """Whether ``key`` is among those held; one that may be spilled is checked later
        (:attr:`found`)."""
        if key in self._recent:
            return True
        if self._file is not None and type(key) is int:
            self._asked.append(key)
            if len(self._asked) >= self._spill_at:
                self._check(self._asked)
                self._asked = []
        return False

    def settle(self) -> bool:
        """Check the fingerprints held and those looked up against the spilled ones:
        whether any fingerprint was added twice or looked up after it was added
        (:attr:`found`)."""
        if self._file is not None:
            self._check([*self._recent.keys(), *self._asked])
            self._asked = []
        return self.found

    def spill(self, keys: list[int]) -> None:
        """Add ``keys`` as many :meth:`add` would, straight to the file (none held in
        memory): a key among them twice, or among those held, sets :attr:`found`."""
        if len(set(keys)) != len(keys) or any(key in self._recent for key in keys):
            self.found = True
        self._write(keys)

    def _spill(self) -> None:
        self._write(self._recent.keys())
        self._recent = Fingerprints()

    def _write(self, keys: list[int]) -> None:
        import tempfile  # noqa: PLC0415 - only for a long session

        if self._file is None:
            self._file = tempfile.TemporaryFile(prefix="agc-ids-")  # noqa: SIM115 - held
        else:
            self._check([*keys, *self._asked])
            self._asked = []
        self._file.seek(0, 2)
        array("q", keys).tofile(self._file)

    def _check(self, keys: list[int]) -> None:
        if self.found or not keys or self._file is None:
            return
        wanted = set(keys)
        self._file.seek(0)
        while True:
            data = self._file.read(_SPILL_PIECE)
            if not data:
                return
            spilled = array("q")
            spilled.frombytes(data)
            if not wanted.isdisjoint(spilled):
                self.found = True
                return


class SpilledLines(Sequence[int]):
    """Line numbers added in order, whose memory stays bounded however many are added:
    the latest (up to ``spill_at``) in memory, the others in a private temporary file
    (8 bytes each), read back in pieces of 1 MiB when the sequence is read (in order)
    and one number at a time when one is asked for."""

    __slots__ = ("_file", "_spill_at", "_spilled", "_tail")

    def __init__(self, indices: Iterable[int] = (), spill_at: int | None = None) -> None:
        self._tail: array[int] = array("q")
        self._spill_at = spill_at if spill_at is not None else SPILL_AT
        self._spilled = 0  # how many are in the file
        self._file: Any = None
        self.extend(indices)

    def append(self, index: int) -> None:
        self._tail.append(index)
        if len(self._tail) >= self._spill_at:
            import tempfile  # noqa: PLC0415 - only for a long session

            if self._file is None:
                self._file = tempfile.TemporaryFile(prefix="agc-lines-", buffering=0)  # noqa: SIM115 - held
            self._file.write(self._tail.tobytes())
            self._spilled += len(self._tail)
            self._tail = array("q")

    def extend(self, indices: Iterable[int]) -> None:
        for index in indices:
            self.append(index)

    def __len__(self) -> int:
        return self._spilled + len(self._tail)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return list(self)[index]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        if index >= self._spilled:
            return self._tail[index - self._spilled]
        return array("q", os.pread(self._file.fileno(), 8, 8 * index))[0]

    def __iter__(self) -> Iterator[int]:
        done = 0  # bytes of the file read
        while done < 8 * self._spilled:
            data = os.pread(self._file.fileno(), min(_SPILL_PIECE, 8 * self._spilled - done), done)
            done += len(data)
            yield from array("q", data)
        yield from self._tail


class SpilledMap:
    """A map of strings to values whose memory stays bounded however many are set: the
    latest (up to ``spill_at``, default :data:`SPILL_AT`) in a dict, the others in a
    private temporary SQLite database on disk (deleted when closed; a page cache of a
    few MiB), each key as its UTF-8 bytes (a lone surrogate kept) and each value
    pickled. Setting a key again replaces its value."""

    __slots__ = ("_db", "_recent", "_spill_at", "_spilled")

    def __init__(self, spill_at: int | None = None) -> None:
        self._recent: dict[str, Any] = {}
        self._spill_at = spill_at if spill_at is not None else SPILL_AT
        self._db: Any = None  # sqlite3.Connection, once spilled
        self._spilled = 0  # the keys written to the database (a key set again: twice)

    def __len__(self) -> int:
        """How many keys were set (a key set again after a spill counts twice)."""
        return self._spilled + len(self._recent)

    def __setitem__(self, key: str, value: Any) -> None:
        recent = self._recent
        recent[key] = value
        if len(recent) >= self._spill_at:
            self._spill()

    def get(self, key: str, default: Any = None) -> Any:
        """The value of ``key``, else ``default``."""
        if key in self._recent:
            return self._recent[key]
        if self._db is None:
            return default
        row = self._db.execute("SELECT v FROM m WHERE k = ?", (_key_bytes(key),)).fetchone()
        return default if row is None else pickle.loads(row[0])  # noqa: S301 - our own file

    def keys(self) -> Iterator[str]:
        """Every key set (in no order; a key set again after a spill may come twice)."""
        if self._db is not None:
            for (key,) in self._db.execute("SELECT k FROM m"):
                yield bytes(key).decode("utf-8", "surrogatepass")
        yield from self._recent

    def _spill(self) -> None:
        if self._db is None:
            import sqlite3  # noqa: PLC0415 - only for a long session

            # "": a private temporary database on disk, deleted when it is closed.
            self._db = sqlite3.connect("", isolation_level=None)
            self._db.execute("CREATE TABLE m (k BLOB PRIMARY KEY, v BLOB) WITHOUT ROWID")
        rows = [(_key_bytes(key), pickle.dumps(value)) for key, value in self._recent.items()]
        with self._db:
            self._db.executemany("INSERT OR REPLACE INTO m VALUES (?, ?)", rows)
        self._spilled += len(rows)
        self._recent = {}

    def close(self) -> None:
        """Delete the database (the map is empty then)."""
        if self._db is not None:
            self._db.close()
            self._db = None
        self._recent = {}
        self._spilled = 0


def _key_bytes(key: str) -> bytes:
    return key.encode("utf-8", "surrogatepass")


_CONFIRMED: Final = 4096
"""The ids a :class:`CallIdSet` remembers as confirmed (a few hundred KiB at most)."""
SPILL_AT: Final = 1 << 16
"""The fingerprints :class:`SpilledFingerprints` holds in memory (a set of a few MB)."""
_SPILL_PIECE: Final = 1 << 20
_FIRST_SLOTS: Final = 1 << 12
_MAX_LINE: Final = 1 << 32  # lines from here on are held by their ids (array "I")


@dataclass
class Settled:
    """The start of a history that a streamed read let go of (see
    :func:`~agc.resume._formats.stream.scan_session`, ``settle``): a run of messages
    that breaks no rule, every call in it answered, and that no later message can
    pair with except through a call id.

    Attributes:
        messages: how many messages it held (the first of ``History.messages`` is
            message number ``messages`` of the whole history).
        calls: its tool calls.
        results: its tool results.
        call_ids: the ids of its calls (each answered once): a later call with one of
            them reuses an id, a later result with one of them answers a call twice.
        tallies: ``None`` when the run breaks no rule; else its findings, let go of
            with it (a Gemini CLI session's, whose messages are let go of whatever
            they break): the findings of its messages and its warnings, each a
            :class:`~agc.resume._validate.FindingTally`.
    """

    messages: int = 0
    calls: int = 0
    results: int = 0
    call_ids: CallIdSet | SpilledCallIds = field(default_factory=CallIdSet)
    tallies: tuple[Any, Any] | None = None  # FindingTally: _validate imports this module


@dataclass
class History:
    """A history read from native records.

    Attributes:
        format: the format it was read as.
        messages: the neutral view.
        records: the native records (parsed JSON values; for session files, one per
            line, a non-JSON line as its text). For a JSON array read from a file, a
            sequence that parses each record from the file's text when it is read.
        lines: for session files, each line's exact text (without its line break).
        final_newline: for session files, whether the last line ended with a newline.
        skipped: indices of records that are not part of the history (session-file
            lines such as metadata, progress events or lines that are not objects).
        unread: for Claude Code and Codex session files, the indices of the lines that
            are not JSON objects (not JSON, or JSON of another type), in order, the torn
            last line among them: no message is read from them and a repair copies
            them as they are.
        torn: for session files, the index of a torn last line (not JSON and no final
            newline: a write cut off by a crash), else ``None``. See :mod:`.torn`.
        notes: what a reader noted about every record that a writer needs (Codex:
            ``paginated``, ``sequenced``), so a streamed file is not read again for it.
        session_id: the session id the client wrote in the file (Claude Code: the first
            ``sessionId`` of its lines; Codex: the ``id`` of ``session_meta``), else
            ``None``. It is the session's identity in idempotency keys.
        settled: for a session file read with ``settle``, the messages before
            ``messages`` that were let go of (``messages`` is then the rest); else
            ``None``.
    """

    format: FormatName
    messages: list[Message]
    records: Sequence[Any]
    lines: Sequence[str] | None = None
    final_newline: bool = True
    skipped: Sequence[int] = field(default_factory=list)
    torn: int | None = None
    unread: Sequence[int] = field(default_factory=list)
    notes: dict[str, bool] = field(default_factory=dict)
    session_id: str | None = None
    settled: Settled | None = None


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
        write_lines: for session files, ``write`` one line at a time (``write`` is
            :func:`texts` of it), so a repair is written as it is made: a line's text,
            or the index of a line of ``History.lines`` written as it is, or a range of
            them (so a streamed file's bytes are copied, never decoded and encoded
            again).
    """

    name: FormatName
    family: Family
    line_based: bool
    can_move: bool
    read: Callable[[Sequence[Any]], History]
    write: Callable[[History, list[Message]], list[Any]]
    synthesize: Callable[[Block, str], Block | None]
    wrap_results: Callable[[list[Block]], list[Message]]
    write_lines: Callable[[History, list[Message]], Iterator[str | int | range]] | None = None


def texts(history: History, lines: Iterable[str | int | range]) -> list[str]:
    """The lines a ``write_lines`` gave, each as its text (an index, or a range of them,
    names lines of ``history.lines``)."""
    source = history.lines
    out: list[str] = []
    for line in lines:
        if isinstance(line, str):
            out.append(line)
            continue
        assert source is not None  # write_lines gives indices only of held lines
        if isinstance(line, range):
            out.extend(source[index] for index in line)
        else:
            out.append(source[line])
    return out


def arguments_are_json(arguments: Any) -> bool:
    """True when a call's arguments can be replayed: an object, or a JSON object string.

    Calls whose arguments are not valid JSON are never kept for replay: a stream cut
    mid-call leaves a truncated arguments string, which no provider accepts back.
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
