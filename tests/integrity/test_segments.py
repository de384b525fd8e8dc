"""Re-opening a sealed run to append: verified first, then a new segment."""

from __future__ import annotations

from pathlib import Path

import pytest

from agc.errors import ArtifactSealedError, VerificationError
from agc.integrity._manifest import RunManifest
from agc.integrity._verify import check_run
from agc.integrity._writer import TranscriptWriter
from tests.integrity.evidence_helpers import transcript_path, write_run


def _manifest(store: Path, run_id: str) -> RunManifest:
    return RunManifest.from_bytes((store / f"audit/manifests/{run_id}.json").read_bytes())


def test_reopen_appends_a_new_segment_and_lists_it(store: Path) -> None:
    write_run(store, "r", count=3)
    first = _manifest(store, "r").artifacts["transcript"]
    with TranscriptWriter("r", store=store, reopen=True) as writer:
        seq = writer.write({"role": "user", "content": "resumed"})
        assert seq == 3
        mid = check_run("r", store)
        assert not mid.complete
        assert {f.code for f in mid.findings if f.artifact == "transcript"} == {"unsealed"}
    seal = _manifest(store, "r").artifacts["transcript"]
    assert seal.records == 4
    assert [s["digest"] for s in seal.segments] == [first.digest]
    assert check_run("r", store).complete


def test_reopen_refuses_tampered_sealed_content(store: Path) -> None:
    write_run(store, "r")
    path = transcript_path(store, "r")
    data = bytearray(path.read_bytes())
    data[2] ^= 1
    path.write_bytes(bytes(data))
    with pytest.raises(VerificationError):
        TranscriptWriter("r", store=store, reopen=True)
    assert path.read_bytes() == bytes(data)


def test_plain_open_of_a_sealed_run_is_refused(store: Path) -> None:
    write_run(store, "r")
    with pytest.raises(ArtifactSealedError):
        TranscriptWriter("r", store=store)
