"""The tamper-evidence checks of issue 3, run on the real transcripts in ../shared."""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from agc.integrity import (
    check_run,
    check_store,
    generate_keypair,
    ingest_stream,
    load_signing_key,
    load_trusted_keys,
)
from tests.conftest import REAL_FIXTURES, real_fixture_files, require_shared

REAL = real_fixture_files()
PARAMS: list[Path | None] = [*REAL] if REAL else [None]
Trusted = Mapping[str, Ed25519PublicKey]


def _ids() -> list[str]:
    return [str(p.relative_to(REAL_FIXTURES)) for p in REAL] or ["absent"]


@pytest.fixture(params=PARAMS, ids=_ids())
def real_file(request: pytest.FixtureRequest) -> Path:
    require_shared(REAL_FIXTURES)
    path: Path = request.param
    return path


@pytest.fixture
def signed_store(tmp_path: Path, real_file: Path) -> tuple[Path, Trusted]:
    private, public, _ = generate_keypair(tmp_path / "keys")
    store = tmp_path / "store"
    with real_file.open("rb") as handle:
        ingest_stream(handle, "real", store=store, signing_key=load_signing_key(private))
    return store, load_trusted_keys([public])


def test_real_transcript_flips_are_detected_under_signature_and_chain(
    tmp_path: Path, signed_store: tuple[Path, Trusted]
) -> None:
    store, trusted = signed_store
    head = check_store(store).head
    assert check_store(store, trusted_keys=trusted, expect_head=head).complete
    transcript = store / "audit/transcripts/real.jsonl"
    original = transcript.read_bytes()
    step = max(1, len(original) // 40)
    positions = sorted({0, len(original) - 1, *range(0, len(original), step)})
    for position in positions:
        changed = bytearray(original)
        changed[position] ^= 0x01
        transcript.write_bytes(bytes(changed))
        report = check_run("real", store, trusted_keys=trusted)
        assert "modified" in {f.code for f in report.findings}, position
    transcript.write_bytes(original)
    copy = tmp_path / "copy"
    shutil.copytree(store, copy)
    lines = original.splitlines(keepends=True)
    (copy / "audit/transcripts/real.jsonl").write_bytes(b"".join(lines[:-1]))
    assert "truncated" in {f.code for f in check_run("real", copy).findings}
    (copy / "audit/transcripts/real.jsonl").write_bytes(original + lines[0])
    assert "extended" in {f.code for f in check_run("real", copy).findings}
