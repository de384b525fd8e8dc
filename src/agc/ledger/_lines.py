"""Reading lines in bounded memory: turn files, for ``agc ledger check`` and the
recorder, and the event input of ``agc ledger record``.

A project writer can put a line of any length in a turn file, and an event stream can
hold a line of any length. Every reader of either (:func:`agc.ledger._check.read_turn_file`,
the recorder deciding whether a sealed file may be continued, and
:func:`event_lines` for the recorder's input) reads through :func:`iter_line_pieces`,
so each holds at most :data:`MAX_READ_LINE_BYTES` of a line at a time and each judges a
longer line the same way: it is never parsed. In a turn file it is no ledger record
(``record-invalid``) and its bytes are hashed in pieces; in an event input it is an
:class:`OverlongLine`, counted and reported, never held whole: as it is read, a copy with
every JSON string cut to its first :data:`KEPT_STRING_BYTES` bytes is made (at most
:data:`MAX_READ_LINE_BYTES`), and that copy is what is decoded, so the event on such a
line (a very long command or output) is still recorded, with its long texts cut.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from typing import Final, NamedTuple, Protocol

from agc.ledger._contract import MAX_LINE_BYTES

__all__ = [
    "CUT_MARK",
    "KEPT_STRING_BYTES",
    "MAX_READ_LINE_BYTES",
    "LinePiece",
    "LineReader",
    "OverlongLine",
    "event_lines",
    "iter_line_pieces",
]

MAX_READ_LINE_BYTES: Final = 4 * MAX_LINE_BYTES
"""The longest line a turn file's readers parse (1 MiB, its newline included). The
writer's lines are at most :data:`~agc.ledger._contract.MAX_LINE_BYTES`; a longer line
is no ledger record: it is hashed in pieces and counted as ``record-invalid``, never
held in memory whole."""

_CHUNK_BYTES: Final = 1024 * 1024

KEPT_STRING_BYTES: Final = 64 * 1024
CUT_MARK: Final = b"\\u2026sha256:"
"""What ends a cut string of that copy (JSON text): ``…sha256:`` and the first 16 hex
digits of the SHA-256 of the whole string's JSON text, so strings cut alike (two long
keys of one object) stay distinct."""
"""How much of each JSON string of an overlong event line is kept (bytes of its JSON
text, escapes as written): more than any field the ledger records keeps (a command is
cut at 240 characters and marked truncated)."""


class LineReader(Protocol):
    """What the readers need of a binary file: ``readline(limit)`` (``io`` semantics:
    at most ``limit`` bytes, up to and including a ``\n``; ``b""`` at the end)."""

    def readline(self, size: int = -1, /) -> bytes: ...


class LinePiece(NamedTuple):
    """Some bytes of a turn file, in file order.

    Attributes:
        data: the bytes (a whole line keeps its ``\\n``; the file's last line may lack it).
        whole: ``data`` is one whole line of at most :data:`MAX_READ_LINE_BYTES`: a
            line to parse. ``False``: a piece of a longer line, never to be parsed.
        first: ``data`` starts a line (always true when ``whole``).
    """

    data: bytes
    whole: bool
    first: bool


def iter_line_pieces(handle: LineReader) -> Iterator[LinePiece]:
    """Yield every byte of ``handle`` from its position on, line by line: each line of
    at most :data:`MAX_READ_LINE_BYTES` as one whole piece, each longer line as pieces
    of at most :data:`MAX_READ_LINE_BYTES` + 1 bytes (the first) and 1 MiB (the rest).
    Memory does not grow with the line length.

    Raises:
        OSError: reading failed.
    """
    readline = handle.readline
    while raw := readline(MAX_READ_LINE_BYTES + 1):
        if len(raw) <= MAX_READ_LINE_BYTES:
            yield LinePiece(raw, whole=True, first=True)
            continue
        first = True
        while raw:  # the rest of the long line, in pieces
            yield LinePiece(raw, whole=False, first=first)
            first = False
            raw = b"" if raw.endswith(b"\n") else readline(_CHUNK_BYTES)


class OverlongLine(NamedTuple):
    """A line of an event input longer than :data:`MAX_READ_LINE_BYTES`: never held
    whole.

    Attributes:
        size: its length in bytes (its ``\n`` included, if it has one).
        shrunk: the line with each JSON string cut to :data:`KEPT_STRING_BYTES` bytes
            (valid JSON text when the line was), or ``None`` when even that copy would be
            longer than :data:`MAX_READ_LINE_BYTES` (the line is then only counted).
    """

    size: int
    shrunk: bytes | None = None


_BLANKS: Final = re.compile(rb"[ \t\r\n]{2,}")
_QUOTE: Final = 0x22
_BACKSLASH: Final = 0x5C


def _backslashes_before(data: bytes | bytearray, end: int, start: int) -> int:
    """How many backslashes run back from ``end`` (exclusive) to no further than ``start``."""
    j = end
    while j > start and data[j - 1] == _BACKSLASH:
        j -= 1
    return end - j


class _Shrinker:
    """Copies the bytes of one JSON text fed in pieces, keeping of each string only its
    first :data:`KEPT_STRING_BYTES` bytes, cut where the copy stays valid JSON text: never
    inside an escape (RFC 8259, section 7), after a lone high surrogate escape, or inside
    a UTF-8 sequence (RFC 3629). Work is linear in the bytes fed; the copy is abandoned
    (``result()`` is ``None``) once it would exceed :data:`MAX_READ_LINE_BYTES`."""

    def __init__(self) -> None:
        self.out: bytearray | None = bytearray()
        self.in_string = False
        self.start = 0  # where the current string's content starts in ``out``
        self.cut = False  # the current string's copy has stopped
        self.carry = 0  # backslashes ending the previous piece, inside a string
        self.digest = hashlib.sha256()  # of the whole JSON text of a string being cut

    def _emit(self, data: bytes) -> None:
        out = self.out
        if out is None:
            return
        if len(out) + len(data) > MAX_READ_LINE_BYTES:
            self.out = None
            return
        out += data

    def feed(self, data: bytes) -> None:
        pos, n = 0, len(data)
        while pos < n and self.out is not None:
            if not self.in_string:
                quote = data.find(b'"', pos)
                end = n if quote < 0 else quote
                # Runs of white space between tokens are kept as one space: insignificant
                # in JSON text (RFC 8259, section 2), and a token's two sides stay apart.
                self._emit(_BLANKS.sub(b" ", data[pos:end]))
                if quote < 0:
                    return
                self._emit(b'"')
                self.in_string, self.cut, self.carry = True, False, 0
                self.start = len(self.out) if self.out is not None else 0
                pos = quote + 1
                continue
            at = pos
            while (quote := data.find(b'"', at)) >= 0:
                run = _backslashes_before(data, quote, pos)
                if run == quote - pos:
                    run += self.carry
                if run % 2 == 0:
                    break
                at = quote + 1
            end = n if quote < 0 else quote
            if not self.cut:
                room = KEPT_STRING_BYTES - (len(self.out) - self.start)
                if end - pos <= room:
                    self._emit(data[pos:end])
                else:
                    self._emit(data[pos : pos + room])
                    if self.out is not None:
                        self.digest = hashlib.sha256(self.out[self.start :])
                        self.digest.update(data[pos + room : end])
                    self._trim()
                    self.cut = True
            elif quote != pos:
                self.digest.update(data[pos:end])
            if quote < 0:
                run = _backslashes_before(data, n, pos)
                self.carry = run + self.carry if run == n - pos else run
                return
            if self.cut:  # two strings cut alike (two keys) stay apart: the whole's digest
                self._emit(CUT_MARK + self.digest.hexdigest()[:16].encode("ascii"))
            self._emit(b'"')
            self.in_string = False
            pos = quote + 1

    def _trim(self) -> None:
        """Shorten the current string's copy to a point where it may be closed."""
        out = self.out
        if out is None:
            return
        start = self.start
        while True:
            size = len(out)
            cut = size
            k = max(start, size - 12)
            last: tuple[int, int] | None = None  # the last whole escape: (start, length)
            while k < size:
                if out[k] == _BACKSLASH and _backslashes_before(out, k, start) % 2 == 0:
                    length = 6 if k + 1 < size and out[k + 1] == 0x75 else 2  # \uXXXX
                    if k + length > size:
                        cut = k
                        break
                    last = (k, length)
                    k += length
                    continue
                k += 1
            if cut == size and last is not None and last[1] == 6 and last[0] + 6 == size:
                unit = bytes(out[last[0] + 2 : size]).lower()
                if b"d800" <= unit <= b"dbff":  # a high surrogate needs its low half
                    cut = last[0]
            if cut == size:
                i = size
                while i > start and size - i < 3 and out[i - 1] & 0xC0 == 0x80:
                    i -= 1
                if i > start and out[i - 1] >= 0xC0:  # a UTF-8 lead byte
                    first = out[i - 1]
                    need = 2 if first < 0xE0 else 3 if first < 0xF0 else 4
                    if size - (i - 1) < need:
                        cut = i - 1
            if cut == size:
                return
            del out[cut:]

    def result(self) -> bytes | None:
        return None if self.out is None else bytes(self.out)


def event_lines(handle: LineReader) -> Iterator[bytes | OverlongLine]:
    """Every line of an event input (an open binary file, ``sys.stdin.buffer``) from
    its position on: a line of at most :data:`MAX_READ_LINE_BYTES` as its bytes (its
    ``\n`` kept), a longer one as an :class:`OverlongLine` read through in pieces (with
    its copy whose strings are cut, :attr:`OverlongLine.shrunk`). Memory does not grow
    with the length of a line.

    Raises:
        OSError: reading failed.
    """
    size = 0
    shrinker = _Shrinker()
    for data, whole, first in iter_line_pieces(handle):
        if whole:
            yield data
            continue
        if first:
            size, shrinker = 0, _Shrinker()
        size += len(data)
        shrinker.feed(data)
        if data.endswith(b"\n"):
            yield OverlongLine(size, shrinker.result())
            size = 0
    if size:
        yield OverlongLine(size, shrinker.result())
