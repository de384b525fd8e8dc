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
    "uncut",
]

MAX_READ_LINE_BYTES: Final = 4 * MAX_LINE_BYTES
"""The longest line a turn file's readers parse (1 MiB, its newline included). The
writer's lines are at most :data:`~agc.ledger._contract.MAX_LINE_BYTES`; a longer line
is no ledger record: it is hashed in pieces and counted as ``record-invalid``, never
held in memory whole."""

_CHUNK_BYTES: Final = 1024 * 1024

KEPT_STRING_BYTES: Final = 64 * 1024
"""How much of each JSON string of an overlong event line is kept (bytes of its JSON
text, escapes as written): more than any field the ledger records keeps (a command is
cut at 240 characters and marked truncated)."""
CUT_MARK: Final = b"\\u2026sha256:"
"""What ends a cut string of that copy (JSON text): ``…sha256:`` and the first 16 hex
digits of the SHA-256 of the whole string's JSON text, so strings cut alike (two long
keys of one object) stay distinct."""
_CUT_TEXT: Final = re.compile("\u2026sha256:[0-9a-f]{16}\\Z")


def uncut(text: str) -> tuple[str, bool]:
    """A string of the cut copy of an overlong line (decoded): ``(its kept beginning,
    True)`` when it ends in the cut mark (:data:`CUT_MARK` and 16 hex digits), else
    ``(text, False)``. Only for strings of such a copy: elsewhere the same characters
    are text like any other."""
    found = _CUT_TEXT.search(text)
    return (text, False) if found is None else (text[: found.start()], True)


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
_STRING_BODY: Final = re.compile(rb'[^"\\]*+(?:\\.[^"\\]*+)*+', re.DOTALL)
"""The content of a JSON string from a position on: up to its closing quote, the end of
the data, or a backslash ending the data (whose escaped byte is in the next piece).
Possessive, so that matching keeps no backtracking state: linear, constant memory."""
_UNITS: Final = re.compile(rb"(?:[^\\]++|\\u....|\\[^u])*+", re.DOTALL)
"""Whole units of a string's content: runs of bytes, ``\\uXXXX`` escapes, two-byte
escapes. A unit's kind is told by its first byte, so the units are the same whatever
part of them is matched."""
_HIGH_SURROGATE: Final = re.compile(rb"\\u[dD][89abAB][0-9a-fA-F]{2}")


class _Shrinker:
    """Copies the bytes of one JSON text fed in pieces, keeping of each string only its
    first :data:`KEPT_STRING_BYTES` bytes, cut where the copy stays valid JSON text: never
    inside an escape (RFC 8259, section 7), after a lone high surrogate escape, or inside
    a UTF-8 sequence (RFC 3629). Work is linear in the bytes fed, done by regular
    expressions and ``bytes`` methods (no Python step per byte or per escape); the copy
    is abandoned (``result()`` is ``None``) once it would exceed
    :data:`MAX_READ_LINE_BYTES`."""

    def __init__(self) -> None:
        self.out: bytearray | None = bytearray()
        self.in_string = False
        self.start = 0  # where the current string's content starts in ``out``
        self.cut = False  # the current string's copy has stopped
        self.escaped = False  # the previous piece ended inside a string, on a backslash
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
                self.in_string, self.cut, self.escaped = True, False, False
                self.start = len(self.out) if self.out is not None else 0
                pos = quote + 1
                continue
            scan = pos + 1 if self.escaped else pos  # that byte is escaped: never a quote
            quote = data.find(b'"', scan)
            end = n if quote < 0 else quote
            backslash = data.find(b"\\", scan, end)
            if backslash >= 0:  # escapes before that quote: where the string ends is matched
                body = _STRING_BODY.match(data, backslash)
                assert body is not None  # the pattern matches the empty string
                end = body.end()
            closed = end < n and data[end] == _QUOTE
            # not closed: the data ends in the string, perhaps on an escaping backslash
            self.escaped = not closed and end < n
            stop = end if closed else n
            if not self.cut:
                room = KEPT_STRING_BYTES - (len(self.out) - self.start)
                if stop - pos <= room:
                    self._emit(data[pos:stop])
                else:
                    self._emit(data[pos : pos + room])
                    if self.out is not None:
                        self.digest = hashlib.sha256(self.out[self.start :])
                        self.digest.update(data[pos + room : stop])
                    self._trim()
                    self.cut = True
            elif stop > pos:
                self.digest.update(data[pos:stop])
            if not closed:
                return
            if self.cut:  # two strings cut alike (two keys) stay apart: the whole's digest
                self._emit(CUT_MARK + self.digest.hexdigest()[:16].encode("ascii"))
            self._emit(b'"')
            self.in_string = False
            pos = end + 1

    def _trim(self) -> None:
        """Shorten the current string's copy to a point where it may be closed: after
        its last whole unit, before a last ``\\uD800``-``\\uDBFF`` escape (a high
        surrogate needs its low half) or an unfinished UTF-8 sequence."""
        out = self.out
        if out is None:
            return
        start = self.start
        units = _UNITS.match(out, start)
        assert units is not None  # the pattern matches the empty string
        cut = units.end()
        last = cut - 6
        if (
            last >= start
            and _HIGH_SURROGATE.fullmatch(out, last, cut)
            and _UNITS.fullmatch(out, start, last)  # its backslash starts a unit
        ):
            cut = last  # a high surrogate needs its low half
        else:
            i = cut
            while i > start and cut - i < 3 and out[i - 1] & 0xC0 == 0x80:
                i -= 1
            if i > start and out[i - 1] >= 0xC0:  # a UTF-8 lead byte
                first = out[i - 1]
                need = 2 if first < 0xE0 else 3 if first < 0xF0 else 4
                if cut - (i - 1) < need:
                    cut = i - 1
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
