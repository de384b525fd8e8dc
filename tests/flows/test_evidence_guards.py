"""Guards of recording and importing (:mod:`agc.flows`), called as a library: what a
failed write left on disk and the hint that finishes it, and the refusal to import a
run's own file into itself."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from agc.errors import (
    ArtifactSealedError,
    FileWriteError,
    InputError,
    StoreError,
    WriteFailedError,
)
from agc.flows import (
    StoreLayout,
    explain_write_failure,
    recover_hint,
    refuse_importing_own_file,
    run_on_disk,
)
from agc.integrity import open_run


def _unsealed(store: Path, records: int, run_id: str = "r1") -> None:
    run = open_run(run_id, store=store)
    for index in range(records):
        run.transcript.write({"n": index})
    run.transcript.flush()
    run.abort()  # what a failed write leaves: the records, no seal


def _sealed(store: Path, run_id: str = "r1") -> None:
    with open_run(run_id, store=store) as run:
        run.transcript.write({"n": 0})


@pytest.mark.parametrize(
    ("run_id", "store", "expected"),
    [
        ("r1", None, "agc recover r1"),
        ("r1", Path("/evidence"), "agc recover r1 --store /evidence"),
        ("r1", Path("/my store"), "agc recover r1 --store '/my store'"),
    ],
)
def test_recover_hint_is_a_shell_command_line(
    run_id: str, store: Path | None, expected: str
) -> None:
    assert recover_hint(run_id, store) == expected


def test_run_on_disk_counts_the_records_of_an_unsealed_run(tmp_path: Path) -> None:
    store = tmp_path / "store"
    assert run_on_disk("r1", store, "transcript") is None
    _unsealed(store, 3)
    found = run_on_disk("r1", store, "transcript")
    assert found is not None
    path, records, size = found
    assert path == StoreLayout(store).artifact_path("r1", "transcript")
    assert (records, size) == (3, path.stat().st_size)


@pytest.mark.parametrize(
    "exc",
    [
        FileWriteError("disk full", path="t", errno=errno.ENOSPC),
        WriteFailedError("disk full", records_written=2),
    ],
    ids=["file", "write"],
)
def test_a_machine_failure_with_records_on_disk_points_to_recover(
    tmp_path: Path, exc: StoreError
) -> None:
    store = tmp_path / "store"
    _unsealed(store, 2)
    explain_write_failure(exc, "r1", store, "transcript")
    assert exc.hint == (
        "The run is unsealed: its 2 complete records are intact. Free disk space, then "
        f"`agc recover r1 --store {store}` seals them."
    )


def test_another_failure_keeps_its_own_cure_first(tmp_path: Path) -> None:
    store = tmp_path / "store"
    _unsealed(store, 1)
    exc = StoreError("the chain folder is a file", hint="Remove the file.")
    explain_write_failure(exc, "r1", store, "transcript")
    assert exc.hint is not None
    assert exc.hint.startswith("The run is unsealed: its 1 complete record is intact. Remove")
    assert exc.hint.endswith("seals it.")


def test_nothing_on_disk_keeps_the_hint(tmp_path: Path) -> None:
    exc = FileWriteError("disk full", path="t", errno=errno.ENOSPC, hint="own hint")
    explain_write_failure(exc, "r1", tmp_path / "store", "transcript")
    assert exc.hint == "own hint"


def test_a_finished_run_used_again_keeps_its_own_hint(tmp_path: Path) -> None:
    store = tmp_path / "store"
    _sealed(store)
    exc = ArtifactSealedError("run r1 is sealed", hint="Use a new run id.")
    explain_write_failure(exc, "r1", store, "transcript")
    assert exc.hint == "Use a new run id."
    other = StoreError("the chain cannot be written")
    explain_write_failure(other, "r1", store, "transcript")
    assert other.hint is not None
    assert "store-chain link may be missing" in other.hint


def test_a_run_s_own_file_is_never_imported_into_it(tmp_path: Path) -> None:
    store = tmp_path / "store"
    _unsealed(store, 1)
    own = StoreLayout(store).artifact_path("r1", "transcript")
    handle = own.open("rb")
    with pytest.raises(InputError, match="is the transcript file of run r1 itself"):
        refuse_importing_own_file(handle, own, "r1", store=store, kind="transcript")
    assert handle.closed
    other = tmp_path / "other.jsonl"
    other.write_bytes(b"{}\n")
    with other.open("rb") as handle:
        refuse_importing_own_file(handle, other, "r1", store=store, kind="transcript")
        assert not handle.closed
