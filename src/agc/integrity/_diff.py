"""``agc diff``: where a run's records and a JSONL file (the agent's own session file)
first differ.

The run's side is each record unwrapped as ``agc show`` prints it
(:func:`~agc.integrity._runs.unwrap_record`: the agent's own line for a record that
``agc record``/``agc import`` kept, the record without the writer's stamps otherwise);
the file's side is each of its lines without the line break. Two lines are equal when
their bytes are, or when both are JSON and hold the same value (a line written with
other spacing or escapes comes back from the store in compact form, see
:mod:`agc.integrity._export`). Line numbers are 1-based, as ``sed -n`` counts them.

Nothing is verified here: ``agc-verify RUN`` says whether the run's records are the
sealed ones (a ``modified`` finding names the range of lines where a change begins).
"""

from __future__ import annotations

import itertools
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from agc._core import json as strict_json
from agc._core.fs import describe_os_error, open_nofollow
from agc._core.report import SCHEMA_VERSION
from agc._core.store import ArtifactKind, RunId
from agc.errors import (
    FileUnreadableError,
    InputError,
    InputMissingError,
    JsonInvalidError,
    UnsafePathError,
)
from agc.integrity._runs import iter_records, unwrap_record

__all__ = ["DiffSide", "RunDiff", "diff_run"]


@dataclass(frozen=True)
class DiffSide:
    """One side's line at the first difference.

    Attributes:
        line: the 1-based line number.
        text: the line without its line break (``None`` when this side has ended).
    """

    line: int
    text: bytes | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "line": self.line,
            "text": None if self.text is None else self.text.decode("utf-8", "replace"),
        }


@dataclass(frozen=True)
class RunDiff:
    """The outcome of :func:`diff_run`.

    Attributes:
        run_id, kind: the run and the artifact compared.
        file: the file compared with.
        run_lines, file_lines: how many lines each side has.
        run, file_side: each side's first differing line (``None`` when both are equal).
    """

    run_id: str
    kind: ArtifactKind
    file: str
    run_lines: int
    file_lines: int
    run: DiffSide | None = None
    file_side: DiffSide | None = None

    @property
    def equal(self) -> bool:
        """True when every line is equal and both sides have as many lines."""
        return self.run is None

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "run_id": self.run_id,
            "kind": self.kind,
            "path": self.file,
            "equal": self.equal,
            "line": None if self.run is None else self.run.line,
            "run": None if self.run is None else self.run.to_dict(),
            "file": None if self.file_side is None else self.file_side.to_dict(),
            "run_lines": self.run_lines,
            "file_lines": self.file_lines,
        }


def diff_run(
    run_id: str,
    file: str | os.PathLike[str],
    store: str | os.PathLike[str] | None = None,
    *,
    kind: ArtifactKind = "transcript",
) -> RunDiff:
    """Compare a run's records with a file's lines; return where they first differ.

    Both are streamed (memory holds one line of each).

    Raises:
        RunIdInvalidError: bad run id.
        RunNotFoundError: the run has no such artifact in the store.
        InputMissingError, InputError, FileUnreadableError: ``file`` is missing, a
            symlink or not a regular file, or cannot be read.
        UnsafePathError, StoreError: the run's file is a symlink or cannot be read.
    """
    run_id = RunId(run_id)
    path = Path(file)
    records = (unwrap_record(line, kind) for line, _ in iter_records(run_id, store, kind=kind))
    lines = _file_lines(path)
    run_count = file_count = 0
    first: tuple[DiffSide, DiffSide] | None = None
    for number, (ours, theirs) in enumerate(itertools.zip_longest(records, lines), start=1):
        run_count += ours is not None
        file_count += theirs is not None
        if first is None and not _same(ours, theirs):
            first = (DiffSide(number, ours), DiffSide(number, theirs))
    return RunDiff(
        run_id=run_id,
        kind=kind,
        file=str(path),
        run_lines=run_count,
        file_lines=file_count,
        run=None if first is None else first[0],
        file_side=None if first is None else first[1],
    )


def _same(ours: bytes | None, theirs: bytes | None) -> bool:
    if ours is None or theirs is None:
        return ours is theirs
    if ours == theirs:
        return True
    try:
        return bool(
            strict_json.loads(ours, allow_lone_surrogates=True)
            == strict_json.loads(theirs, allow_lone_surrogates=True)
        )
    except JsonInvalidError:
        return False


def _file_lines(path: Path) -> Iterator[bytes]:
    """The file's lines without their ``\\n``; a last line without one is a line too.

    Raises:
        InputMissingError: the file does not exist.
        InputError: it is a symlink or not a regular file.
        FileUnreadableError: it cannot be opened or (while iterating) read.
    """
    try:
        fd = open_nofollow(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError as exc:
        raise InputMissingError(f"{path} does not exist") from exc
    except UnsafePathError as exc:
        raise InputError(f"{path} is a symlink; give the file itself") from exc
    except OSError as exc:
        raise FileUnreadableError(f"{path} cannot be read: {describe_os_error(exc)}") from exc
    if not stat.S_ISREG(os.fstat(fd).st_mode):  # before fdopen, which refuses a folder
        os.close(fd)
        raise InputError(f"{path} is not a regular file")
    return _lines_of(os.fdopen(fd, "rb"), path)


def _lines_of(handle: BinaryIO, path: Path) -> Iterator[bytes]:
    with handle:
        try:
            for line in handle:
                yield line[:-1] if line.endswith(b"\n") else line
        except OSError as exc:
            raise FileUnreadableError(f"{path} cannot be read: {describe_os_error(exc)}") from exc
