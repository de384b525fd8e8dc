"""Crash checkpoints: written while open, checked in one pass, removed once sealed."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agc._core.checkpoint import (
    Checkpoint,
    check_prefix,
    format_checkpoint,
    parse_checkpoints,
    read_checkpoints,
)
from agc._core.digest import new_hasher
from agc.errors import UnsafePathError
from agc.integrity import TranscriptWriter, check_run
from tests.integrity.evidence_helpers import records, transcript_path


def _ckpt(store: Path, run_id: str) -> Path:
    return transcript_path(store, run_id).with_suffix(".jsonl.ckpt")


def test_writer_records_a_checkpoint_every_n_records(store: Path) -> None:
    writer = TranscriptWriter("r", store=store, checkpoint_records=10, checkpoint_interval_ms=0)
    for record in records(1, 35):
        writer.write(record)
    checkpoints, unusable = parse_checkpoints(_ckpt(store, "r").read_bytes())
    assert unusable == 0
    assert [c.records for c in checkpoints] == [10, 20, 30]
    data = transcript_path(store, "r").read_bytes()
    for checkpoint in checkpoints:
        assert data[: checkpoint.bytes].count(b"\n") == checkpoint.records
    writer.abort()


def test_time_trigger_writes_a_checkpoint(store: Path) -> None:
    writer = TranscriptWriter("r", store=store, checkpoint_records=0, checkpoint_interval_ms=1)
    writer.write({"a": 1})
    time.sleep(0.005)
    writer.write({"a": 2})
    checkpoints, _ = parse_checkpoints(_ckpt(store, "r").read_bytes())
    assert checkpoints, "a record written after the interval must trigger a checkpoint"
    writer.abort()


def test_checkpoint_file_is_removed_when_sealed(store: Path) -> None:
    with TranscriptWriter("r", store=store, checkpoint_records=2) as writer:
        for record in records(2, 5):
            writer.write(record)
        assert _ckpt(store, "r").exists()
    assert not _ckpt(store, "r").exists()


def _crash(writer: TranscriptWriter) -> None:
    """Leave the file as a killed process would: records written, nothing more (abort()
    would add a last checkpoint)."""
    writer.flush()
    writer._release()


def test_unsealed_run_reports_verified_prefix_and_tail(store: Path) -> None:
    writer = TranscriptWriter("r", store=store, checkpoint_records=4, checkpoint_interval_ms=0)
    for record in records(3, 10):
        writer.write(record)
    _crash(writer)
    report = check_run("r", store)
    assert not report.complete
    unsealed = next(f for f in report.findings if f.artifact == "transcript")
    assert unsealed.code == "unsealed"
    assert unsealed.actual is not None
    assert unsealed.actual["verified_records"] == 8
    size = transcript_path(store, "r").stat().st_size
    assert unsealed.actual["unverified_bytes"] == size - unsealed.actual["verified_bytes"]
    assert unsealed.actual["torn_tail"] is False


def test_abort_adds_a_last_checkpoint_so_every_record_is_verified(store: Path) -> None:
    """A writer released on an exception (not a crash) vouches for all it wrote."""
    writer = TranscriptWriter("r", store=store, checkpoint_records=4, checkpoint_interval_ms=0)
    for record in records(3, 10):
        writer.write(record)
    writer.abort()
    unsealed = next(f for f in check_run("r", store).findings if f.artifact == "transcript")
    assert unsealed.code == "unsealed"
    assert unsealed.actual is not None
    assert unsealed.actual["verified_records"] == 10
    assert unsealed.actual["unverified_bytes"] == 0


def test_prefix_edit_under_a_checkpoint_is_modified_not_unsealed(store: Path) -> None:
    writer = TranscriptWriter("r", store=store, checkpoint_records=4, checkpoint_interval_ms=0)
    for record in records(4, 10):
        writer.write(record)
    writer.abort()
    path = transcript_path(store, "r")
    data = bytearray(path.read_bytes())
    data[5] ^= 0x01
    path.write_bytes(bytes(data))
    codes = {f.code for f in check_run("r", store).findings if f.artifact == "transcript"}
    assert codes == {"modified"}


def test_truncation_below_a_checkpoint_is_truncated(store: Path) -> None:
    writer = TranscriptWriter("r", store=store, checkpoint_records=4, checkpoint_interval_ms=0)
    for record in records(5, 10):
        writer.write(record)
    writer.abort()
    path = transcript_path(store, "r")
    checkpoints, _ = parse_checkpoints(_ckpt(store, "r").read_bytes())
    os.truncate(path, checkpoints[-1].bytes - 1)
    codes = {f.code for f in check_run("r", store).findings if f.artifact == "transcript"}
    assert "truncated" in codes


def test_torn_last_checkpoint_line_is_skipped() -> None:
    good = Checkpoint(records=1, bytes=10, algorithm="blake3", digest="ab" * 32, ts=1)
    parsed, unusable = parse_checkpoints(format_checkpoint(good) + b'{"records":2,"by')
    assert parsed == [good]
    assert unusable == 1


@given(st.binary(min_size=0, max_size=400), st.lists(st.integers(0, 400), max_size=6))
def test_check_prefix_accepts_true_prefixes(data: bytes, cuts: list[int]) -> None:
    checkpoints = []
    for cut in sorted({min(c, len(data)) for c in cuts}):
        hasher = new_hasher("blake3")
        hasher.update(data[:cut])
        checkpoints.append(
            Checkpoint(data[:cut].count(b"\n"), cut, "blake3", hasher.hexdigest(), 0)
        )
    with tempfile.TemporaryFile() as handle:
        handle.write(data)
        handle.flush()
        result = check_prefix(handle.fileno(), checkpoints, size=len(data))
    assert result.mismatch is None
    assert result.beyond_end is None
    assert result.verified_bytes == (checkpoints[-1].bytes if checkpoints else 0)


@given(st.binary(min_size=1, max_size=200), st.integers(0, 199), st.integers(1, 255))
def test_check_prefix_finds_any_changed_byte_under_a_checkpoint(
    data: bytes, position: int, mask: int
) -> None:
    position %= len(data)
    hasher = new_hasher("blake3")
    hasher.update(data)
    checkpoint = Checkpoint(data.count(b"\n"), len(data), "blake3", hasher.hexdigest(), 0)
    changed = bytearray(data)
    changed[position] ^= mask
    with tempfile.TemporaryFile() as handle:
        handle.write(bytes(changed))
        handle.flush()
        result = check_prefix(handle.fileno(), [checkpoint], size=len(changed))
    assert result.mismatch == checkpoint


def test_read_checkpoints_is_the_one_reader_of_a_ckpt_file(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    assert read_checkpoints(path) == ([], 0)
    good = Checkpoint(records=1, bytes=8, algorithm="blake3", digest="ab" * 32, ts=5)
    ckpt = path.with_name("x.jsonl.ckpt")
    ckpt.write_bytes(
        format_checkpoint(good) + b'{"records":1,"records":2,"bytes":8}\n' + b"[" * 9000 + b"\n"
    )
    assert read_checkpoints(path) == ([good], 2)
    ckpt.unlink()
    ckpt.symlink_to(tmp_path / "elsewhere")
    with pytest.raises(UnsafePathError):
        read_checkpoints(path)
