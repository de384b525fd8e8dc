"""Tests for agc.integrity.writer: append-only, hash-while-writing, sealed on close."""

from __future__ import annotations

import json
from pathlib import Path

from agc.integrity.hashing import new_hasher
from agc.integrity.writer import TranscriptWriter


def test_close_writes_sidecar_matching_file_bytes(store: Path) -> None:
    with TranscriptWriter("r1", store=store) as writer:
        writer.write({"role": "user", "content": "hi"})
    path = store / "audit" / "transcripts" / "r1.jsonl"
    hasher = new_hasher("blake3")
    hasher.update(path.read_bytes())
    sidecar = (path.parent / "r1.jsonl.b3").read_text()
    assert sidecar == f"{hasher.hexdigest()}  r1.jsonl\n"
    assert json.loads(path.read_bytes())["seq"] == 0
