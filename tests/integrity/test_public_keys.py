"""The key loaders behind ``agc.integrity``'s front door: what a library user signs
runs and snapshots with (docs/evidence.md, docs/resume.md), public and working end to
end, with the errors the commands give."""

from __future__ import annotations

from pathlib import Path

import pytest

import agc.integrity as integrity
from agc.errors import BadSignatureError, KeyInvalidError, UnsignedError
from agc.resume import SessionSnapshot, load_snapshot, save_snapshot


def test_a_run_signed_and_checked_through_the_front_door(tmp_path: Path) -> None:
    private, public, key_id = integrity.generate_keypair(tmp_path / "keys")
    key = integrity.load_signing_key(private)
    assert isinstance(key, integrity.SigningKey)
    assert key.key_id == key_id
    store = tmp_path / "store"
    with integrity.open_run("r1", store=store, signing_key=key) as run:
        run.transcript.write({"role": "user", "content": "fix the tests"})
    trusted = integrity.load_trusted_keys([public])
    assert list(trusted) == [key_id]
    report = integrity.check_run("r1", store=store, trusted_keys=trusted)
    assert report.complete, report.missing
    assert report.signature == "signature-valid"


def test_a_snapshot_signed_and_loaded_through_the_front_doors(tmp_path: Path) -> None:
    private, public, _ = integrity.generate_keypair(tmp_path / "keys")
    store = tmp_path / "store"
    snapshot = SessionSnapshot("run-7", "s", [{"role": "user", "content": "hi"}], agent_config={})
    save_snapshot(snapshot, store=store, signing_key=integrity.load_signing_key(private))
    trusted = integrity.load_trusted_keys([public])
    assert load_snapshot("run-7", store=store, trusted_keys=trusted).messages == snapshot.messages
    # The signature binds the bytes: the same history saved again without the key is
    # refused under the trusted key, whether its old signature stays or is gone.
    save_snapshot(snapshot, store=store)
    with pytest.raises(UnsignedError):
        load_snapshot("run-7", store=store, trusted_keys=trusted)
    save_snapshot(
        SessionSnapshot("run-7", "s", [{"role": "user", "content": "other"}], agent_config={}),
        store=tmp_path / "store2",
        signing_key=integrity.load_signing_key(private),
    )
    (sig,) = (tmp_path / "store2").rglob("*.sig")  # a valid signature, of other bytes
    (snapshot_file,) = (p for p in store.rglob("run-7.json*") if p.suffix in {".json", ".zst"})
    (snapshot_file.parent / (snapshot_file.name + ".sig")).write_bytes(sig.read_bytes())
    with pytest.raises(BadSignatureError):
        load_snapshot("run-7", store=store, trusted_keys=trusted)


def test_a_private_key_is_refused_as_a_trusted_key(tmp_path: Path) -> None:
    private, _, _ = integrity.generate_keypair(tmp_path / "keys")
    with pytest.raises(KeyInvalidError):
        integrity.load_trusted_keys([private])
