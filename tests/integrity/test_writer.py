"""Tests for agc.integrity._writer: append-only, hash-while-writing, sealed on close."""

from __future__ import annotations

import errno
import gc
import json
import os
import stat
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agc._core.digest import new_hasher
from agc._core.jsonl import JsonlFileWriter, SidecarSeal
from agc._core.store import RunId, StoreLayout
from agc.errors import (
    ArtifactSealedError,
    RecordInvalidError,
    RunExistsError,
    RunIdInvalidError,
    RunLockedError,
    StoreError,
    TornTailError,
    UnsafePathError,
    UnsealedRunError,
    WriterClosedError,
)
from agc.exitcodes import ExitCode
from agc.integrity import ToolEventWriter, TranscriptWriter, check_run, open_run, recover_run
from tests._core.test_store import BAD_RUN_IDS
from tests.conftest import examples, finding_codes, fixed_clock, tree, write_run


def _transcript(store: Path, run_id: str = "r1") -> Path:
    return StoreLayout(store).artifact_path(run_id, "transcript")


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_bytes().split(b"\n")[:-1]]


def _digest(data: bytes, algorithm: Any = "blake3") -> str:
    hasher = new_hasher(algorithm)
    hasher.update(data)
    return hasher.hexdigest()


# -- format --------------------------------------------------------------------------


def test_close_writes_sidecar_matching_file_bytes(store: Path) -> None:
    with TranscriptWriter("r1", store=store) as writer:
        writer.write({"role": "user", "content": "hi"})
    path = _transcript(store)
    sidecar = (path.parent / "r1.jsonl.b3").read_text()
    assert sidecar == f"{_digest(path.read_bytes())}  r1.jsonl\n"
    assert json.loads(path.read_bytes())["seq"] == 0


def test_sha256_is_selectable(store: Path) -> None:
    with TranscriptWriter("r1", store=store, algorithm="sha256") as writer:
        writer.write({"a": 1})
    path = _transcript(store)
    assert (path.parent / "r1.jsonl.sha256").read_text() == (
        f"{_digest(path.read_bytes(), 'sha256')}  r1.jsonl\n"
    )
    assert not (path.parent / "r1.jsonl.b3").exists()


def test_records_get_seq_ts_and_tool_events_get_run_id(store: Path) -> None:
    clock = fixed_clock(1000)
    with open_run("r1", store=store, clock=clock) as run:
        assert [run.transcript.write({"n": n}) for n in range(3)] == [0, 1, 2]
        run.tool_events.write({"event": "start"})
        run.tool_events.write({"event": "end", "run_id": "r1"})
    layout = StoreLayout(store)
    transcript = _lines(layout.artifact_path("r1", "transcript"))
    events = _lines(layout.artifact_path("r1", "tool-events"))
    assert [r["seq"] for r in transcript] == [0, 1, 2]
    assert [r["n"] for r in transcript] == [0, 1, 2]
    assert [r["seq"] for r in events] == [0, 1]
    assert all(r["run_id"] == "r1" for r in events)
    assert "run_id" not in transcript[0]
    stamps = [r["ts"] for r in transcript + events]
    assert len(set(stamps)) == len(stamps)
    assert all(1000 <= ts < 1100 for ts in stamps)


def test_lines_split_only_on_newline_u2028_round_trips(store: Path) -> None:
    text = "a\u2028b\u2029c\r\x85d"
    with TranscriptWriter("r1", store=store) as writer:
        writer.write({"text": text})
    data = _transcript(store).read_bytes()
    assert data.count(b"\n") == 1
    assert "\u2028".encode() in data
    assert _lines(_transcript(store))[0]["text"] == text


def test_seal_facts_are_recorded_in_the_manifest(store: Path) -> None:
    layout = write_run(store, transcript=[{"a": 1}, {"b": 2}], tool_events=[])
    report = check_run("r1", store)
    assert report.complete, report.missing
    manifest = json.loads(layout.manifest_path("r1").read_bytes())
    entry = manifest["artifacts"]["transcript"]
    data = layout.artifact_path("r1", "transcript").read_bytes()
    assert entry["digest"] == _digest(data)
    assert (entry["bytes"], entry["records"], entry["last_seq"]) == (len(data), 2, 1)
    assert manifest["artifacts"]["tool-events"]["last_seq"] is None
    assert manifest["closed"] is True


def test_flush_writes_buffered_records(store: Path) -> None:
    writer = TranscriptWriter("r1", store=store)
    writer.write({"a": 1})
    assert _transcript(store).read_bytes() == b""
    writer.flush()
    assert len(_lines(_transcript(store))) == 1
    writer.abort()


@pytest.mark.parametrize(("policy", "expected"), [("none", 0), ("close", 1), ("always", 4)])
def test_fsync_policy(
    policy: Any, expected: int, store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    writer = TranscriptWriter("r1", store=store, fsync=policy)
    calls: list[int] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        if fd == writer._fd:
            calls.append(fd)
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    for n in range(3):
        writer.write({"n": n})
    writer.close()
    assert len(calls) == expected


def test_unknown_fsync_policy_is_rejected(store: Path) -> None:
    with pytest.raises(ValueError, match="fsync"):
        TranscriptWriter("r1", store=store, fsync="sometimes")  # type: ignore[arg-type]
    assert tree(store) == []


def test_close_is_idempotent_and_write_after_close_fails(store: Path) -> None:
    writer = TranscriptWriter("r1", store=store)
    writer.write({"a": 1})
    seal = writer.close()
    assert writer.close() is seal
    assert writer.closed
    with pytest.raises(WriterClosedError):
        writer.write({"a": 2})


def test_exception_in_with_body_leaves_the_run_unsealed(store: Path) -> None:
    def crash() -> None:
        with open_run("r1", store=store) as run:
            run.transcript.write({"a": 1})
            raise RuntimeError("agent crashed")

    with pytest.raises(RuntimeError, match="agent crashed"):
        crash()
    path = _transcript(store)
    assert len(_lines(path)) == 1
    assert not path.with_name("r1.jsonl.b3").exists()
    report = check_run("r1", store)
    assert not report.complete
    assert "unsealed" in finding_codes(report)


def test_refuses_to_continue_an_unsealed_file_until_it_is_recovered(store: Path) -> None:
    first = TranscriptWriter("r1", store=store)
    first.write({"a": 1})
    first.abort()
    before = _transcript(store).read_bytes()
    with pytest.raises(UnsealedRunError):
        open_run("r1", store=store)
    assert _transcript(store).read_bytes() == before
    recover_run("r1", store)
    assert check_run("r1", store).complete


def test_ten_megabyte_record(store: Path) -> None:
    big = "x" * (10 * 1024 * 1024)
    write_run(store, transcript=[{"big": big}])
    assert _lines(_transcript(store))[0]["big"] == big
    assert check_run("r1", store).complete


# -- validation before a byte is written ---------------------------------------------


@pytest.mark.parametrize(
    "record",
    [
        pytest.param({"x": float("nan")}, id="nan"),
        pytest.param({"x": float("inf")}, id="infinity"),
        pytest.param({"x": [1, {"y": float("-inf")}]}, id="nested-minus-infinity"),
        pytest.param([1, 2], id="list"),
        pytest.param("text", id="str"),
        pytest.param(None, id="none"),
        pytest.param({1: "int key"}, id="int-key"),
        pytest.param({"seq": 5}, id="reserved-seq"),
        pytest.param({"ts": 5}, id="reserved-ts"),
        pytest.param({"x": b"bytes"}, id="bytes-value"),
        pytest.param({"x": object()}, id="object-value"),
        pytest.param({"x": "\ud800"}, id="lone-surrogate"),
    ],
)
def test_invalid_record_is_rejected_before_a_byte_is_written(store: Path, record: Any) -> None:
    run = open_run("r1", store=store)
    run.transcript.write({"ok": 1})
    run.transcript.flush()
    before = _transcript(store).read_bytes()
    with pytest.raises(RecordInvalidError) as info:
        run.transcript.write(record)
    assert info.value.exit_code == ExitCode.USAGE
    run.transcript.flush()
    assert _transcript(store).read_bytes() == before
    assert run.transcript.write({"ok": 2}) == 1  # still usable; the seq was not consumed
    run.close()
    assert check_run("r1", store).complete


def test_tool_event_with_another_run_id_is_rejected(store: Path) -> None:
    with ToolEventWriter("r1", store=store) as writer:
        with pytest.raises(RecordInvalidError, match="run_id"):
            writer.write({"run_id": "r2"})
        writer.write({"run_id": "r1", "event": "x"})
    assert _lines(StoreLayout(store).artifact_path("r1", "tool-events"))[0]["run_id"] == "r1"


@pytest.mark.parametrize("run_id", BAD_RUN_IDS)
def test_bad_run_id_creates_nothing(run_id: str, store: Path) -> None:
    with pytest.raises(RunIdInvalidError):
        TranscriptWriter(run_id, store=store)
    with pytest.raises(RunIdInvalidError):
        open_run(run_id, store=store)
    assert tree(store) == []


# -- safety ---------------------------------------------------------------------------


def test_second_writer_in_process_fails(store: Path) -> None:
    first = TranscriptWriter("r1", store=store)
    with pytest.raises(RunLockedError, match="already open"):
        TranscriptWriter("r1", store=store)
    first.write({"a": 1})
    first.close()
    assert check_run("r1", store).complete is False  # tool events never written


def test_second_writer_in_another_process_fails(store: Path) -> None:
    script = textwrap.dedent(
        """
        import sys
        from agc.errors import RunLockedError
        from agc.integrity._writer import TranscriptWriter
        try:
            TranscriptWriter("r1", store=sys.argv[1])
        except RunLockedError as exc:
            print(exc.code, exc.exit_code, exc.message)
            sys.exit(0)
        sys.exit(9)
        """
    )
    with TranscriptWriter("r1", store=store) as writer:
        writer.write({"a": 1})
        result = subprocess.run(
            [sys.executable, "-c", script, str(store)], capture_output=True, text=True, check=False
        )
        assert result.returncode == 0, result.stderr
        assert result.stdout.startswith("run-locked 3 transcript of run r1 is already open")
    # After the first writer released it, the lock is free (but the file is sealed).
    with pytest.raises(ArtifactSealedError):
        TranscriptWriter("r1", store=store)


@pytest.mark.parametrize("remove", [None, "sidecar", "manifest"])
def test_never_appends_to_a_sealed_file(store: Path, remove: str | None) -> None:
    """A sealed file of a run the chain links is refused as a linked run id (exit 2);
    one of a run not linked yet (the other artifact still open) as sealed (exit 3)."""
    layout = write_run(store)
    path = layout.artifact_path("r1", "transcript")
    if remove == "sidecar":
        path.with_name("r1.jsonl.b3").unlink()
    elif remove == "manifest":
        layout.manifest_path("r1").unlink()
    before = {p: p.read_bytes() for p in store.rglob("*") if p.is_file()}
    with pytest.raises(RunExistsError) as linked:
        TranscriptWriter("r1", store=store)
    assert linked.value.exit_code == ExitCode.USAGE
    assert {p: p.read_bytes() for p in store.rglob("*") if p.is_file()} == before
    with TranscriptWriter("r2", store=store) as transcript:  # sealed, run not closed
        transcript.write({"role": "user"})
    if remove == "sidecar":
        layout.artifact_path("r2", "transcript").with_name("r2.jsonl.b3").unlink()
    elif remove == "manifest":
        layout.manifest_path("r2").unlink()
    before = {p: p.read_bytes() for p in store.rglob("*") if p.is_file()}
    with pytest.raises(ArtifactSealedError) as info:
        TranscriptWriter("r2", store=store)
    assert info.value.exit_code == ExitCode.UNREADABLE
    assert {p: p.read_bytes() for p in store.rglob("*") if p.is_file()} == before


def test_never_appends_after_a_torn_tail(store: Path) -> None:
    path = _transcript(store)
    path.parent.mkdir(parents=True)
    torn = b'{"seq":0,"ts":1,"a":1}\n{"seq":1,"ts":2,"a"'
    path.write_bytes(torn)
    stat_before = path.stat()
    with pytest.raises(TornTailError, match="unterminated"):
        TranscriptWriter("r1", store=store)
    assert path.read_bytes() == torn
    assert path.stat().st_mtime_ns == stat_before.st_mtime_ns
    assert not path.with_name("r1.jsonl.b3").exists()


@pytest.mark.parametrize("dangling", [False, True])
def test_symlink_in_place_of_the_transcript_is_not_followed(
    store: Path, tmp_path: Path, dangling: bool
) -> None:
    target = tmp_path / "victim.txt"
    if not dangling:
        target.write_bytes(b"precious\n")
    path = _transcript(store)
    path.parent.mkdir(parents=True)
    path.symlink_to(target)
    with pytest.raises(UnsafePathError, match="symlink") as info:
        TranscriptWriter("r1", store=store)
    assert info.value.exit_code == ExitCode.USAGE
    assert path.is_symlink()
    if dangling:
        assert not target.exists()
    else:
        assert target.read_bytes() == b"precious\n"


def test_unwritable_store_is_a_store_error(tmp_path: Path) -> None:
    # Tests run as root, for whom chmod does not make a folder unwritable. A store whose
    # parent is a regular file cannot be created by anyone: an honest unwritable store.
    blocker = tmp_path / "a-file"
    blocker.write_bytes(b"not a folder")
    with pytest.raises(StoreError) as info:
        open_run("r1", store=blocker / "store")
    assert info.value.exit_code == ExitCode.UNREADABLE
    assert blocker.read_bytes() == b"not a folder"


def test_close_does_not_reread_the_file(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    writer = TranscriptWriter("r1", store=store, buffer_bytes=0)
    for n in range(100):
        writer.write({"n": n, "pad": "x" * 100})
    path = writer.path
    reads: list[str] = []

    def guard(name: str, real: Any) -> Any:
        def wrapper(fd: int, *args: Any) -> Any:
            if os.path.samestat(os.fstat(fd), path.stat()):
                reads.append(name)
            return real(fd, *args)

        return wrapper

    for name in ("read", "readv", "pread", "preadv"):
        monkeypatch.setattr(os, name, guard(name, getattr(os, name)))
    real_open = os.open

    def open_(file: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if Path(file) == path:
            reads.append("open")
        return real_open(file, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", open_)
    seal = writer.close()
    monkeypatch.undo()
    assert reads == []
    assert seal.digest == _digest(path.read_bytes())
    assert seal.records == 100


# -- full disk ------------------------------------------------------------------------

_FULL_DISK_SCRIPT = textwrap.dedent(
    """
    import json, resource, sys
    from agc.errors import WriteFailedError
    from agc.integrity._writer import TranscriptWriter

    store, limit, buffer_bytes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    writer = TranscriptWriter("r1", store=store, buffer_bytes=buffer_bytes)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    try:
        for n in range(100_000):
            writer.write({"n": n, "pad": "x" * 200})
        writer.close()
    except WriteFailedError as exc:
        print(json.dumps({"code": exc.code, "exit": int(exc.exit_code),
                          "records": exc.records_written, "message": exc.message}))
        try:
            writer.write({"n": -1})
        except Exception as again:
            print(json.dumps({"again": type(again).__name__}))
        writer.abort()
        sys.exit(0)
    sys.exit(9)
    """
)


@pytest.mark.parametrize("buffer_bytes", [0, 4096])
def test_full_disk_fails_clearly_and_keeps_complete_records(store: Path, buffer_bytes: int) -> None:
    limit = 50_000
    result = subprocess.run(
        [sys.executable, "-c", _FULL_DISK_SCRIPT, str(store), str(limit), str(buffer_bytes)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    outcome, again = (json.loads(line) for line in result.stdout.splitlines())
    assert outcome["code"] == "write-failed"
    assert outcome["exit"] == ExitCode.UNREADABLE
    assert "file-size limit reached" in outcome["message"]
    assert again == {"again": "WriterClosedError"}
    data = _transcript(store).read_bytes()
    assert 0 < len(data) <= limit
    assert data.endswith(b"\n")  # the partial line was cut: the file ends on a record
    records = _lines(_transcript(store))
    assert len(records) == outcome["records"]
    assert [(r["seq"], r["n"], r["pad"]) for r in records] == [
        (n, n, "x" * 200) for n in range(len(records))
    ]
    report = check_run("r1", store)
    assert finding_codes(report) >= {"unsealed"}
    assert "torn-tail" not in finding_codes(report)
    # The intact prefix is sealed by recovery, with nothing lost.
    recover_run("r1", store)
    assert check_run("r1", store, allow_recovered=True).complete
    assert len(_lines(_transcript(store))) == len(records)


# -- property -------------------------------------------------------------------------

_JSON_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=st.characters(codec="utf-8"))
    | st.sampled_from(["\u2028", "\u2029", "a\u2028b", "\r", "\x00", "\x85"])
)
_JSON = st.recursive(
    _JSON_SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(alphabet=st.characters(codec="utf-8")), inner, max_size=4)
    ),
    max_leaves=12,
)
_RECORD = st.dictionaries(
    st.text(alphabet=st.characters(codec="utf-8")).filter(
        lambda k: k not in {"seq", "ts", "run_id"}
    ),
    _JSON,
    max_size=5,
)


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    records=st.lists(_RECORD, min_size=1, max_size=8),
    algorithm=st.sampled_from(["blake3", "sha256"]),
)
def test_property_any_json_objects_round_trip_and_verify(
    records: list[dict[str, Any]], algorithm: Any
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        store = Path(folder)
        write_run(store, transcript=records, tool_events=records, algorithm=algorithm)
        layout = StoreLayout(store)
        for kind in ("transcript", "tool-events"):
            lines = _lines(layout.artifact_path("r1", kind))
            assert [line["seq"] for line in lines] == list(range(len(records)))
            stripped = [
                {k: v for k, v in line.items() if k not in {"seq", "ts", "run_id"}}
                for line in lines
            ]
            assert stripped == records
        report = check_run("r1", store)
        assert report.complete, report.missing


@pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.parametrize("failure", ["locked", "sealed", "unwritable"])
def test_a_writer_that_failed_to_open_never_closes_a_reused_descriptor(
    store: Path, tmp_path: Path, failure: str
) -> None:
    if failure == "locked":
        holder = TranscriptWriter("r1", store=store)
    elif failure == "sealed":
        write_run(store)
    else:
        (tmp_path / "file").write_bytes(b"")
        store = tmp_path / "file" / "store"
    held: list[BaseException] = []
    try:
        TranscriptWriter("r1", store=store)
    except (RunLockedError, RunExistsError, StoreError) as exc:
        held.append(exc)  # a caller (or a log record) keeps the exception alive
    assert len(held) == 1
    fd = os.open(tmp_path / "unrelated", os.O_CREAT | os.O_RDWR)
    try:
        held.clear()
        gc.collect()
        os.fstat(fd)  # raises EBADF if the failed writer's __del__ closed it
    finally:
        os.close(fd)
    if failure == "locked":
        holder.abort()


@pytest.mark.parametrize("err", [errno.EROFS, errno.ENOSPC, errno.EACCES, errno.EIO])
def test_failure_to_open_the_file_is_a_store_error(
    store: Path, monkeypatch: pytest.MonkeyPatch, err: int
) -> None:
    real_open = os.open

    def failing_open(file: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if str(file).endswith("r1.jsonl"):
            raise OSError(err, os.strerror(err), str(file))
        return real_open(file, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", failing_open)
    with pytest.raises(StoreError, match="cannot open") as info:
        TranscriptWriter("r1", store=store)
    assert info.value.exit_code == ExitCode.UNREADABLE


@pytest.mark.parametrize("damage", ["torn", "sealed-elsewhere"])
def test_open_run_refused_by_tool_events_leaves_no_transcript_behind(
    store: Path, damage: str
) -> None:
    layout = StoreLayout(store)
    events = layout.artifact_path("r1", "tool-events")
    events.parent.mkdir(parents=True)
    if damage == "torn":
        events.write_bytes(b'{"a":1}\n{"b"')
        expected: type[Exception] = TornTailError
    else:
        events.write_bytes(b"")
        events.with_name("r1.jsonl.b3").write_bytes(b"")
        expected = ArtifactSealedError
    before = {p: p.read_bytes() for p in store.rglob("*") if p.is_file()}
    with pytest.raises(expected):
        open_run("r1", store=store)
    assert {p: p.read_bytes() for p in store.rglob("*") if p.is_file()} == before
    assert not layout.artifact_path("r1", "transcript").exists()


def test_open_run_keeps_an_existing_empty_transcript(store: Path) -> None:
    layout = StoreLayout(store)
    transcript = layout.artifact_path("r1", "transcript")
    transcript.parent.mkdir(parents=True)
    transcript.write_bytes(b"")
    events = layout.artifact_path("r1", "tool-events")
    events.parent.mkdir(parents=True)
    events.write_bytes(b"{")
    with pytest.raises(TornTailError):
        open_run("r1", store=store)
    assert transcript.exists()


def test_fifo_in_place_of_the_transcript_is_refused(store: Path) -> None:
    path = _transcript(store)
    path.parent.mkdir(parents=True)
    os.mkfifo(path)
    with pytest.raises(UnsafePathError, match="not a regular file"):
        open_run("r1", store=store, fsync="none")
    assert stat.S_ISFIFO(path.lstat().st_mode)
    assert not path.with_name("r1.jsonl.b3").exists()


def _b3(data: bytes) -> str:
    hasher = new_hasher("blake3")
    hasher.update(data)
    return hasher.hexdigest()


def test_file_writer_writes_records_as_given_and_seals_any_path(tmp_path: Path) -> None:
    path = tmp_path / "some" / "folder" / "x.jsonl"
    with JsonlFileWriter(path) as writer:
        writer.write({"recordType": "a", "n": 1})
        writer.write({"recordType": "b"})
    data = path.read_bytes()
    assert data == b'{"recordType":"a","n":1}\n{"recordType":"b"}\n'
    assert writer.file_seal is not None
    assert writer.file_seal.records == 2
    assert writer.file_seal.bytes == len(data)
    assert (path.parent / "x.jsonl.b3").read_text() == f"{_b3(data)}  x.jsonl\n"


def test_file_writer_current_digest_covers_bytes_so_far(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    writer = JsonlFileWriter(path)
    writer.write({"a": 1})
    assert writer.current_digest() == _b3(path.read_bytes())
    writer.abort()


def test_file_writer_refuses_a_sealed_file(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    with JsonlFileWriter(path) as writer:
        writer.write({"a": 1})
    with pytest.raises(ArtifactSealedError):
        JsonlFileWriter(path)


def test_file_writer_with_a_resealing_policy_replaces_its_sidecar(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    with JsonlFileWriter(path, seal_policy=SidecarSeal(reseal=True)) as first:
        first.write({"a": 1})
    with JsonlFileWriter(path, seal_policy=SidecarSeal(reseal=True)) as second:
        assert second.next_seq == 1
        second.write({"a": 2})
    data = path.read_bytes()
    assert data.count(b"\n") == 2
    assert (tmp_path / "x.jsonl.b3").read_text() == f"{_b3(data)}  x.jsonl\n"


def test_run_writer_still_stamps_seq_and_ts(store: Path) -> None:
    with TranscriptWriter("r2", store=store, clock=lambda: 5) as writer:
        writer.write({"a": 1})
        writer.write({"a": 2})
    lines = (store / "audit" / "transcripts" / "r2.jsonl").read_bytes().splitlines()
    assert [json.loads(line)["seq"] for line in lines] == [0, 1]
    assert json.loads(lines[0])["ts"] == 5
    assert writer.seal is not None
    assert writer.seal.last_seq == 1
    assert (store / "audit" / "manifests" / "r2.json").exists()


@pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")
def test_writer_refused_after_open_does_not_close_its_descriptor_twice(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    holder = JsonlFileWriter(path)
    with pytest.raises(RunLockedError):
        JsonlFileWriter(path)
    gc.collect()
    holder.write({"a": 1})
    assert holder.finish().records == 1


def test_a_checked_run_id_keeps_tool_events_on_the_fast_encoder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A command line hands the writers a RunId (a str subclass). Every tool event carries
    # the run id; the records and the manifest must hold its text as a plain str, or each
    # line would leave orjson for the standard library's slower path (same bytes).
    from agc._core import jsonl  # noqa: PLC0415 - patched below

    def refused(*_: object, **__: object) -> bytes:
        raise AssertionError("a record went to the standard library's encoder")

    monkeypatch.setattr(jsonl, "dumps_stdlib", refused)
    with open_run(RunId("r1"), store=tmp_path, fsync="none") as run:
        run.transcript.write({"role": "user", "content": "hi"})
        run.tool_events.write({"event": "tool_call_start", "call_id": "c1"})
    manifest = json.loads(StoreLayout(tmp_path).manifest_path("r1").read_bytes())
    assert manifest["run_id"] == "r1"
    assert check_run("r1", tmp_path).complete
