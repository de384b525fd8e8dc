"""``observe_artifact`` reads a small file whole and judges it from memory; a file larger
than ``IN_MEMORY_BYTES`` is streamed. Differential: for any bytes on disk and any seal
(none, matching, stale; earlier segments that match or not; re-opened; checkpoints),
both paths observe the same facts, and the run's report is the same."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agc._core.checkpoint import Checkpoint, format_checkpoint
from agc._core.digest import Algorithm, new_hasher
from agc._core.sidecar import format_sidecar
from agc._core.store import StoreLayout
from agc.integrity import ArtifactSeal, check_run
from agc.integrity import _verify as verify_module
from agc.integrity._verify import ArtifactObservation, observe_artifact
from tests.conftest import examples
from tests.integrity.evidence_helpers import write_run

REACHES_INSIDE = {
    "agc.integrity._verify": "the artifact observer and judge, and its in-memory size limit",
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


def _observe_both(
    folder: Path, case: tuple[bytes, ArtifactSeal | None, list[Checkpoint], bool]
) -> tuple[ArtifactObservation, ArtifactObservation]:
    on_disk, seal, checkpoints, with_sidecar = case
    path = folder / "r.jsonl"
    path.write_bytes(on_disk)
    if checkpoints:
        (folder / "r.jsonl.ckpt").write_bytes(b"".join(map(format_checkpoint, checkpoints)))
    if with_sidecar:
        (folder / "r.jsonl.b3").write_bytes(format_sidecar(_hex(on_disk, "blake3"), "r.jsonl"))
    fast = observe_artifact(path, "transcript", seal=seal)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(verify_module, "IN_MEMORY_BYTES", -1)  # every file streamed
        streamed = observe_artifact(path, "transcript", seal=seal)
    return fast, streamed


@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_cases())
def test_in_memory_and_streamed_observations_are_the_same(
    case: tuple[bytes, ArtifactSeal | None, list[Checkpoint], bool],
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        fast, streamed = _observe_both(Path(folder), case)
    assert fast == streamed
    findings: list[Any] = verify_module.judge_artifact(fast, seal=case[1])
    assert findings == verify_module.judge_artifact(streamed, seal=case[1])


def test_a_file_at_the_limit_is_read_whole_and_one_past_it_streamed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(verify_module, "IN_MEMORY_BYTES", 8)
    reads: list[int] = []
    real = os.read

    def read(fd: int, size: int) -> bytes:
        reads.append(size)
        return real(fd, size)

    monkeypatch.setattr(os, "read", read)
    path = tmp_path / "r.jsonl"
    path.write_bytes(b"1234567\n")
    at_limit = observe_artifact(path, "transcript", seal=None)
    assert reads == [8]
    path.write_bytes(b"12345678\n")
    reads.clear()
    past = observe_artifact(path, "transcript", seal=None)
    assert reads == []
    assert (at_limit.records, past.records) == (1, 1)
    assert past.digest == _hex(b"12345678\n", "blake3")


def test_a_file_shorter_than_fstat_said_is_streamed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file truncated between fstat and read: the short read is not judged as the file."""
    path = tmp_path / "r.jsonl"
    path.write_bytes(b"one\ntwo\n")
    real = os.read
    monkeypatch.setattr(os, "read", lambda fd, size: real(fd, size)[:-1])
    observed = observe_artifact(path, "transcript", seal=None)
    assert observed.digest == _hex(b"one\ntwo\n", "blake3")  # streamed: the whole file
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
def test_a_run_report_is_the_same_either_way(
    store: Path, monkeypatch: pytest.MonkeyPatch, tamper: str
) -> None:
    write_run(store, "r1", seed=1, count=3)
    path = StoreLayout.at(store).artifact_path("r1", "transcript")
    path.write_bytes(_TAMPER[tamper](path.read_bytes()))
    fast = check_run("r1", store).to_dict()
    monkeypatch.setattr(verify_module, "IN_MEMORY_BYTES", -1)
    assert fast == check_run("r1", store).to_dict()


def test_a_fifo_swapped_in_after_the_type_check_is_not_waited_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An attacker who writes the store swaps a FIFO in for the transcript between the
    # lstat and the open: opening it for reading waited for a writer, for ever.
    import stat as stat_module  # noqa: PLC0415
    import threading  # noqa: PLC0415

    path = tmp_path / "t.jsonl"
    os.mkfifo(path)
    real_lstat = os.lstat
    regular = os.stat_result((stat_module.S_IFREG | 0o644, *real_lstat(tmp_path)[1:]))

    def lstat(target: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        return regular if Path(target) == path else real_lstat(target, *args, **kwargs)

    monkeypatch.setattr(os, "lstat", lstat)
    seen: list[ArtifactObservation] = []
    worker = threading.Thread(
        target=lambda: seen.append(observe_artifact(path, "transcript", seal=None)), daemon=True
    )
    worker.start()
    worker.join(timeout=10)
    if worker.is_alive():  # unblock it: a writer appears
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
        worker.join(timeout=10)
        pytest.fail("observe_artifact waited on a FIFO")
    assert [o.file_type for o in seen] == ["other"]
