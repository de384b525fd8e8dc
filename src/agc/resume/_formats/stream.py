"""Reading a session file (JSONL) from disk in one forward pass, holding only the view.

A session file of a long agent run is hundreds of megabytes; its parsed lines take
several times that in Python objects. Read here, each line is parsed, read into the
neutral view by the format's line reader and let go: the history keeps the view (roles,
block kinds, call ids, tool names) and the place in the file of one line in
:data:`MARK_EVERY` (see :class:`LineFile`). Every
``raw`` and every call's ``arguments`` is a :class:`~agc.resume._formats.model.RawRef`
to its line, which is read from the file and parsed again when asked (by a writer, for
the few lines a repair changes, or for the arguments a report shows). A Gemini CLI
session is replayed as its client replays it (a record may replace an earlier message,
a ``$rewindTo`` drop the later ones): its reader holds the messages of the replayed map,
each as its view (:class:`~agc.resume._formats.gemini_chat.LineReader`), and, for a
check or a repair in parts (``checked``), lets go of a part of the map once it can be
checked apart from the rest, falling back to the whole read when a later record reaches
back to it.

The lines are read as :func:`~agc.resume._formats.jsonl.parse_jsonl` reads them (the
same UTF-8 rule, the same JSON rule, a cut inside a character on the last line kept as
U+FFFD), and the format is told as :func:`~agc.resume._formats.detect.load_history`
tells it, so a file read here gives the history ``load_history`` gives of its bytes.

The file must not change while the history is used: :meth:`LineFile.check_unchanged`
refuses a file whose size, modification time or inode changed since it was read.
"""

from __future__ import annotations

import os
import sys
from array import array
from collections.abc import Callable, Container, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Final, Protocol, overload

from agc._core import json as strict_json
from agc.errors import InputError, JsonInvalidError
from agc.resume._formats import claude_code, codex_rollout, gemini_chat
from agc.resume._formats.jsonl import line_value, parse_session_line
from agc.resume._formats.model import (
    Block,
    CallIdSet,
    FormatName,
    History,
    Message,
    RawRef,
    Settled,
    SpilledCallIds,
    SpilledFingerprints,
)
from agc.resume._formats.torn import torn_line
from agc.resume._gc import collector_paused

if TYPE_CHECKING:
    from agc.resume._formats.detect import LineFacts

__all__ = [
    "SETTLE_MESSAGES",
    "LineFile",
    "LineSequence",
    "Parts",
    "Plan",
    "ReachBackError",
    "ScanStart",
    "check_part",
    "parse_line",
    "part_tallies",
    "scan_session",
    "scan_tail",
    "tail_start",
]

_CHUNK: Final = 1 << 20
_PIECE: Final = 1 << 16  # read to find a line between two marks
MARK_EVERY: Final = 64
"""Every how many lines :class:`LineFile` holds a line's place (8 bytes a mark)."""
_MARK_SHIFT: Final = 6
_MARK_MASK: Final = MARK_EVERY - 1
HEAD_LINES: Final = 64
"""The first lines of a file whose places a read in parts keeps (:meth:`LineFile.forget`):
a client notes the session's folder there (see :mod:`agc.resume._next`)."""
SETTLE_MESSAGES: Final = 4096
"""``settle`` of :func:`scan_session` for ``agc resume``: a few MiB of messages held
between checks (a check of that many takes a few milliseconds)."""
Progress = Callable[[int], None]
"""Called with the bytes read so far."""


class LineFile:
    """The lines of a file on disk, by their places: line ``i`` is read again when
    asked. Open until :meth:`close` (or until garbage-collected). A file read from line
    ``base`` on (at byte ``start``) holds the places of those lines only.

    Memory does not grow with the lines: the place of every :data:`MARK_EVERY`-th line
    is held (8 bytes), and a line between two marks is found by reading on from the
    mark before it (or from the line found last, when it lies between), a piece of
    :data:`_PIECE` bytes at a time; the last piece read is kept, so a pass in order (a
    writer copying the runs of lines between those it changes) reads each piece once."""

    def __init__(
        self,
        path: Path,
        last: str | None,
        stamp: tuple[int, ...],
        *,
        base: int = 0,
        start: int = 0,
    ) -> None:
        self.path = path
        self.marks: array[int] = array("q")  # line origin + k * MARK_EVERY starts at marks[k]
        self.origin = base  # the line of marks[0]
        self.read = 0  # the lines read (noted): lines origin .. origin + read - 1
        self.last_end = start  # where the last line read ends (before its line break)
        self._last = last  # the last line's text when it ends inside a character
        self._stamp = stamp
        self._fd: int | None = None
        self.base = base
        self._head: array[int] = array("q")  # the first lines' marks, when let go (forget)
        self._cursor = (-1, 0)  # the line found last and where it starts
        self._piece = b""  # the piece of the file read last (from byte _piece_at)
        self._piece_at = 0

    def note(self, start: int, end: int) -> None:
        """The next line starts at byte ``start`` and ends at ``end`` (before its line
        break)."""
        if not self.read & _MARK_MASK:
            self.marks.append(start)
        self.read += 1
        self.last_end = end

    def __len__(self) -> int:
        return self.origin + self.read

    def _handle(self) -> int:
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        return self._fd

    def text(self, index: int) -> str:
        """Line ``index`` without its line break (a ``\\r`` before it kept)."""
        if self._last is not None and index == len(self) - 1:
            return self._last
        return self._bytes(index).decode("utf-8")

    def start_of(self, index: int) -> int:
        """The byte where line ``index`` starts (a line before :attr:`base` but the first
        :data:`HEAD_LINES`, when let go of, raises :class:`IndexError`)."""
        if index >= self.base and index < len(self):
            marks, origin = self.marks, self.origin
        elif 0 <= index < HEAD_LINES and self._head:  # a first line, kept when let go
            marks, origin = self._head, 0
        else:
            raise IndexError(f"line {index + 1} is before line {self.base + 1}, the first read")
        after = (index - origin) & _MARK_MASK  # lines after the mark
        line, start = self._cursor
        if not line <= index <= line + after:
            line, start = index - after, marks[(index - origin) >> _MARK_SHIFT]
        if line < index:
            start = self._skip(start, index - line)
        self._cursor = (index, start)
        return start

    def _end_of(self, index: int, start: int) -> int:
        """Where line ``index``, starting at byte ``start``, ends (before its break)."""
        if index == len(self) - 1:
            return self.last_end
        return self._skip(start, 1) - 1

    def _skip(self, start: int, breaks: int) -> int:
        """The byte after the ``breaks``-th line break from byte ``start``. The file is
        read a piece at a time, the last piece read kept: lines looked up in order (a
        writer's copies between two changed lines) read each piece once, not once per
        line."""
        data, at = self._piece, self._piece_at
        if not at <= start < at + len(data):
            data, at = self._read_piece(start), start
        found = start - at - 1  # search after this offset in data
        while True:
            while breaks:
                found = data.find(b"\n", found + 1)
                if found < 0:
                    break
                breaks -= 1
            if not breaks:
                return at + found + 1
            at += len(data)
            data, found = self._read_piece(at), -1

    def _read_piece(self, start: int) -> bytes:
        """:data:`_PIECE` bytes of the file from ``start``, kept as the piece read last."""
        data = os.pread(self._handle(), _PIECE, start)
        if not data:
            raise InputError(f"{self.path} changed while it was read (a line is short)")
        self._piece, self._piece_at = data, start
        return data

    def _span(self, start: int, end: int) -> bytes:
        """Bytes ``start`` to ``end - 1`` of the file (from the piece read last when it
        holds them)."""
        at = self._piece_at
        if at <= start and end <= at + len(self._piece):
            return self._piece[start - at : end - at]
        return os.pread(self._handle(), end - start, start)

    def _bytes(self, index: int) -> bytes:
        start = self.start_of(index)
        size = self._end_of(index, start) - start
        data = self._span(start, start + size)
        if len(data) != size:
            raise InputError(f"{self.path} changed while it was read (line {index + 1} is short)")
        return data

    def copy(self, first: int, stop: int, write: Callable[[bytes], object]) -> None:
        """Give ``write`` lines ``first`` to ``stop - 1`` as they are in the file, each
        followed by a line break (the text of a last line cut inside a character, as
        :meth:`text` reads it), a MiB at a time (a line before :attr:`base` raises
        :class:`IndexError`)."""
        if first < self.base:
            raise IndexError(f"line {first + 1} is before line {self.base + 1}, the first read")
        whole = len(self) if self._last is None else len(self) - 1  # lines read as bytes
        if first < min(stop, whole):
            last = min(stop, whole) - 1
            start = self.start_of(first)
            if last == len(self) - 1:
                end = self.last_end
            else:  # the run's breaks passed over once; the line after is found with it
                end = self._skip(start, last - first + 1) - 1
                self._cursor = (last + 1, end + 1)
            at = self._piece_at
            if at <= start and end <= at + len(self._piece):  # a few lines, read already
                write(self._piece[start - at : end - at] + b"\n")
            else:
                handle = self._handle()
                while start < end:
                    data = os.pread(handle, min(_CHUNK, end - start), start)
                    if not data:
                        raise InputError(
                            f"{self.path} changed while it was read (line {last + 1} is short)"
                        )
                    write(data)
                    start += len(data)
                write(b"\n")
            first = last + 1
        for index in range(first, stop):
            write(self.text(index).encode("utf-8") + b"\n")

    def forget(self, line: int) -> None:
        """Let go of the places of the lines before ``line`` but the first
        :data:`HEAD_LINES` (where a client notes the session's folder): they are never
        read again (a read in parts has written and checked them)."""
        if line <= self.base or line <= HEAD_LINES:
            return
        if not self.origin and not self._head:  # read from the first line
            self._head = self.marks[: (HEAD_LINES >> _MARK_SHIFT) + 1]
        drop = (line - self.origin) >> _MARK_SHIFT  # whole runs of marked lines
        del self.marks[:drop]
        self.origin += drop << _MARK_SHIFT
        self.read -= drop << _MARK_SHIFT
        self.base = line

    def record(self, index: int) -> Any:
        """Line ``index`` parsed (its text when it is not JSON), as the reader parsed it."""
        return self._record(index, None if index == self._cut_line() else self._bytes(index))

    def _cut_line(self) -> int:
        """The index of a last line that ends inside a character (its text is kept), else -1."""
        return len(self) - 1 if self._last is not None else -1

    def _record(self, index: int, body: bytes | None) -> Any:
        if body is not None:
            try:
                return _loads(body)
            except JsonInvalidError:
                pass
        return _parse(self.text(index))

    def bodies(self, count: int) -> Iterator[bytes]:
        """The bytes of lines ``0 .. count - 1`` in order (without their line breaks),
        read in pieces of 1 MiB: a pass over the file takes one read per MiB, not one per
        line. A file read from a later line gives its lines one read each (a line before
        its first raises :class:`IndexError`, as :meth:`text` does)."""
        if self.base:
            for index in range(count):
                yield b"" if index == self._cut_line() else self._bytes(index)
            return
        handle = self._handle()
        last = len(self) - 1
        buffer = b""
        base = 0  # the file offset of buffer[0]
        start = 0  # the offset in buffer of the next line
        for index in range(count):
            seen = start  # the line has no break before this offset in buffer
            while True:
                end = self.last_end - base if index == last else buffer.find(b"\n", seen)
                if 0 <= end <= len(buffer):
                    break
                seen = len(buffer) - start
                chunk = os.pread(handle, _CHUNK, base + len(buffer))
                if not chunk:
                    raise InputError(
                        f"{self.path} changed while it was read (line {index + 1} is short)"
                    )
                buffer = buffer[start:] + chunk
                base += start
                start = 0
            yield buffer[start:end]
            start = end + 1

    def check_unchanged(self) -> None:
        """Raise :class:`~agc.errors.InputError` when the file changed since it was read."""
        if _stamp(os.stat(self.path)) != self._stamp:
            raise InputError(
                f"{self.path} changed while agc read it (another program wrote to it)",
                hint="Stop the agent that writes this session, then run agc resume again.",
            )

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __del__(self) -> None:
        self.close()


class LineSequence(Sequence[Any]):
    """The first ``count`` lines of a :class:`LineFile`, as texts or as records: the
    ``records`` and ``lines`` of a streamed :class:`History`."""

    __slots__ = ("_count", "_file", "_parsed")

    def __init__(self, file: LineFile, count: int, *, parsed: bool) -> None:
        self._file = file
        self._count = count
        self._parsed = parsed

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, index: int) -> Any: ...
    @overload
    def __getitem__(self, index: slice) -> LineSequence: ...
    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            start, stop, step = index.indices(self._count)
            if start != 0 or step != 1:
                raise ValueError("only a leading slice of a file's lines is supported")
            return LineSequence(self._file, stop, parsed=self._parsed)
        if index < 0:
            index += self._count
        if not 0 <= index < self._count:
            raise IndexError(index)
        return self._file.record(index) if self._parsed else self._file.text(index)

    def __iter__(self) -> Iterator[Any]:
        file = self._file
        cut = file._cut_line()
        for index, body in enumerate(file.bodies(self._count)):
            if self._parsed:
                yield file._record(index, None if index == cut else body)
            else:
                yield file.text(index) if index == cut else body.decode("utf-8")

    def check_unchanged(self) -> None:
        """See :meth:`LineFile.check_unchanged`."""
        self._file.check_unchanged()

    def copy(self, first: int, stop: int, write: Callable[[bytes], object]) -> None:
        """See :meth:`LineFile.copy` (only lines of this sequence)."""
        if not 0 <= first <= stop <= self._count:
            raise IndexError(f"lines {first} to {stop} of {self._count}")
        self._file.copy(first, stop, write)


def parse_line(text: str) -> Any:
    """A line's text parsed as the read parses it: its JSON value under agc's rule (a
    ``\r`` before the line break is whitespace), else the text itself."""
    return _parse(text)


def _parse(text: str) -> Any:
    """A line read again (the first read refused one nested too deep)."""
    try:
        return line_value(text)
    except JsonInvalidError:
        return text[:-1] if text.endswith("\r") else text


def _loads(body: bytes) -> Any:
    """A line's bytes (without its line break) as JSON under agc's rule, the value
    :func:`_parse` gives of its text (a ``\\r`` before the line break is JSON
    whitespace); orjson's path first (see :func:`agc._core.json.loads`).

    Raises:
        JsonInvalidError: not JSON under the rule, or not UTF-8.
    """
    return strict_json.loads(body, allow_lone_surrogates=True, many=True)


def _stamp(info: os.stat_result) -> tuple[int, ...]:
    """What changes when a file is written or replaced. The change time is in it: a
    writer can set the modification time back (``touch -d``, ``os.utime``), never that."""
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


@collector_paused
def scan_session(
    path: Path,
    *,
    source: str,
    format: FormatName | None,
    progress: Progress | None = None,
    settle: int | None = None,
    checked: bool = False,
    keep: int | None = None,
    parts: Parts | None = None,
    plan: Plan | None = None,
) -> History:
    """Read the session file at ``path`` in one pass (see the module docstring).

    Args:
        path: a regular file (the caller has opened and judged it).
        source: its name, for messages.
        format: ``codex-rollout``, ``claude-code`` or ``gemini-chat``; ``None`` to
            detect it.
        progress: called now and then with the bytes read so far.
        settle: let go of the messages read so far whenever at least this many are
            held and they are settled: they break no rule of the provider (checked as
            :func:`~agc.resume._validate.check_messages` checks them, after those
            already let go of), every call among them is answered, and no later
            message can pair with them but through a call id. ``History.messages``
            is then the rest and ``History.settled`` counts what was let go of (and
            keeps its call ids), so memory holds the messages from the first
            problem on, not the whole history. ``None``: keep every message.
        checked: the history is only checked (:func:`~agc.resume._validate.check_loaded`),
            never repaired: with ``settle``, a Gemini CLI session is let go of too,
            whatever its messages break. Its map of messages is cut where a part of
            it pairs with nothing after (:meth:`.gemini_chat.LineReader.settle_point`),
            the part checked as it is let go of and its findings kept in
            ``History.settled`` (``keep`` of them beside their counts, ``None``: all:
            see :class:`~agc.resume._validate.FindingTally`). A record that names a
            message let go of (a replacement, a ``$rewindTo``, a ``$set`` of every
            message, a call id used again) makes the replay differ: the file is then
            read again without letting go.
        parts: with ``checked``, given each part of a Gemini CLI session as it is let
            go of (to repair and write it); told to start again (:meth:`Parts.restart`)
            when the file is read again (as a whole, or as another format).
        plan: with ``checked``, a Codex rollout's or a Claude Code session's messages
            are let go of as a check lets them go, each run given to ``plan`` first (to
            decide its repair); a run that :class:`Plan` refuses makes the file read
            again holding them (``plan`` no longer given any). Told to start again as
            ``parts`` is.

    Raises:
        InputError: empty, or not UTF-8 (naming the line).
        HistoryFormatError: as :func:`~agc.resume._formats.detect.load_history`.
        OSError: the file cannot be read.
    """
    from agc.resume._formats.detect import session_format  # noqa: PLC0415 - detect imports this module

    chosen = format
    exact_ids = False
    while True:
        try:
            history, facts = _scan(
                path,
                source=source,
                format=chosen,
                progress=progress,
                settle=settle,
                checked=checked,
                keep=keep,
                parts=parts,
                exact_ids=exact_ids,
                plan=plan,
            )
        except _SpilledIdError:
            exact_ids = True  # read again with the ids let go of held
            progress = None
            if parts is not None:
                parts.restart()
            if plan is not None:
                plan.restart()
            continue
        except _ReachBackError:
            checked = False  # read whole: the replay reaches back
            progress = None
            if parts is not None:
                parts.restart()
            if plan is not None:
                plan.restart()
                plan = None
            continue
        decided = session_format(facts, source=source, format=format)
        if decided == history.format:
            return history
        chosen = decided  # the lines hold another format than the first one read
        progress = None
        if parts is not None:
            parts.restart()
        if plan is not None:
            plan.restart()


@dataclass(frozen=True)
class ScanStart:
    """Where to start reading a file whose first ``line`` lines are, byte for byte,
    those of a session file already read with ``settle``, and whose messages before
    that line are the ones that read let go of (``settled``): a repair's output, whose
    lines before the first it changed are copies of the input's. See
    :func:`scan_tail`."""

    line: int
    offset: int  # the byte where line ``line`` starts
    settled: Settled
    format: FormatName  # the file's, told by the read of its first lines


def tail_start(history: History, same: int) -> ScanStart | None:
    """Where a file whose first ``same`` lines are those of ``history`` (a session file
    read by :func:`scan_session` with ``settle``) can be read from: the first line of
    the messages held, when that line is among the ``same`` (so it starts the message
    it started there: a Claude Code line of the role of the message before would join
    it) and earlier messages were let go of breaking no rule; else ``None`` (read the
    whole file). A check lets messages go whatever they break (``checked``): then
    only when they broke none."""
    settled = history.settled
    records = history.records
    if (
        settled is None
        or settled.tallies is not None
        or not history.messages
        or not isinstance(records, LineSequence)
    ):
        return None
    line = history.messages[0].origin
    if line is None or not 0 < line < same or records._file.base:
        return None
    return ScanStart(line, records._file.start_of(line), settled, history.format)


@collector_paused
def scan_tail(
    path: Path, start: ScanStart, *, source: str, format: FormatName, settle: int
) -> History:
    """The history of the session file at ``path``, read from ``start`` on: its
    messages before ``start.line`` are ``start.settled`` (their lines are not read
    again), the rest are read and settled as :func:`scan_session` reads them. The
    format is ``format`` (told by the read of the first lines). The history's
    ``records`` and ``lines`` hold the lines from ``start.line`` on only; when an id of
    the messages before may be used again (their spilled ids matched one, see
    :class:`~agc.resume._formats.model.SpilledCallIds`) the whole file is read
    (:func:`scan_session`) instead, which the same check gives the same report of.

    Raises:
        InputError: a line is not UTF-8.
        OSError: the file cannot be read.
    """
    if format == "gemini-chat":
        raise ValueError("a Gemini CLI session is never settled")
    try:
        history, _ = _scan(
            path, source=source, format=format, progress=None, settle=settle, start=start
        )
    except _SpilledIdError:
        history = None
    prior = start.settled.call_ids
    if history is None or (isinstance(prior, SpilledCallIds) and prior.unsure):
        # An id of the messages before start may be used again: the whole file.
        return scan_session(path, source=source, format=format, settle=settle)
    return history


class _Settler:
    """Lets go of the settled messages of a reader (see :func:`scan_session`)."""

    __slots__ = (
        "confirm",
        "every",
        "exact",
        "format",
        "held",
        "keep",
        "loose",
        "next_try",
        "open_ids",
        "plan",
        "refs",
        "session",
        "settled",
    )

    def __init__(
        self,
        every: int,
        format: FormatName,
        confirm: Confirm,
        *,
        exact: bool = False,
        loose: bool = False,
        keep: int | None = None,
    ) -> None:
        self.every = max(every, 1)
        self.format = format
        self.confirm = confirm
        self.exact = exact  # the ids let go of in a CallIdSet, not spilled
        # loose: a check only; messages are let go of whatever they break, their
        # findings kept in the tallies (``keep`` of them beside their counts).
        self.loose = loose
        self.keep = keep
        # Responses: the ids of the calls let go of unanswered; a later result with one
        # of them would answer it (the read then falls back: _ReachBackError).
        self.open_ids: set[str] = set()
        self.plan: Plan | None = None  # given each part let go of (loose), to repair it
        self.refs: LineSequence | None = None  # the parsed lines read (raws, the plan's parts)
        self.session: Callable[[], str | None] = lambda: None  # the reader's session id
        self.settled = Settled(call_ids=self._ids())
        self.held: list[Message] | None = None  # the reader's list (a new one: compacted)
        self.next_try = self.every

    def resume(self, messages: list[Message], settled: Settled) -> None:
        """Go on after ``settled`` (read from another file: its call ids are looked up
        there), the reader's ``messages`` following them."""
        self.held = messages
        self.settled = Settled(
            settled.messages,
            settled.calls,
            settled.results,
            self._ids(base=settled.call_ids),
        )

    def _ids(self, base: Container[str] = ()) -> CallIdSet | SpilledCallIds:
        """A set for the ids of the calls let go of: bounded, or (``exact``) held."""
        if self.exact:
            return CallIdSet(self.confirm, base=base)
        return SpilledCallIds(self.confirm, base=base)

    def seal(self, messages: list[Message]) -> None:
        """After the last line: check every answer the set of ids let go of gave, and
        answer the call ids of ``messages`` (those held) from it.

        Raises:
            _SpilledIdError: an answer may have been wrong (an id of a call let go of
                used again): read again with ``exact``.
        """
        self._reach_back(messages)
        ids = self.settled.call_ids
        held = (
            block.call_id
            for message in messages
            for block in message.blocks
            if block.call_id is not None
        )
        if isinstance(ids, SpilledCallIds) and not ids.seal(held):
            raise _SpilledIdError

    def _reach_back(self, messages: list[Message]) -> None:
        """Raise :class:`_ReachBackError` when a result of ``messages`` answers a call
        let go of unanswered (the pairing of the whole history differs from its parts')."""
        open_ids = self.open_ids
        if not open_ids:
            return
        for message in messages:
            for block in message.blocks:
                if block.kind == "result" and block.call_id in open_ids:
                    raise _ReachBackError

    def feed(self, messages: list[Message]) -> None:
        """Called with the reader's messages after a line when they are not the list
        held (compacted) or more than ``next_try`` (the last message may still grow: a
        Claude Code message spans the lines of one role)."""
        if messages is not self.held:  # a Codex `compacted` line: history starts again
            self.held = messages
            self.settled = Settled(call_ids=self._ids())
            self.open_ids = set()
            self.next_try = self.every
            if self.plan is not None:
                self.plan.restart()
        if len(messages) <= self.next_try:
            return
        if self.loose:
            self._let_go_checked(messages)
            return
        cut = _quiet_point(messages)
        if cut:
            from agc.resume._validate import check_messages  # noqa: PLC0415 - it imports the formats

            if self.refs is not None:  # the lines read so far: a finding may read a raw
                self.refs._count = len(self.refs._file)
            report = check_messages(messages[:cut], self.format, settled=self.settled)
            if not report.findings:
                ids = self.settled.call_ids
                for message in messages[:cut]:
                    for block in message.blocks:
                        if block.kind == "call" and block.call_id is not None:
                            ids.add(block.call_id, -1 if block.origin is None else block.origin)
                self.settled.messages = report.messages
                self.settled.calls = report.calls
                self.settled.results = report.results
                del messages[:cut]
                self.next_try = self.every
                return
        # Held: a problem, or no quiet point yet. Tried again when twice as many are
        # held, so the checks stay linear in the history.
        self.next_try = 2 * len(messages)

    def _let_go_checked(self, messages: list[Message]) -> None:
        """``loose``: let go of the messages before :func:`_loose_point`, checked, their
        findings added to the tallies (a check reports them as the whole history's
        check does: no message after can change them but through a call id, and a
        result that answers a call let go of unanswered makes the read fall back)."""
        from agc.resume._validate import FindingTally, check_messages  # noqa: PLC0415

        responses = self.format == "codex-rollout"
        cut = _loose_point(messages, _STALE if responses else 0)
        if not cut:
            self.next_try = 2 * len(messages)  # linear, as feed
            return
        part = messages[:cut]
        self._reach_back(part)
        settled = self.settled
        if self.refs is not None:  # the lines read so far: a finding may read a raw
            self.refs._count = len(self.refs._file)
        report = check_messages(part, self.format, settled=settled)
        if report.findings:
            if settled.tallies is None:
                settled.tallies = (FindingTally(self.keep), FindingTally(self.keep))
            settled.tallies[0].extend(report.findings)
            if responses:
                self.open_ids.update(
                    finding.call_id
                    for finding in report.findings
                    if finding.code == "tool-call-unanswered" and finding.call_id is not None
                )
        if self.plan is not None:
            records: Sequence[Any] = self.refs if self.refs is not None else ()
            self.plan.part(
                part, settled, self.session(), self.format, records, clean=not report.findings
            )
        # Each id once: an id used again is a member already (a duplicate-call-id
        # finding at each of its uses here), and adding it at each use would make a
        # long run of one fingerprint in the table.
        again: dict[str | None, int] = {}
        for finding in report.findings:
            if finding.code == "duplicate-call-id":
                again[finding.call_id] = again.get(finding.call_id, 0) + 1
        # Claude Code: a tool_use outside an assistant message is no call of the history.
        calling = [m for m in part if responses or m.role == "assistant"]
        uses: dict[str, int] = {}
        for message in calling:
            for block in message.blocks:
                if block.kind == "call" and block.call_id is not None:
                    uses[block.call_id] = uses.get(block.call_id, 0) + 1
        ids = settled.call_ids
        added: set[str] = set()
        for message in calling:
            for block in message.blocks:
                call_id = block.call_id
                if block.kind != "call" or call_id is None or call_id in added:
                    continue
                added.add(call_id)
                if again.get(call_id, 0) < uses[call_id]:  # a first use is here
                    ids.add(call_id, -1 if block.origin is None else block.origin)
        settled.messages = report.messages
        settled.calls = report.calls
        settled.results = report.results
        del messages[:cut]
        self.next_try = self.every


_PLANNED: Final = frozenset({"codex-rollout", "claude-code"})
"""The formats whose repair a :class:`Plan` decides run by run."""


class Plan(Protocol):
    """What a Codex rollout or a Claude Code session read for a repair in parts
    (:func:`scan_session`, ``plan``) gives each run of messages it lets go of, before
    the next is read."""

    def part(
        self,
        messages: list[Message],
        settled: Settled,
        session_id: str | None,
        format: FormatName,
        records: Sequence[Any],
        *,
        clean: bool = False,
    ) -> None:
        """A run of messages of a history of ``format``, after ``settled`` (the runs
        before; their call ids not yet holding these ones'); ``session_id``: the
        reader's so far; ``records``: the lines read so far, parsed; ``clean``: the
        check of the run after ``settled`` found nothing. May raise
        :class:`ReachBackError`: the repair of the runs is not the whole one's."""

    def restart(self) -> None:
        """Forget every run given: the history starts again (a ``compacted`` line, or
        the file read again)."""


class Parts(Protocol):
    """What a Gemini CLI session read in parts (:func:`scan_session`, ``parts``) gives
    each part to as it is let go of, before the next is read."""

    def part(self, history: gemini_chat.GeminiHistory) -> None:
        """A part: its messages (numbered after those let go of before), its lines from
        ``history.first_line`` to ``len(history.lines)`` (the records of its messages
        and the lines between; its ``records`` and ``lines`` read them from the file)."""

    def restart(self) -> None:
        """Forget every part given: the file is read again from its first line."""


class _GeminiSettler:
    """Lets go of the settled messages of a Gemini CLI session's reader, checked as
    they are let go of (see :func:`scan_session`, ``keep``), each part given to
    ``parts``."""

    __slots__ = ("calls", "every", "file", "next_try", "parts", "refs", "settled")

    def __init__(
        self, every: int, keep: int | None, refs: LineSequence, parts: Parts | None = None
    ) -> None:
        from agc.resume._validate import FindingTally  # noqa: PLC0415 - it imports the formats

        self.every = max(every, 1)
        self.next_try = self.every
        self.settled = Settled(tallies=(FindingTally(keep), FindingTally(keep)))
        self.calls = SpilledFingerprints()  # the call ids of the messages let go of
        self.refs = refs  # the parsed lines the parts are read from
        self.file = refs._file
        self.parts = parts

    def feed(self, reader: gemini_chat.LineReader) -> None:
        """Called when the reader's map holds more than ``next_try`` messages."""
        point = reader.settle_point()
        if point is None:  # tried again when twice as many are held: linear
            self.next_try = 2 * len(reader.entries)
            return
        settled = self.settled
        offset = settled.messages
        segment = reader.settle(*point, offset)
        if _call_keys(segment.messages, self.calls, add=True):
            # A call or result of a message let go of has one of its call ids: the
            # pairing of the whole history differs from that of its parts.
            reader.reach_back = True
        check_part(segment, settled)
        self.next_try = len(reader.entries) + self.every
        if self.parts is not None:
            self.refs._count = len(self.file)  # the parts read them: the lines read so far
            segment.records = LineSequence(self.file, reader.cut, parsed=True)
            segment.lines = LineSequence(self.file, reader.cut, parsed=False)
            segment.settled = Settled(messages=offset)  # numbered after those
            self.parts.part(segment)
        # The part's lines are checked (and written): only the file's places from the
        # cut on are held, so memory does not grow with the lines read.
        self.file.forget(reader.cut)

    def finish(self, reader: gemini_chat.LineReader, lines: int) -> None:
        """After the last line: set the reader's ``reach_back`` when the messages it
        holds name a message or a call id of those let go of."""
        if not reader.cut:
            return
        reader.finish(lines)
        held = [
            message
            for entry in reader.entries.values()
            for message in (entry.first, entry.second)
            if message is not None
        ]
        if _call_keys(held, self.calls, add=False) or self.calls.settle():
            reader.reach_back = True


def part_tallies() -> Settled:
    """An empty :class:`Settled` that gathers the findings of parts (:func:`check_part`)."""
    from agc.resume._validate import FindingTally  # noqa: PLC0415 - it imports the formats

    return Settled(tallies=(FindingTally(None), FindingTally(None)))


def check_part(segment: gemini_chat.GeminiHistory, settled: Settled) -> bool:
    """Check one part of a Gemini CLI session read in parts (its view numbered after
    ``settled.messages``) as :func:`~agc.resume._validate.check_loaded` checks a
    history, and add it to ``settled``: its findings and warnings to the tallies, its
    messages, calls and results to the counts. Whether it breaks no rule."""
    from agc.resume._validate import tally_messages, unrecorded_findings  # noqa: PLC0415

    assert settled.tallies is not None  # made with them (part_tallies)
    valid, calls, results = tally_messages(
        segment.messages,
        "gemini-chat",
        settled.tallies[0],
        settled=Settled(messages=settled.messages),
    )
    settled.tallies[1].extend(unrecorded_findings(segment))
    settled.messages += len(segment.messages)
    settled.calls += calls
    settled.results += results
    return valid


def _call_keys(messages: list[Message], prints: SpilledFingerprints, *, add: bool) -> bool:
    """Whether a call id of ``messages`` (a call's or a result's) is in ``prints``
    (before the ids of ``messages`` are added to it, with ``add``)."""
    keys = {
        hash(block.call_id) or 1
        for message in messages
        for block in message.blocks
        if block.call_id is not None
    }
    if add:
        return prints.add_all(keys)
    return any(key in prints for key in keys)


class _ReachBackError(Exception):
    """A Gemini CLI record names a message a settled read let go of (or a Codex
    rollout's message a call id of the messages a check or a :class:`Plan` let go of)."""


ReachBackError = _ReachBackError
"""Raised by a :class:`Plan`: the file is read again holding its messages."""


class _SpilledIdError(Exception):
    """A Claude Code or Codex read whose ids let go of are spilled may have missed an
    id used again (:class:`~agc.resume._formats.model.SpilledCallIds`)."""


Confirm = Callable[[int, str], bool]
"""Whether line ``i`` of the file holds a call with a given id (see
:class:`~agc.resume._formats.model.CallIdSet`)."""


def _confirmer(records: LineFile, format: FormatName) -> Confirm:
    """:data:`Confirm` for the lines of ``records`` (a Claude Code session or a Codex
    rollout), each read again by a reader of its own."""
    reader_type = claude_code.LineReader if format == "claude-code" else codex_rollout.LineReader

    def confirm(line: int, call_id: str) -> bool:
        reader = reader_type()
        reader.feed(line, records.record(line))
        return any(
            block.kind == "call" and block.call_id == call_id
            for message in reader.messages
            for block in message.blocks
        )

    return confirm


def _quiet_point(messages: list[Message]) -> int:
    """The largest ``cut`` before the last message such that every call in
    ``messages[:cut]`` has a result there and ``messages[cut - 1]`` is neither a call
    nor reasoning (whose following item is after it); 0 when there is none. Only a
    guess of where to look: the check decides."""
    open_ids: set[str | None] = set()
    cut = 0
    for position in range(len(messages) - 1):
        message = messages[position]
        last_kind = None
        for block in message.blocks:
            last_kind = block.kind
            if block.kind == "call":
                open_ids.add(block.call_id)
            elif block.kind == "result":
                open_ids.discard(block.call_id)
        if not open_ids and last_kind not in ("call", "reasoning"):
            cut = position + 1
    return cut


_STALE: Final = 256
"""Messages after which a call still open is taken as never answered when a check lets
go of messages (:func:`_loose_point`): a later result for it makes the read fall back."""


def _loose_point(messages: list[Message], stale: int) -> int:
    """The largest ``cut`` before the last message such that ``messages[cut - 1]``
    holds no call nor reasoning (its answer or following item is after it) and every
    call of ``messages[:cut]`` without a result there is taken as never answered; 0 when
    there is none. A check lets go of ``messages[:cut]`` whatever they break (see
    :meth:`_Settler._let_go_checked`).

    ``stale``: with 0, a call left without its result before the cut is taken as never
    answered (a Claude Code result must come in the very next message). Else a call is
    taken as never answered when no message held answers it and at least ``stale``
    messages are held after it: measured to the last message held, not to the cut, so a
    history with a call left unanswered in every turn is let go of too."""
    end = len(messages) - 1
    last_answer: dict[str | None, int] = {}
    if stale:
        for position, message in enumerate(messages):
            for block in message.blocks:
                if block.kind == "result":
                    last_answer[block.call_id] = position
    opened: dict[str | None, int] = {}
    answered_later = 0  # calls open here that a message held after answers
    cut = 0
    for position in range(end):
        quiet = True
        for block in messages[position].blocks:
            kind = block.kind
            if kind == "call":
                call_id = block.call_id
                if call_id not in opened:
                    opened[call_id] = position
                    if last_answer.get(call_id, -1) > position:
                        answered_later += 1
                quiet = False
            elif kind == "result" and block.call_id in opened:
                if last_answer.get(block.call_id, -1) > opened.pop(block.call_id):
                    answered_later -= 1
            elif kind == "reasoning":
                quiet = False
        if not quiet or answered_later:
            continue
        # The newest call still open is the last one in ``opened`` (in position order).
        if not opened or next(reversed(opened.values())) + stale <= (end if stale else position):
            cut = position + 1
    return cut


def _scan(
    path: Path,
    *,
    source: str,
    format: FormatName | None,
    progress: Progress | None,
    settle: int | None = None,
    start: ScanStart | None = None,
    checked: bool = False,
    keep: int | None = None,
    parts: Parts | None = None,
    exact_ids: bool = False,
    plan: Plan | None = None,
) -> tuple[History, LineFacts]:
    from agc.resume._formats.detect import LineFacts  # noqa: PLC0415 - see scan_session

    facts = LineFacts()
    reader: _Reader | None = None
    settler: _Settler | None = None
    gemini: _GeminiSettler | None = None
    chosen = format
    base = start.line if start is not None else 0
    offset = start.offset if start is not None else 0
    records = LineFile(path, None, (), base=base, start=offset)
    refs = LineSequence(records, 0, parsed=True)
    paths: dict[tuple[str | int, ...], tuple[str | int, ...]] = {}
    final_newline = True
    blank = True
    body = b""  # the line read last, its text when it is not JSON, and its record
    text: str | None = None
    record: Any = None
    next_report = _CHUNK * 8
    decided = False  # the facts can no longer change the format
    sift: frozenset[str] | None = None  # only lines of these types can change it
    replay: gemini_chat.LineReader | None = None
    entries: dict[str, Any] = {}  # the Gemini CLI reader's map
    loads = strict_json.line_reader()  # _loads, without a call per line around it
    with path.open("rb") as handle:
        stamp = _stamp(os.fstat(handle.fileno()))
        # Lines read again later (to check, copy or write them) come from the file read
        # now, through its descriptor: never from whatever the path names by then.
        records._fd = os.dup(handle.fileno())
        handle.seek(offset)
        for bodies, final_newline in _pieces(handle):
            for body in bodies:
                read = records.read  # records.note, inline: a line at a time
                index = records.origin + read
                if not read & _MARK_MASK:
                    records.marks.append(offset)
                records.read = read + 1
                offset += len(body)
                records.last_end = offset
                offset += final_newline
                try:
                    # JSON read from the bytes: a line that reads is UTF-8 and not blank.
                    record = loads(body)
                    text = None
                except JsonInvalidError:
                    try:
                        text = body.decode("utf-8")
                    except UnicodeDecodeError as exc:
                        if (
                            final_newline
                            or exc.end != len(body)
                            or exc.reason != "unexpected end of data"
                        ):
                            raise InputError(f"{source}: line {index + 1} is not UTF-8") from exc
                        text = body[: exc.start].decode("utf-8") + "\ufffd"
                        records._last = text
                    if blank and text.strip():
                        blank = False
                    record = parse_session_line(text, source, index)
                else:
                    blank = False
                if not decided and (
                    sift is None or (type(record) is dict and record.get("type") in sift)
                ):
                    facts.feed(record)
                    decided = facts.rollout and facts.head >= 64
                    sift = facts.sift()
                if replay is not None:  # a Gemini CLI session: its reader, called directly
                    replay.feed(index, record, refs)
                    if gemini is not None and len(entries) > gemini.next_try:
                        gemini.feed(replay)
                elif chosen is None:
                    chosen = facts.first()
                if chosen is not None and replay is None:
                    if reader is None:
                        reader = _READERS.get(chosen, codex_rollout.LineReader)()
                        if parts is not None and isinstance(reader, gemini_chat.LineReader):
                            reader.journal = []  # each part's output is replayed from it
                        # The lines before the first one that tells the format.
                        for earlier in range(records.base, index):
                            _feed(reader, earlier, records.record(earlier), refs, paths)
                        if settle is not None and chosen != "gemini-chat":
                            settler = _Settler(
                                settle,
                                chosen,
                                _confirmer(records, chosen),
                                exact=exact_ids,
                                loose=checked
                                and start is None
                                and (parts is None or (plan is not None and chosen in _PLANNED)),
                                # A repair's report holds every finding of its input.
                                keep=keep if plan is None else None,
                            )
                            # What the raws of the messages checked as they are let go
                            # of read (a finding may read one: a reasoning item's id).
                            settler.refs = refs
                            if settler.loose and plan is not None and chosen in _PLANNED:
                                settler.plan = plan
                                settler.session = _session_of(reader)
                            if start is not None and not isinstance(reader, gemini_chat.LineReader):
                                settler.resume(reader.messages, start.settled)
                        elif settle is not None and checked:
                            # A Gemini CLI record may replace or rewind to any earlier one:
                            # its messages are let go of checked, the read falls back if so.
                            gemini = _GeminiSettler(settle, keep, refs, parts)
                    _feed(reader, index, record, refs, paths)
                    if isinstance(reader, gemini_chat.LineReader):
                        replay, entries = reader, reader.entries
                        if gemini is not None and len(entries) > gemini.next_try:
                            gemini.feed(reader)
                    elif settler is not None:
                        messages = reader.messages
                        if messages is not settler.held or len(messages) > settler.next_try:
                            settler.feed(messages)
                if progress is not None and offset >= next_report:
                    progress(offset)
                    next_report = offset + _CHUNK * 8
    last_body, last_text = body, text  # the last line's (the loop's last values)
    del record
    if blank:
        raise InputError(f"{source} is empty")
    if progress is not None:
        progress(offset)
    records._stamp = stamp
    count = len(records)
    refs._count = count
    if reader is None:
        reader = (
            codex_rollout.LineReader() if chosen == "codex-rollout" else claude_code.LineReader()
        )
        reader.skipped.extend(range(count))
    chosen = chosen or "claude-code"  # no line tells: session_format refuses the file
    lines = LineSequence(records, count, parsed=False)
    if isinstance(reader, gemini_chat.LineReader):
        if gemini is not None:
            gemini.finish(reader, count)
        if reader.reach_back and chosen == "gemini-chat":
            raise _ReachBackError
        offset = gemini.settled.messages if gemini is not None else 0
        history: History = reader.history(
            refs, lines=lines, final_newline=final_newline, offset=offset
        )
        history.torn = _torn(count, final_newline, last_text)
        if gemini is not None and reader.cut:
            history.settled = gemini.settled
        return history, facts
    if settler is not None:
        settler.seal(reader.messages)
    skipped: Sequence[int] = reader.skipped
    notes: dict[str, bool] = {}
    if isinstance(reader, codex_rollout.LineReader):
        notes = reader.notes()  # skipped: in order, as the lines were fed (also compacted)
    history = History(
        chosen,
        reader.messages,
        refs,
        lines=lines,
        final_newline=final_newline,
        skipped=skipped,
        unread=reader.unread,
        notes=notes,
        session_id=reader.session_id,
        settled=settler.settled if settler is not None and settler.settled.messages else None,
    )
    if last_text is None and count:
        last_text = last_body.decode("utf-8")  # it read as JSON: valid UTF-8
    history.torn = _torn(count, final_newline, last_text)
    return history, facts


def _session_of(reader: _Reader) -> Callable[[], str | None]:
    """The session id ``reader`` has read so far, when asked."""
    return lambda: getattr(reader, "session_id", None)


def _torn(count: int, final_newline: bool, last_text: str | None) -> int | None:
    """The index of a torn last line (:mod:`.torn`), else ``None``."""
    if not final_newline and last_text is not None and torn_line([last_text], False) == 0:
        return count - 1
    return None


_Reader = claude_code.LineReader | codex_rollout.LineReader | gemini_chat.LineReader
_READERS: Final[dict[str, type[_Reader]]] = {
    "claude-code": claude_code.LineReader,
    "codex-rollout": codex_rollout.LineReader,
    "gemini-chat": gemini_chat.LineReader,
}


def _pieces(handle: IO[bytes]) -> Iterator[tuple[list[bytes], bool]]:
    """The lines of ``handle`` without their line breaks, a list of them per piece read,
    and whether they had one (only a last line may not); read in large pieces (split at
    C speed, faster than a read per line, and looped over without a call per line)."""
    rest = b""
    while True:
        chunk = handle.read(_CHUNK)
        if not chunk:
            break
        lines = (rest + chunk).split(b"\n") if rest else chunk.split(b"\n")
        rest = lines.pop()
        yield lines, True
    if rest:
        yield [rest], False


def _feed(
    reader: _Reader,
    index: int,
    record: Any,
    records: LineSequence,
    paths: dict[tuple[str | int, ...], tuple[str | int, ...]],
) -> None:
    """Read one line into the view, its parts held as places in the file."""
    if isinstance(reader, gemini_chat.LineReader):
        reader.feed(index, record, records)
        return
    if isinstance(reader, codex_rollout.LineReader):
        message = reader.feed(index, record)
        if message is None:
            return
        payload = RawRef(records, index, ("payload",))
        message.raw = payload
        message.role = sys.intern(message.role)
        for block in message.blocks:
            block.raw = payload
            _detach_block(block, record["payload"], records, index, ("payload",), paths)
        return
    blocks = reader.feed(index, record)
    if not blocks:
        return
    reader.messages[-1].role = sys.intern(reader.messages[-1].role)
    content = record["message"]["content"]
    if isinstance(content, str):
        blocks[0].raw = RawRef(records, index, ("message", "content"))
        return
    for position, (block, part) in enumerate(zip(blocks, content, strict=True)):
        where = _shared(paths, ("message", "content", position))
        block.raw = RawRef(records, index, where)
        _detach_block(block, part, records, index, where, paths)


_ARGUMENT_KEYS: Final = ("input", "arguments", "action")
_NAMED_KINDS: Final = frozenset({"call", "result"})


def _detach_block(
    block: Block,
    raw: Any,
    records: LineSequence,
    index: int,
    where: tuple[str | int, ...],
    paths: dict[tuple[str | int, ...], tuple[str | int, ...]],
) -> None:
    """Hold a call's arguments as a place (when they are more than a few bytes), and
    share the strings that repeat (tool names, call ids: a call's and its result's)."""
    if block.kind not in _NAMED_KINDS:
        return  # no name, id or arguments
    if type(block.name) is str:
        block.name = sys.intern(block.name)
    if type(block.call_id) is str:
        block.call_id = sys.intern(block.call_id)
    arguments = block.held_arguments()
    if arguments is None or (type(arguments) is str and len(arguments) <= 64):
        return
    if not isinstance(raw, dict):
        return
    for key in _ARGUMENT_KEYS:
        if key in raw and raw[key] is arguments:
            block.arguments = RawRef(records, index, _shared(paths, (*where, key)))
            return


def _shared(
    paths: dict[tuple[str | int, ...], tuple[str | int, ...]], path: tuple[str | int, ...]
) -> tuple[str | int, ...]:
    return paths.setdefault(path, path)
