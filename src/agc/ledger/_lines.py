"""Reading a turn file's lines in bounded memory, for ``agc ledger check`` and the recorder.

A project writer can put a line of any length in a turn file. Both readers of a turn
file (:func:`agc.ledger._check.read_turn_file`, and the recorder deciding whether a
sealed file may be continued) read it through :func:`iter_line_pieces`, so both hold at
most :data:`MAX_READ_LINE_BYTES` of a line at a time and both judge a longer line the
same way: it is no ledger record (``record-invalid``), its bytes are hashed in pieces
and it is never parsed.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO, Final, NamedTuple

from agc.ledger._contract import MAX_LINE_BYTES

__all__ = ["MAX_READ_LINE_BYTES", "LinePiece", "iter_line_pieces"]

MAX_READ_LINE_BYTES: Final = 4 * MAX_LINE_BYTES
"""The longest line a turn file's readers parse (1 MiB, its newline included). The
writer's lines are at most :data:`~agc.ledger._contract.MAX_LINE_BYTES`; a longer line
is no ledger record: it is hashed in pieces and counted as ``record-invalid``, never
held in memory whole."""

_CHUNK_BYTES: Final = 1024 * 1024


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


def iter_line_pieces(handle: BinaryIO) -> Iterator[LinePiece]:
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
