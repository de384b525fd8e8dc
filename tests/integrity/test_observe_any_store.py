"""The one run reader observes an artifact in one streamed pass whatever the store and
whatever the size of its reads. Differential: for any bytes and any seal (none,
matching, stale; earlier segments that match or not; re-opened; checkpoints), a folder
read in whole chunks, a folder read a few bytes at a time and an in-memory bucket give
the same observation, and a run's report is the same."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agc._core import folderstore as folderstore_module
from agc._core.checkpoint import Checkpoint, format_checkpoint
from agc._core.digest import Algorithm, new_hasher
from agc._core.folderstore import FolderStore
from agc._core.memstore import MemoryStore
from agc._core.sidecar import format_sidecar
from agc._core.storage import Store
from agc._core.store import StoreLayout
from agc.errors import StoreError
from agc.integrity import ArtifactSeal, check_run
from agc.integrity import _run_reader as run_reader
from agc.integrity._judge import ArtifactObservation, judge_artifact
from tests.conftest import examples
from tests.integrity.evidence_helpers import write_run

REACHES_INSIDE = {
    "agc.integrity._run_reader": "the one artifact observer, on two stores",
    "agc.integrity._judge": "the pure judgement of an observation",
}


def _hex(data: bytes, algorithm: Algorithm) -> str:
    hasher = new_hasher(algorithm)
    hasher.update(data)
    return hasher.hexdigest()


_LINES = st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"") + b"\n"), max_size=8)


@st.composite
def _cases(draw: st.DrawFn) -> tuple[bytes, ArtifactSeal | None, list[Checkpoint], bool]:
    """(bytes on disk, the seal, checkpoints, a sidecar beside the file)."""
    algorithm: Algorithm = draw(st.sampled_from(["blake3", "sha256"]))
    sealed = b"".join(draw(_LINES))
    on_disk = draw(
        st.one_of(
            st.just(sealed),  # untouched
            st.binary(max_size=300),  # anything
            st.just(sealed + b"".join(draw(_LINES))),  # appended records
            st.just(sealed + draw(st.binary(min_size=1, max_size=9))),  # appended, torn
            st.just(sealed[: draw(st.integers(0, max(0, len(sealed) - 1)))]),  # truncated
            st.builds(  # one byte changed
                lambda i, b: sealed[:i] + bytes([b]) + sealed[i + 1 :] if sealed else bytes([b]),
                st.integers(0, max(0, len(sealed) - 1)),
                st.integers(0, 255),
            ),
        )
    )
    cuts = sorted(draw(st.lists(st.integers(0, len(sealed)), max_size=3)))
    segments = tuple(
        {
            "records": sealed[:cut].count(b"\n"),
            "bytes": draw(st.sampled_from([cut, cut + 1, cut + 10_000])),
            "digest": draw(st.sampled_from([_hex(sealed[:cut], algorithm), "0" * 64, ""])),
            "sealed_at_ms": 1,
        }
        for cut in cuts
    )
    seal = draw(
        st.one_of(
            st.none(),
            st.builds(
                lambda digest, reopened: ArtifactSeal(
                    kind="transcript",
                    file="r.jsonl",
                    algorithm=algorithm,
                    digest=digest,
                    bytes=len(sealed),
                    records=sealed.count(b"\n"),
                    last_seq=None,
                    sealed_at_ms=1,
                    segments=segments,
                    reopened_at_ms=reopened,
                ),
                st.sampled_from([_hex(sealed, algorithm), "f" * 64]),
                st.sampled_from([None, 5]),
            ),
        )
    )
    checkpoints = [
        Checkpoint(
            records=on_disk[:cut].count(b"\n"),
            bytes=cut,
            algorithm=algorithm,
            digest=draw(st.sampled_from([_hex(on_disk[:cut], algorithm), "0" * 64])),
            ts=1,
        )
        for cut in sorted(draw(st.lists(st.integers(0, len(on_disk) + 5), max_size=3)))
    ]
    return on_disk, seal, checkpoints, draw(st.booleans())


def _observe_in(store: Store, seal: ArtifactSeal | None) -> ArtifactObservation:
    return run_reader._observe(store, "r", "transcript", seal, None, {})


def _observe_everywhere(
    folder: Path, case: tuple[bytes, ArtifactSeal | None, list[Checkpoint], bool]
) -> list[ArtifactObservation]:
    """The one observer on the same bytes: in a folder read in 1 MiB reads, in a folder
    read 7 bytes at a time, and in an in-memory bucket."""
    on_disk, seal, checkpoints, with_sidecar = case
    files = {"audit/transcripts/r.jsonl": on_disk}
    if checkpoints:
        files["audit/transcripts/r.jsonl.ckpt"] = b"".join(map(format_checkpoint, checkpoints))
    if with_sidecar:
        files["audit/transcripts/r.jsonl.b3"] = format_sidecar(_hex(on_disk, "blake3"), "r.jsonl")
    memory = MemoryStore()
    for name, data in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
        memory.put_new(name, data)
    whole = _observe_in(FolderStore(folder), seal)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(folderstore_module, "_CHUNK", 7)  # every file in many pieces
        pieces = _observe_in(FolderStore(folder), seal)
    return [whole, pieces, _observe_in(memory, seal)]


@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_cases())
def test_observations_are_the_same_in_any_store_and_any_read_size(
    case: tuple[bytes, ArtifactSeal | None, list[Checkpoint], bool],
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        whole, pieces, memory = _observe_everywhere(Path(folder), case)
    assert pieces == whole
    assert memory == whole
    assert whole.digest == _hex(case[0], whole.algorithm or "blake3")
    findings: list[Any] = judge_artifact(whole, seal=case[1])
    assert findings == judge_artifact(pieces, seal=case[1])


def test_a_short_read_is_not_judged_as_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reads that return fewer bytes than asked: the rest is read, never taken as the
    file's end."""
    path = tmp_path / "audit/transcripts/r.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"one\ntwo\n")
    real = os.read
    monkeypatch.setattr(os, "read", lambda fd, size: real(fd, max(1, size - 1)))
    observed = _observe_in(FolderStore(tmp_path), None)
    assert observed.digest == _hex(b"one\ntwo\n", "blake3")
    assert (observed.bytes, observed.records) == (8, 2)
    assert observed.ends_with_newline


_TAMPER: dict[str, Callable[[bytes], bytes]] = {
    "untouched": lambda data: data,
    "byte-flip": lambda data: data[:3] + bytes([data[3] ^ 1]) + data[4:],
    "truncated": lambda data: data[:-5],
    "appended": lambda data: data + b'{"role":"user"}\n',
    "appended-torn": lambda data: data + b'{"ro',
    "emptied": lambda data: b"",
}


@pytest.mark.parametrize("tamper", list(_TAMPER), ids=list(_TAMPER))
def test_a_run_report_is_the_same_whatever_the_read_size(
    store: Path, monkeypatch: pytest.MonkeyPatch, tamper: str
) -> None:
    write_run(store, "r1", seed=1, count=3)
    path = StoreLayout.at(store).artifact_path("r1", "transcript")
    path.write_bytes(_TAMPER[tamper](path.read_bytes()))
    whole = check_run("r1", store).to_dict()
    monkeypatch.setattr(folderstore_module, "_CHUNK", 3)
    assert whole == check_run("r1", store).to_dict()


def test_a_fifo_swapped_in_after_the_type_check_is_not_waited_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An attacker who writes the store swaps a FIFO in for the transcript between the
    # lstat and the open: opening it for reading waited for a writer, for ever.
    import stat as stat_module  # noqa: PLC0415
    import threading  # noqa: PLC0415

    path = tmp_path / "audit/transcripts/r.jsonl"
    path.parent.mkdir(parents=True)
    os.mkfifo(path)
    real_lstat = os.lstat
    regular = os.stat_result((stat_module.S_IFREG | 0o644, *real_lstat(tmp_path)[1:]))

    def lstat(target: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        return regular if Path(target) == path else real_lstat(target, *args, **kwargs)

    monkeypatch.setattr(os, "lstat", lstat)
    seen: list[StoreError] = []

    def observe() -> None:
        try:
            _observe_in(FolderStore(tmp_path), None)
        except StoreError as exc:
            seen.append(exc)

    worker = threading.Thread(target=observe, daemon=True)
    worker.start()
    worker.join(timeout=10)
    if worker.is_alive():  # unblock it: a writer appears
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
        worker.join(timeout=10)
        pytest.fail("the reader waited on a FIFO")
    # Refused as not a regular file (exit 3), never read.
    assert [str(e.message) for e in seen] == [f"{path} is not a regular file"]
