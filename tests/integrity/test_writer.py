"""Tests for agc.integrity.writer: append-only, hash-while-writing, sealed on close."""

from __future__ import annotations

import gc
import json
from pathlib import Path

import pytest

from agc.errors import ArtifactSealedError, RunLockedError
from agc.integrity.hashing import new_hasher
from agc.integrity.writer import JsonlFileWriter, TranscriptWriter


def test_close_writes_sidecar_matching_file_bytes(store: Path) -> None:
    with TranscriptWriter("r1", store=store) as writer:
        writer.write({"role": "user", "content": "hi"})
    path = store / "audit" / "transcripts" / "r1.jsonl"
    hasher = new_hasher("blake3")
    hasher.update(path.read_bytes())
    sidecar = (path.parent / "r1.jsonl.b3").read_text()
    assert sidecar == f"{hasher.hexdigest()}  r1.jsonl\n"
    assert json.loads(path.read_bytes())["seq"] == 0


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


def test_file_writer_subclass_may_replace_its_sidecar(tmp_path: Path) -> None:
    class Resealing(JsonlFileWriter):
        _replace_sidecar = True

        def _refuse_if_sealed(self) -> None:
            return None

    path = tmp_path / "x.jsonl"
    with Resealing(path) as first:
        first.write({"a": 1})
    with Resealing(path) as second:
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
