"""Items kept in order whose memory stays bounded however many are added.

A report that keeps every finding (``agc resume --json``) of a long session can hold
hundreds of thousands of them; :class:`SpilledItems` holds the first :data:`SPILL_AT`
in memory and pickles the others, :data:`_CHUNK` at a time, to an anonymous temporary
file (removed by the system when it is closed, or when the process ends), and gives
them back in order, one chunk in memory at a time, as many times as they are read.
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import islice
from typing import Any, Final, TypeVar, overload

from agc._core.fs import write_error

__all__ = ["SPILL_AT", "SpilledItems"]

T = TypeVar("T")

SPILL_AT: Final = 4096
"""The items :class:`SpilledItems` holds in memory before it spills the next ones."""
_CHUNK: Final = 1024
"""The items pickled together (a few hundred KiB of findings or changes)."""


class SpilledItems(Sequence[T]):
    """Items appended in order: the first ``hold`` (default :data:`SPILL_AT`) in memory,
    the next ones in chunks of :data:`_CHUNK` pickled to a private temporary file, the
    last chunk in memory until it is full. Read (iterated, indexed, sliced) in order,
    lazily, any number of times; :meth:`freeze` makes it read-only (a report's view).

    ``base``: a :class:`SpilledItems` whose items (those it holds now) come first,
    shared, not copied: several holders can start with the items of one, which may
    take more items after (not read here). ``mark``: a test of an
    item; :attr:`marked` says whether any item appended (or of ``base``) passed it.

    Raises:
        FileWriteError: (from :meth:`append`, :meth:`extend`) the temporary file cannot
            be created or written (disk full, quota, read-only folder: exit 3); the
            holder is then unusable.
    """

    __slots__ = (
        "_base",
        "_base_size",
        "_cached",
        "_chunks",
        "_end",
        "_file",
        "_frozen",
        "_head",
        "_hold",
        "_mark",
        "_tail",
        "_what",
        "marked",
    )

    def __init__(
        self,
        items: Iterable[T] = (),
        *,
        hold: int | None = None,
        what: str = "items",
        mark: Callable[[T], bool] | None = None,
        base: SpilledItems[T] | None = None,
    ) -> None:
        self._hold = max(hold if hold is not None else SPILL_AT, 0)
        self._what = what
        self._mark = mark
        self._head: list[T] = []
        self._tail: list[T] = []  # appended after the head, not spilled yet
        self._chunks = array("q")  # (offset, length) of each chunk in the file
        self._end = 0  # bytes written to the file
        self._file: Any = None
        self._cached: tuple[int, list[T]] | None = None  # the chunk last read by index
        self._frozen = False
        self._base = base
        self._base_size = 0
        self.marked = False
        if base is not None:
            self._base_size = len(base)
            self.marked = base.marked
        self.extend(items)

    def append(self, item: T) -> None:
        if self._frozen:
            raise TypeError("a frozen SpilledItems is read-only")
        if self._mark is not None and not self.marked and self._mark(item):
            self.marked = True
        if len(self._head) < self._hold and not self._chunks and not self._tail:
            self._head.append(item)
            return
        tail = self._tail
        tail.append(item)
        if len(tail) >= _CHUNK:
            self._spill(tail)
            self._tail = []

    def extend(self, items: Iterable[T]) -> None:
        for item in items:
            self.append(item)

    def freeze(self) -> None:
        """Refuse any further item (the items are then shared by views and bases)."""
        self._frozen = True

    @property
    def spilled(self) -> int:
        """How many items are in the temporary file."""
        return len(self._chunks) // 2 * _CHUNK

    def _spill(self, chunk: list[T]) -> None:
        import pickle  # noqa: PLC0415 - only past the bound (a quick check imports neither)
        import tempfile  # noqa: PLC0415

        data = pickle.dumps(chunk, protocol=pickle.HIGHEST_PROTOCOL)
        try:
            if self._file is None:
                self._file = tempfile.TemporaryFile(prefix="agc-spill-", buffering=0)  # noqa: SIM115 - held
            view = memoryview(data)
            while view:
                written = self._file.write(view)
                view = view[written:]
        except OSError as exc:
            self._frozen = True  # what was lost cannot be read back as if it were there
            where = f"a temporary file of {self._what} in {tempfile.gettempdir()}"
            raise write_error(where, exc) from exc
        self._chunks.extend((self._end, len(data)))
        self._end += len(data)

    def _chunk(self, number: int) -> list[T]:
        import pickle  # noqa: PLC0415 - loaded by the spill

        offset, length = self._chunks[2 * number], self._chunks[2 * number + 1]
        data = os.pread(self._file.fileno(), length, offset)
        chunk: list[T] = pickle.loads(data)  # noqa: S301 - our own private file
        return chunk

    def __len__(self) -> int:
        return self._base_size + len(self._head) + self.spilled + len(self._tail)

    def __bool__(self) -> bool:
        return len(self) > 0

    def __eq__(self, other: object) -> bool:
        """Equal to a sequence (a tuple, a list, another holder) of equal items in the
        same order."""
        if not isinstance(other, Sequence) or isinstance(other, (str, bytes)):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]  # holds a sequence that may grow

    def __iter__(self) -> Iterator[T]:
        if self._base is not None:
            yield from islice(self._base, self._base_size)
        yield from self._head
        for number in range(len(self._chunks) // 2):
            yield from self._chunk(number)
        yield from self._tail

    @overload
    def __getitem__(self, index: int) -> T: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[T]: ...

    def __getitem__(self, index: int | slice) -> T | Sequence[T]:
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            if step != 1:
                return list(self)[index]
            return list(islice(self, start, max(start, stop)))
        size = len(self)
        if index < 0:
            index += size
        if not 0 <= index < size:
            raise IndexError(index)
        if index < self._base_size:
            assert self._base is not None  # it has items
            return self._base[index]
        index -= self._base_size
        if index < len(self._head):
            return self._head[index]
        index -= len(self._head)
        if index >= self.spilled:
            return self._tail[index - self.spilled]
        number, within = divmod(index, _CHUNK)
        if self._cached is None or self._cached[0] != number:
            self._cached = (number, self._chunk(number))
        return self._cached[1][within]

    def __repr__(self) -> str:
        return f"SpilledItems(<{len(self)} {self._what}, {self.spilled} spilled>)"
