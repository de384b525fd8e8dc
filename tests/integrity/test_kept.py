"""``agc.integrity._kept``: a run's artifact copied once and checked against what the
verification judged."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agc._core.store import StoreLayout
from agc.errors import InputError, StoreError
from agc.integrity import KeptArtifact, check_run, check_run_kept
from agc.integrity import _run_reader as run_reader
from tests.conftest import examples, write_legacy_run_with_shared_tool_events, write_run

REACHES_INSIDE = {
    "agc.integrity._run_reader": "wraps the kept-copy check's run check to edit the store after it",
}

# What a writer of the store may do to a run before it is checked (the check judges it)
# and after the check (the copy, made from the check's own read, never sees it).
_EDITS = ("none", "flip", "truncate", "append", "delete", "sidecar-gone", "manifest-gone")


def _edit(store: Path, edit: str, position: int) -> None:
    folder = store / "audit"
    transcript = folder / "transcripts" / "r1.jsonl"
    data = transcript.read_bytes()
    index = position % len(data)
    if edit == "flip":
        transcript.write_bytes(data[:index] + bytes([data[index] ^ 1]) + data[index + 1 :])
    elif edit == "truncate":
        transcript.write_bytes(data[:index])
    elif edit == "append":
        transcript.write_bytes(data + b'{"forged":true}\n')
    elif edit == "delete":
        transcript.unlink()
    elif edit == "sidecar-gone":
        (folder / "transcripts" / "r1.jsonl.b3").unlink()
    elif edit == "manifest-gone":
        (folder / "manifests" / "r1.json").unlink()


@settings(max_examples=examples(40), deadline=None)
@given(
    records=st.lists(
        # "seq" and "ts" are the writer's own keys: a record holding one is refused.
        st.dictionaries(
            st.text(max_size=5).filter(lambda key: key not in {"seq", "ts"}),
            st.text(max_size=20),
        ),
        min_size=1,
    ),
    edit=st.sampled_from(_EDITS),
    position=st.integers(min_value=0),
)
def test_the_verdict_is_check_runs_and_a_complete_copy_is_the_file(
    records: list[dict[str, Any]], edit: str, position: int
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        store = Path(folder)
        write_run(store, transcript=records)
        _edit(store, edit, position)
        report, kept = check_run_kept("r1", store)
        with kept:
            assert report.to_dict() == check_run("r1", store).to_dict()
            if report.complete:
                path = store / "audit" / "transcripts" / "r1.jsonl"
                assert kept.read
                assert kept.file.read() == path.read_bytes()


@settings(max_examples=examples(40), deadline=None)
@given(
    edit=st.sampled_from(_EDITS[1:]),
    position=st.integers(min_value=0),
)
def test_a_change_after_the_check_never_reaches_the_copy(edit: str, position: int) -> None:
    # The check passes, then the store changes before the copy is used: the copy was
    # made from the check's own read, so it is the sealed bytes and the verdict stands.
    with tempfile.TemporaryDirectory() as folder:
        store = Path(folder)
        write_run(store, transcript=[{"n": n} for n in range(5)])
        sealed = (store / "audit" / "transcripts" / "r1.jsonl").read_bytes()
        real = run_reader.check_store_run
        calls: list[int] = []

        def check_then_edit(*args: Any, **kwargs: Any) -> Any:
            report = real(*args, **kwargs)
            _edit(store, edit, position)
            calls.append(1)
            return report

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(run_reader, "check_store_run", check_then_edit)
            report, kept = check_run_kept("r1", store)
        with kept:
            copy = kept.file.read() if kept.read else None
        assert calls == [1]
        assert copy == sealed
        assert report.complete


def test_a_copy_larger_than_the_spool_goes_to_a_private_temporary_file(tmp_path: Path) -> None:
    write_run(tmp_path, transcript=[{"text": "x" * 1000} for _ in range(50)])
    report, kept = check_run_kept("r1", tmp_path, spool_bytes=4096)
    with kept:
        assert report.complete
        assert kept.file._rolled  # type: ignore[attr-defined]  # SpooledTemporaryFile's state
        assert os.fstat(kept.file.fileno()).st_mode & 0o077 == 0


def test_a_copy_that_cannot_be_written_is_exit_3_not_a_verdict() -> None:
    kept = KeptArtifact("transcript", "/store/r1.jsonl", spool_bytes=0)

    class Full:
        def write(self, data: bytes) -> int:
            raise OSError(28, "No space left on device")

        def close(self) -> None:
            pass

    kept.file = Full()  # type: ignore[assignment]
    kept.begin()
    with pytest.raises(StoreError) as caught:
        kept.write(b"x")
    assert caught.value.exit_code == 3
    assert "TMPDIR" in (caught.value.hint or "")


def test_an_artifact_absent_at_the_check_and_the_copy_keeps_the_verdict(tmp_path: Path) -> None:
    # Nothing was judged and nothing read: no "changed after the check" on a store that
    # nobody touched (agc export --kind tool-events then says the file is not there).
    write_legacy_run_with_shared_tool_events(tmp_path)
    report, kept = check_run_kept("r1", tmp_path, kind="tool-events")
    with kept:
        assert report.complete
        assert report.to_dict() == check_run("r1", tmp_path).to_dict()
        assert not kept.read


def test_a_legacy_transcript_copy_is_checked_against_its_sha256_sidecar(tmp_path: Path) -> None:
    write_legacy_run_with_shared_tool_events(tmp_path)
    path = StoreLayout(tmp_path).artifact_path("r1", "transcript")
    report, kept = check_run_kept("r1", tmp_path)
    with kept:
        assert report.complete
        assert kept.file.read() == path.read_bytes()


_COPY_IN_A_CHILD = """
import resource, signal, sys
from agc.errors import InputError, StoreError
from agc.integrity._kept import check_run_kept
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[2]), int(sys.argv[2])))
try:
    report, kept = check_run_kept("r1", sys.argv[1], spool_bytes=1024)
except StoreError as exc:
    print("StoreError", exc.exit_code, exc.message)
except BaseException as exc:
    print("unexpected", type(exc).__name__, exc)
else:
    print("ok", report.complete, kept.size)
"""


@pytest.mark.skipif(not hasattr(signal, "SIGXFSZ"), reason="needs POSIX file-size limits")
@pytest.mark.parametrize("short_by", [20_000, 100, 1])
def test_a_temporary_folder_that_fills_at_any_byte_is_exit_3(tmp_path: Path, short_by: int) -> None:
    # A file-size limit makes the temporary folder "full" at an exact byte, for real
    # (EFBIG, as ENOSPC): the last bytes of the copy are still buffered when it fills,
    # so the failure shows when the copy is read back or closed, not while writing.
    store = tmp_path / "store"
    write_run(store, transcript=[{"text": "x" * 1000} for _ in range(100)])
    size = (store / "audit" / "transcripts" / "r1.jsonl").stat().st_size
    (tmp_path / "tmp").mkdir()
    child = subprocess.run(
        [sys.executable, "-B", "-c", _COPY_IN_A_CHILD, str(store), str(size - short_by)],
        env={**os.environ, "TMPDIR": str(tmp_path / "tmp")},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    output = child.stdout + child.stderr
    assert child.stdout.startswith("StoreError 3 cannot keep a copy of "), output


@pytest.mark.parametrize("thing", ["folder", "fifo"])
def test_a_folder_or_fifo_in_place_of_the_transcript_is_a_verdict_never_read(
    tmp_path: Path, thing: str
) -> None:
    write_run(tmp_path)
    path = StoreLayout(tmp_path).artifact_path("r1", "transcript")
    path.unlink()
    if thing == "folder":
        path.mkdir()
    else:
        os.mkfifo(path)  # opened without blocking: no writer is waited for
    report, kept = check_run_kept("r1", tmp_path)
    with kept:
        assert report.to_dict() == check_run("r1", tmp_path).to_dict()
        assert "not-regular-file" in {f.code for f in report.findings}
        assert not kept.read


def test_a_spool_of_zero_bytes_keeps_every_copy_in_a_temporary_file(tmp_path: Path) -> None:
    # "In memory up to spool_bytes": zero is none at all, never "no limit".
    write_run(tmp_path, transcript=[{"text": "x" * 100} for _ in range(50)])
    report, kept = check_run_kept("r1", tmp_path, spool_bytes=0)
    with kept:
        assert report.complete
        assert kept.file._rolled  # type: ignore[attr-defined]  # SpooledTemporaryFile's state


def test_an_artifact_larger_than_max_bytes_is_refused_before_a_byte_is_copied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_run(tmp_path, transcript=[{"text": "x" * 1000} for _ in range(50)])
    size = (tmp_path / "audit" / "transcripts" / "r1.jsonl").stat().st_size
    copied: list[int] = []
    write = KeptArtifact.write

    def counting(self: KeptArtifact, chunk: bytes, /) -> None:
        copied.append(len(chunk))
        write(self, chunk)

    monkeypatch.setattr(KeptArtifact, "write", counting)
    with pytest.raises(InputError, match=f"larger than {size - 1} bytes"):
        check_run_kept("r1", tmp_path, spool_bytes=0, max_bytes=size - 1)
    assert copied == []
    report, kept = check_run_kept("r1", tmp_path, spool_bytes=0, max_bytes=size)
    with kept:
        assert report.complete
        assert kept.size == size


def test_a_copy_that_grows_past_max_bytes_while_read_is_refused() -> None:
    kept = KeptArtifact("transcript", "/store/r1.jsonl", max_bytes=10)
    with kept:
        kept.begin(size=6)  # what fstat said; the file grew meanwhile
        kept.write(b"123456")
        with pytest.raises(InputError, match="larger than 10 bytes"):
            kept.write(b"12345")
        assert kept.size == 6
