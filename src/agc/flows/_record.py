"""Recording from a pipe as best effort: the producer never pays for a failing store.

An agent piped into ``agc record`` (``codex exec --json | agc record``) must not die of
SIGPIPE because the store cannot be written: evidence capture never blocks the run,
completeness is judged separately (``agc-verify``). So the input is read through a
:class:`PassThrough` that counts it (and, for ``--tee``, copies it to stdout), and after
a store failure :func:`drain` reads the rest of it to its end.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import BinaryIO, Final

__all__ = ["PassThrough", "drain"]

_CHUNK: Final = 1 << 16


class PassThrough:
    """A binary input read as the wrapped ``stream``, counting the bytes read and
    copying each to ``copy_to`` (``--tee``) as it is read, flushed at once.

    A copy target that fails (the reader of ``| jq`` is gone: ``BrokenPipeError``, any
    ``OSError``) stops the copy and nothing else: the input is still read and recorded.

    Attributes:
        bytes_read: input bytes read so far.
        copy_failed: the ``OSError`` that stopped the copy, else ``None``.
    """

    def __init__(self, stream: BinaryIO, copy_to: BinaryIO | None = None) -> None:
        self._stream = stream
        self._copy_to = copy_to
        self.bytes_read = 0
        self.copy_failed: OSError | None = None
        self.name = getattr(stream, "name", None)

    def _seen(self, data: bytes) -> bytes:
        self.bytes_read += len(data)
        if data and self._copy_to is not None:
            try:
                self._copy_to.write(data)
                self._copy_to.flush()
            except OSError as exc:
                self.copy_failed, self._copy_to = exc, None
        return data

    def read(self, size: int = -1) -> bytes:
        return self._seen(self._stream.read(size))

    def read1(self, size: int = -1) -> bytes:
        read = getattr(self._stream, "read1", self._stream.read)
        return self._seen(read(size))

    def readline(self, size: int = -1) -> bytes:
        return self._seen(self._stream.readline(size))

    def __iter__(self) -> Iterator[bytes]:
        while line := self.readline():
            yield line

    def fileno(self) -> int:
        return self._stream.fileno()

    def seekable(self) -> bool:
        return self._stream.seekable()


def drain(stream: PassThrough) -> int:
    """Read ``stream`` to its end (copying it on as it goes); returns the bytes read
    here. A read that fails ends the drain (nothing more can be read)."""
    before = stream.bytes_read
    with contextlib.suppress(OSError, ValueError):
        while stream.read1(_CHUNK):
            pass
    return stream.bytes_read - before
