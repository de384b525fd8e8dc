"""Continue a sealed run from its grown input: a new segment when the old is a prefix.

A session file keeps growing after it was imported (a resumed session appends to it).
Importing it again must neither refuse it (the run id is taken) nor seal a second copy:
when the records the sealed run holds are exactly the first records the grown file
gives, the rest is appended as a new segment of each artifact (the sealed bytes are
verified first, :class:`~agc.integrity._writer.JsonlWriter` with ``reopen=True``);
when they are not, the file was changed where it had been sealed, and nothing is
written.
"""

from __future__ import annotations

import itertools
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Literal

from agc._core import json as strict_json
from agc._core.digest import Algorithm
from agc._core.fs import open_regular_file
from agc._core.store import (
    ARTIFACT_KINDS,
    ArtifactKind,
    StoreArg,
    StoreLayout,
    folder_store,
    remote_store,
)
from agc.errors import UsageError
from agc.integrity._ingest import _STAMP, Companion, ingest_lines, ingest_stream
from agc.integrity._signing import SigningKey
from agc.integrity._store_io import read_manifest
from agc.integrity._writer import JsonlWriter, ToolEventWriter, TranscriptWriter

__all__ = ["Extension", "extend_run", "sealed_prefix_differs"]

_WRITER_STAMPS = ("seq", "ts", "run_id")


@dataclass(frozen=True)
class Extension:
    """What :func:`extend_run` did.

    Attributes:
        run_id: the run.
        status: ``appended`` (a new segment), ``unchanged`` (the input gives exactly
            the sealed records), ``diverges`` (the sealed records are not a prefix of
            the input's: nothing written) or ``unsealed`` (the run is not sealed:
            nothing written; ``agc recover`` seals it).
        added: records appended, by artifact kind.
        kind / line: where the input first differs from the sealed run (``diverges``):
            the artifact and the 1-based record number.
    """

    run_id: str
    status: Literal["appended", "unchanged", "diverges", "unsealed"]
    added: dict[str, int]
    kind: ArtifactKind | None = None
    line: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "status": self.status,
            "added": dict(self.added),
            "kind": self.kind,
            "line": self.line,
        }


def _lines(path: Path) -> Iterator[bytes]:
    try:
        with open_regular_file(path) as handle:
            yield from handle
    except FileNotFoundError:
        return


def _unstamped(line: bytes) -> bytes:
    return _STAMP.sub(rb"{\1", line, count=1)


def _first_difference(new: Iterator[bytes], kept: Iterator[bytes]) -> int | None:
    """The 1-based number of the first of the ``kept`` (sealed) records that ``new``
    lacks or holds otherwise (all but ``ts``), ``None`` when ``new`` begins with all of
    them; ``new`` is left after them."""
    for number, theirs in enumerate(kept, 1):
        ours = next(new, None)
        if ours is None or _unstamped(ours) != _unstamped(theirs):
            return number
    return None


def sealed_prefix_differs(
    stream: BinaryIO, run_id: str, store: StoreArg = None, *, records: int
) -> int | None:
    """Whether the first ``records`` sealed transcript records of the run are what
    ``stream`` (the input they were ingested from) gives: ``None`` when they are, else
    the 1-based number of the first that differs or that ``stream`` lacks.

    ``stream``'s lines are written by the ingest rule
    (:func:`~agc.integrity._ingest.ingest_lines`) into a scratch store and compared
    record for record, all but ``ts``, as :func:`extend_run` compares a grown input. A
    folder store only.

    Raises:
        as :class:`~agc.integrity._writer.TranscriptWriter` and
        :func:`~agc.integrity._ingest.ingest_lines`.
    """
    layout = StoreLayout.at(folder_store(store))
    with tempfile.TemporaryDirectory(prefix="agc-prefix-") as scratch:
        writer = TranscriptWriter(run_id, store=scratch, fsync="none")
        try:
            ingest_lines(stream, writer)
            writer.flush()
            new = _lines(StoreLayout.at(scratch).artifact_path(run_id, "transcript"))
            kept = itertools.islice(_lines(layout.artifact_path(run_id, "transcript")), records)
            return _first_difference(new, kept)
        finally:
            writer.abort()


def extend_run(
    stream: BinaryIO,
    run_id: str,
    *,
    store: StoreArg = None,
    algorithm: Algorithm | None = None,
    signing_key: SigningKey | None = None,
    companion: Callable[[], Companion] | None = None,
    kinds: tuple[ArtifactKind, ...] = ARTIFACT_KINDS,
) -> Extension:
    """Append to the sealed run ``run_id`` what ``stream`` (its grown input) adds.

    ``stream`` is ingested as :func:`~agc.integrity._ingest.ingest_stream` would (with
    ``companion`` for the tool-events) into a scratch store; each artifact's sealed
    records must equal its first records (all but ``ts``), and the records after them
    are appended as a new segment, sealed (the manifest's attributes stay those of the
    first seal). A folder store only.

    Args:
        kinds: the artifacts compared and continued; the others are left as they are
            (a run whose tool-events another writer keeps: a client's hooks).

    Raises:
        UsageError: ``store`` is an object store.
        as :class:`~agc.integrity._writer.JsonlWriter` (``reopen=True``) and
        :func:`~agc.integrity._ingest.ingest_stream` for the input.
    """
    if remote_store(store) is not None:
        raise UsageError("a grown session file is appended to a run in a folder store only")
    folder = folder_store(store)
    layout = StoreLayout.at(folder)
    manifest = read_manifest(layout, run_id)
    if manifest is None or not manifest.closed:
        return Extension(run_id, "unsealed", {})
    with tempfile.TemporaryDirectory(prefix="agc-extend-") as scratch:
        ingest_stream(
            stream,
            run_id,
            store=scratch,
            algorithm=algorithm or manifest.artifacts["transcript"].algorithm,
            companion=companion,
        )
        fresh = StoreLayout.at(scratch)
        extra: dict[ArtifactKind, list[bytes]] = {}
        for kind in kinds:
            new = _lines(fresh.artifact_path(run_id, kind))
            kept = _lines(layout.artifact_path(run_id, kind))
            differs = _first_difference(new, kept)
            if differs is not None:
                return Extension(run_id, "diverges", {}, kind=kind, line=differs)
            rest = list(new)
            if rest:
                extra[kind] = rest
    if not extra:
        return Extension(run_id, "unchanged", {})
    added: dict[str, int] = {}
    for kind, lines in extra.items():
        writer_class: type[JsonlWriter] = (
            TranscriptWriter if kind == "transcript" else ToolEventWriter
        )
        seal = manifest.artifacts[kind]
        with writer_class(
            run_id, store=folder, algorithm=seal.algorithm, signing_key=signing_key, reopen=True
        ) as writer:
            for line in lines:
                record = strict_json.loads(line)
                for member in _WRITER_STAMPS:
                    record.pop(member, None)
                writer.write(record)
        added[kind] = len(lines)
    return Extension(run_id, "appended", added)
