"""Reading lines in bounded memory: turn files, for ``agc ledger check`` and the
recorder, and the event input of ``agc ledger record``.

A project writer can put a line of any length in a turn file, and an event stream can
hold a line of any length. Every reader of either (:func:`agc.ledger._check.read_turn_file`,
the recorder deciding whether a sealed file may be continued, and
:func:`event_lines` for the recorder's input) reads through :func:`iter_line_pieces`,
so each holds at most :data:`MAX_READ_LINE_BYTES` of a line at a time and each judges a
longer line the same way: it is never parsed. In a turn file it is no ledger record
(``record-invalid``) and its bytes are hashed in pieces; in an event input it is an
:class:`OverlongLine`, counted and reported, never decoded.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final, NamedTuple, Protocol

from agc.ledger._contract import MAX_LINE_BYTES

__all__ = [
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
    whole, never decoded.

    Attributes:
        size: its length in bytes (its ``\n`` included, if it has one).
    """

    size: int


def event_lines(handle: LineReader) -> Iterator[bytes | OverlongLine]:
    """Every line of an event input (an open binary file, ``sys.stdin.buffer``) from
    its position on: a line of at most :data:`MAX_READ_LINE_BYTES` as its bytes (its
    ``\n`` kept), a longer one as an :class:`OverlongLine` read through in pieces.
    Memory does not grow with the length of a line.

    Raises:
        OSError: reading failed.
    """
    size = 0
    for data, whole, first in iter_line_pieces(handle):
        if whole:
            yield data
            continue
        size = len(data) if first else size + len(data)
        if data.endswith(b"\n"):
            yield OverlongLine(size)
            size = 0
    if size:
        yield OverlongLine(size)
