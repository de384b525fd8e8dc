"""Guards of recording and importing evidence: what a stopped or failed write left on
disk and how to finish it, and the refusal to import a run's own file into itself.

They combine the store layout and the writer's state (:mod:`agc.integrity`) into the
advice a user gets: a failed write leaves the complete records on disk, unsealed, and
``agc recover`` seals them.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import BinaryIO

from agc._core.store import ArtifactKind, StoreLayout, open_store
from agc._core.words import counted
from agc.errors import (
    AgcError,
    ArtifactSealedError,
    FileWriteError,
    InputError,
    StoreError,
    UnsealedRunError,
    UsageError,
    WriteFailedError,
)
from agc.integrity import chain_pending_path, read_manifest, run_is_sealed

__all__ = [
    "explain_write_failure",
    "recover_hint",
    "refuse_importing_own_file",
    "run_on_disk",
]


def recover_hint(run_id: str, store: Path | None) -> str:
    """The ``agc recover`` command line for a run (with ``--store`` when one was given),
    quoted for a POSIX shell."""
    words = ["agc", "recover", run_id]
    if store is not None:
        words += ["--store", str(store)]
    return shlex.join(words)


def _written_in_place(store: Path | None) -> StoreLayout | None:
    """The layout of the store's folder when the store is written in place
    (:attr:`~agc._core.storage.Store.folder`); ``None`` for a store written object by
    object, whose staging describes itself in its own errors."""
    folder = open_store(store).folder
    return None if folder is None else StoreLayout(folder)


def run_on_disk(
    run_id: str, store: Path | None, kind: ArtifactKind
) -> tuple[Path, int, int] | None:
    """``(path, records, bytes)`` of the run's ``kind`` file (``transcript`` or
    ``tool-events``) in a store written in place (a folder), or ``None`` if there is
    none, it cannot be read or the store is written object by object. Records are
    counted as newlines. Never raises."""
    try:
        layout = _written_in_place(store)
    except UsageError:  # not a store at all: nothing of it is on disk
        return None
    if layout is None:
        return None
    path = layout.artifact_path(run_id, kind)
    try:
        with path.open("rb") as handle:
            records = size = 0
            while chunk := handle.read(1 << 20):
                records += chunk.count(b"\n")
                size += len(chunk)
    except OSError:  # absent, or the store itself cannot be read
        return None
    return path, records, size


def _sealed_and_linked(layout: StoreLayout, run_id: str) -> bool:
    """Whether the run is closed and its store-chain link was completed (no link of the
    store is pending), so nothing is left for `agc recover` to do."""
    try:
        manifest = read_manifest(layout, run_id)
    except AgcError:
        return False
    if manifest is None or not manifest.closed or manifest.chain is None:
        return False
    return not os.path.lexists(chain_pending_path(layout))


def explain_write_failure(
    exc: StoreError, run_id: str, store: Path | None, kind: ArtifactKind
) -> None:
    """Set ``exc.hint`` for a write of run ``run_id`` that failed midway (a full disk …):
    point to ``agc recover`` when records are on disk (the run is unsealed), keep the
    error's own hint otherwise. An object store's errors keep their own hints (its
    staging is described there); so does a run id used again for a finished run.
    Changes only the hint; never raises."""
    layout = _written_in_place(store)
    if layout is None:
        return
    if isinstance(exc, ArtifactSealedError) and _sealed_and_linked(layout, run_id):
        # A finished run (a run id used again) was not touched: its own hint (a new run
        # id) fits, not one about a write that failed.
        return
    if isinstance(exc, UnsealedRunError):
        # The run was left unsealed before this write began (a crash): nothing of this
        # write is in it, and a writer never continues it.
        exc.hint = (
            f"`{recover_hint(run_id, store)}` seals the crashed run; record the new input "
            "under another run id."
        )
        return
    found = run_on_disk(run_id, store, kind)
    if all(run_is_sealed(layout, run_id, k) for k in ("transcript", "tool-events")):
        exc.hint = (
            "The run is sealed but its store-chain link may be missing; once the disk can "
            f"be written, `{recover_hint(run_id, store)}` adds it."
        )
    elif found is not None and found[1] > 0:
        # A machine's failure is cured by space; any other keeps its own hint first (a
        # folder where the chain intent goes is not cured by freeing space).
        cure = (
            "Free disk space"
            if isinstance(exc, (FileWriteError, WriteFailedError))
            else (f"{exc.hint.rstrip('.')}" if exc.hint else "Fix the cause above")
        )
        exc.hint = (
            f"The run is unsealed: its {counted(found[1], 'complete record', grouped=True)} "
            f"{'is' if found[1] == 1 else 'are'} intact. {cure}, "
            f"then `{recover_hint(run_id, store)}` seals {'it' if found[1] == 1 else 'them'}."
        )


def refuse_importing_own_file(
    handle: BinaryIO, file: Path, run_id: str, *, store: Path | None, kind: ArtifactKind
) -> None:
    """Refuse to import ``file`` (open as ``handle``) when it is the very ``kind`` file
    of run ``run_id`` in the folder store: reading the file the writer appends to would
    copy it into itself forever. Closes ``handle`` when it refuses; an object store is
    never refused.

    Raises:
        InputError: ``file`` is the run's own file (exit 2).
    """
    layout = _written_in_place(store)
    if layout is None:
        return
    target = layout.artifact_path(run_id, kind)
    if target.exists() and os.path.samestat(target.lstat(), os.fstat(handle.fileno())):
        handle.close()
        raise InputError(f"{file} is the {kind} file of run {run_id} itself")
