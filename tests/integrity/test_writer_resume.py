"""A run file continued as it is (``resume=True``) by one short-lived writer after
another: only what a crash checkpoint or a seal vouches for is ever continued."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agc.errors import TornTailError, UnsealedRunError, VerificationError
from agc.integrity import (
    ToolEventWriter,
    TranscriptWriter,
    check_run,
    ingest_lines,
    read_run_manifest,
    recover_run,
)


def _append(store: Path, *records: dict[str, int]) -> None:
    """One short-lived writer: continue, append, checkpoint, release unsealed."""
    writer = ToolEventWriter("r", store=store, resume=True)
    for record in records:
        writer.write(record)
    writer.checkpoint()
    writer.abort()


def _path(store: Path) -> Path:
    return store / "audit/tool-events/r.jsonl"


def test_writers_in_turn_continue_one_file_with_contiguous_seq(tmp_path: Path) -> None:
    for index in range(4):
        _append(tmp_path, {"n": index})
    lines = [json.loads(line) for line in _path(tmp_path).read_bytes().splitlines()]
    assert [(line["seq"], line["n"]) for line in lines] == [(i, i) for i in range(4)]
    recovery = recover_run("r", tmp_path)
    events = next(a for a in recovery.artifacts if a.kind == "tool-events")
    assert events.verified_bytes == events.bytes


def test_a_released_writer_takes_no_second_checkpoint(tmp_path: Path) -> None:
    _append(tmp_path, {"n": 0})
    _append(tmp_path, {"n": 1})
    checkpoints = (tmp_path / "audit/tool-events/r.jsonl.ckpt").read_bytes().splitlines()
    assert len(checkpoints) == 2


@pytest.mark.parametrize("damage", ["appended", "changed", "torn", "no-checkpoint", "shortened"])
def test_what_no_checkpoint_vouches_for_is_never_continued(tmp_path: Path, damage: str) -> None:
    _append(tmp_path, {"n": 0}, {"n": 1})
    path = _path(tmp_path)
    data = path.read_bytes()
    if damage == "appended":
        path.write_bytes(data + b'{"seq":2,"ts":0,"run_id":"r","n":2}\n')
    elif damage == "changed":
        path.write_bytes(data.replace(b'"n":1', b'"n":7'))
    elif damage == "torn":
        path.write_bytes(data + b'{"seq":2')
    elif damage == "no-checkpoint":
        (tmp_path / "audit/tool-events/r.jsonl.ckpt").unlink()
    else:
        path.write_bytes(data[: data.index(b"\n") + 1])
    expected = TornTailError if damage == "torn" else UnsealedRunError
    with pytest.raises(expected):
        ToolEventWriter("r", store=tmp_path, resume=True)
    assert path.read_bytes() != data or damage == "no-checkpoint"


def test_a_sealed_file_is_continued_as_a_new_segment(tmp_path: Path) -> None:
    _append(tmp_path, {"n": 0})
    ToolEventWriter("r", store=tmp_path, resume=True).close()
    TranscriptWriter("r", store=tmp_path, resume=True).close()
    assert check_run("r", tmp_path).findings  # an empty transcript
    _append(tmp_path, {"n": 1})  # re-opens the sealed file: a new segment
    _append(tmp_path, {"n": 2})  # continues the re-opened segment
    ToolEventWriter("r", store=tmp_path, resume=True).close()
    manifest = read_run_manifest("r", tmp_path)
    assert manifest is not None
    seal = manifest.artifacts["tool-events"]
    assert (seal.records, len(seal.segments)) == (3, 1)


def test_a_re_opened_segment_whose_sealed_part_changed_is_refused(tmp_path: Path) -> None:
    _append(tmp_path, {"n": 0})
    ToolEventWriter("r", store=tmp_path, resume=True).close()
    _append(tmp_path, {"n": 1})
    path = _path(tmp_path)
    path.write_bytes(path.read_bytes().replace(b'"n":0', b'"n":5'))
    with pytest.raises(VerificationError):
        ToolEventWriter("r", store=tmp_path, resume=True)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    batches=st.lists(st.integers(min_value=1, max_value=4), min_size=1, max_size=5),
    offset=st.integers(min_value=0, max_value=10_000),
    byte=st.integers(min_value=0, max_value=255),
)
def test_any_changed_byte_stops_the_next_writer(
    tmp_path_factory: pytest.TempPathFactory, batches: list[int], offset: int, byte: int
) -> None:
    store = tmp_path_factory.mktemp("s")
    for size in batches:
        _append(store, *({"n": i} for i in range(size)))
    path = _path(store)
    data = bytearray(path.read_bytes())
    at = offset % len(data)
    if data[at] == byte:
        return
    data[at] = byte
    path.write_bytes(bytes(data))
    with pytest.raises((UnsealedRunError, TornTailError)):
        ToolEventWriter("r", store=store, resume=True)


def test_ingest_lines_writes_the_lines_after_the_skipped_ones(tmp_path: Path) -> None:
    stream = io.BytesIO(b'{"a":1}\nnot json\n{"a":3}\n')
    writer = TranscriptWriter("r", store=tmp_path)
    assert ingest_lines(stream, writer, skip=1) == (2, 1)
    writer.close()
    lines = [
        json.loads(x) for x in (tmp_path / "audit/transcripts/r.jsonl").read_bytes().splitlines()
    ]
    assert [(x["seq"], x["line"]) for x in lines] == [(0, 2), (1, 3)]
    assert lines[0]["invalid"].startswith("not JSON")
