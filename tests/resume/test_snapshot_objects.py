"""Tests for snapshots in a store written object by object (agc.resume._snapshot_store):
signed snapshots, on the in-memory store (the bucket's own behaviour is the store
contract's, tests/_core/test_store_contract.py).

A writer of the bucket who holds no trusted key can upload a newer snapshot of a run
(with a sidecar it computes itself) or copy a signed one under a newer name; under
trusted keys neither loads.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from agc._core.digest import new_hasher
from agc._core.memstore import MemoryStore
from agc._core.sidecar import format_sidecar
from agc._core.signing import SigningKey, key_id_of
from agc.errors import (
    BadSignatureError,
    SnapshotInvalidError,
    UnknownKeyError,
    UnsignedError,
)
from agc.exitcodes import ExitCode
from agc.resume import SessionSnapshot, has_snapshot, load_snapshot, save_snapshot

_PRIVATE = Ed25519PrivateKey.generate()
KEY = SigningKey(_PRIVATE, key_id_of(_PRIVATE.public_key()))
TRUSTED = {KEY.key_id: _PRIVATE.public_key()}


def _snapshot(text: str) -> SessionSnapshot:
    return SessionSnapshot("r1", "s1", [{"role": "user", "content": text}])


@pytest.fixture
def store() -> MemoryStore:
    """A versioned bucket under a key prefix, as an evidence bucket is."""
    return MemoryStore(name="evidence", prefix="team/evidence")


def _put(store: MemoryStore, path: str, body: bytes) -> None:
    store.overwrite(path, body)  # what any writer of the bucket can do


def _path(store: MemoryStore, url: object) -> str:
    return store.relative(str(url).removeprefix(f"memory:/{store.name}/"))


def _get(store: MemoryStore, path: str) -> bytes:
    found = store.get(path, max_bytes=1 << 20)
    assert found is not None, path
    return found[0]


def test_a_signed_save_uploads_the_signature_last_and_loads_under_the_key(
    store: MemoryStore,
) -> None:
    saved = save_snapshot(_snapshot("one"), store, signing_key=KEY)
    assert saved.signature is not None
    assert saved.key_id == KEY.key_id
    names = sorted(store.list_paths("sessions/r1/"))
    assert len(names) == 3
    assert names[2].endswith(".json.sig")
    loaded = load_snapshot("r1", store, trusted_keys=TRUSTED)
    assert loaded.messages[0]["content"] == "one"


def test_an_unsigned_snapshot_is_refused_under_trusted_keys(store: MemoryStore) -> None:
    save_snapshot(_snapshot("one"), store)
    assert load_snapshot("r1", store).messages[0]["content"] == "one"  # as before
    with pytest.raises(UnsignedError):
        load_snapshot("r1", store, trusted_keys=TRUSTED)
    assert load_snapshot("r1", store, trusted_keys=TRUSTED, allow_unsigned=True).run_id == "r1"
    with pytest.raises(UnsignedError):
        load_snapshot("r1", store, require_signature=True)


def test_a_newer_forged_snapshot_never_loads(store: MemoryStore) -> None:
    signed = save_snapshot(_snapshot("one"), store, signing_key=KEY)
    old = _path(store, signed.path)
    assert signed.signature is not None
    time.sleep(0.005)  # object names order by the save's millisecond
    # The attacker's snapshot, named as agc names a newer save, sealed by the attacker.
    forged = save_snapshot(_snapshot("rm -rf /"), store)
    with pytest.raises(UnsignedError):
        load_snapshot("r1", store, trusted_keys=TRUSTED)
    new = _path(store, forged.path)
    # … with the genuine snapshot's signature beside it: it names another object.
    _put(store, new + ".sig", _get(store, old + ".sig"))
    with pytest.raises(BadSignatureError, match="signs the snapshot"):
        load_snapshot("r1", store, trusted_keys=TRUSTED)


def test_a_signed_snapshot_copied_under_a_newer_name_never_loads(store: MemoryStore) -> None:
    first = save_snapshot(_snapshot("one"), store, signing_key=KEY)
    save_snapshot(_snapshot("two"), store, signing_key=KEY)
    old = _path(store, first.path)
    data = _get(store, old)
    hasher = new_hasher("blake3")
    hasher.update(data)
    name = f"{'9' * 20}-{hasher.hexdigest()[:16]}.json"  # newer than any save
    _put(store, f"sessions/r1/{name}", data)
    _put(store, f"sessions/r1/{name}.b3", format_sidecar(hasher.hexdigest(), name))
    _put(store, f"sessions/r1/{name}.sig", _get(store, old + ".sig"))
    with pytest.raises(BadSignatureError):
        load_snapshot("r1", store, trusted_keys=TRUSTED)


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (b"", BadSignatureError),
        (b"{}", BadSignatureError),
        (b" " * 5000, BadSignatureError),
        (b"truncated", BadSignatureError),
    ],
)
def test_a_damaged_signature_object_is_a_bad_signature(
    store: MemoryStore, body: bytes, error: type[Exception]
) -> None:
    saved = save_snapshot(_snapshot("one"), store, signing_key=KEY)
    _put(store, _path(store, saved.path) + ".sig", body)
    with pytest.raises(error):
        load_snapshot("r1", store, trusted_keys=TRUSTED)


def test_another_key_is_unknown_key(store: MemoryStore) -> None:
    other = Ed25519PrivateKey.generate()
    save_snapshot(
        _snapshot("one"), store, signing_key=SigningKey(other, key_id_of(other.public_key()))
    )
    with pytest.raises(UnknownKeyError):
        load_snapshot("r1", store, trusted_keys=TRUSTED)


def test_an_oversized_snapshot_object_is_invalid_not_an_unreadable_store(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As in a folder store: a snapshot above the limit is snapshot-invalid (exit 2),
    judged from its size before its body is read, never a failure of the store (exit 3)."""
    save_snapshot(_snapshot("one"), store, signing_key=KEY)
    monkeypatch.setattr("agc.resume._snapshot.MAX_SNAPSHOT_BYTES", 64)
    with pytest.raises(SnapshotInvalidError, match="larger than 64 bytes") as caught:
        load_snapshot("r1", store, trusted_keys=TRUSTED)
    assert caught.value.exit_code == ExitCode.USAGE


def test_another_runs_signed_snapshot_copied_under_this_run_never_loads(
    store: MemoryStore,
) -> None:
    """An object name holds no run id, so the signature of another run's snapshot names
    its copy under this run's folder too: the run id inside the signed bytes refuses it."""
    saved = save_snapshot(
        SessionSnapshot("r2", "s1", [{"role": "user", "content": "rm -rf /"}]),
        store,
        signing_key=KEY,
    )
    save_snapshot(_snapshot("one"), store, signing_key=KEY)
    source = _path(store, saved.path)
    name = f"{'9' * 20}-{source.rsplit('-', 1)[1]}"  # newer than r1's own, sealed again
    data = _get(store, source)
    hasher = new_hasher("blake3")
    hasher.update(data)
    _put(store, f"sessions/r1/{name}", data)
    _put(store, f"sessions/r1/{name}.b3", format_sidecar(hasher.hexdigest(), name))
    _put(store, f"sessions/r1/{name}.sig", _get(store, source + ".sig"))
    with pytest.raises(BadSignatureError, match="signs the snapshot"):
        load_snapshot("r1", store, trusted_keys=TRUSTED)  # renamed: the name is signed
    name = source.rsplit("/", 1)[1]  # kept: older than r1's own, unless r1's is deleted
    for suffix in ("", ".b3", ".sig"):
        _put(store, f"sessions/r1/{name}{suffix}", _get(store, source + suffix))
    for path in list(store.list_paths("sessions/r1/")):
        if not path.split("/")[-1].startswith(name):
            store.delete(path)
    with pytest.raises(SnapshotInvalidError, match="holds run r2, not r1"):
        load_snapshot("r1", store, trusted_keys=TRUSTED)


@pytest.mark.parametrize("kind", ["folder", "memory"])
def test_has_snapshot_answers_for_any_store_after_a_save_and_not_before(
    kind: str, tmp_path: Path
) -> None:
    store: Path | MemoryStore = tmp_path / "store" if kind == "folder" else MemoryStore()
    assert not has_snapshot("r1", store)
    save_snapshot(_snapshot("one"), store)
    assert has_snapshot("r1", store)
    assert not has_snapshot("r2", store)
