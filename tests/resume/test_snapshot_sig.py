"""Tests for agc.resume._snapshot_sig: signed snapshots, and what an attacker cannot forge.

The attacker of these tests can write the whole ``sessions/`` folder (the snapshot, its
sidecar, its signature: replace, truncate, re-seal, copy another snapshot's files) and
holds no trusted private key. With trusted keys given, the only snapshots that load are
bytes a trusted key signed under that very file name.
"""

from __future__ import annotations

import base64
import json
import os
import stat
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agc._core.canonical import canonical_json
from agc._core.digest import Algorithm, new_hasher
from agc._core.sidecar import format_sidecar, sidecar_path
from agc._core.signing import SigningKey, key_id_of, sign_document
from agc.errors import (
    AgcError,
    BadSignatureError,
    SnapshotInvalidError,
    SnapshotTamperedError,
    UnknownKeyError,
    UnsignedError,
    UsageError,
)
from agc.exitcodes import ExitCode
from agc.resume import (
    SessionSnapshot,
    load_snapshot,
    load_snapshot_file,
    save_snapshot,
    snapshot_path,
)
from agc.resume._snapshot import signature_path
from agc.resume._snapshot_sig import SIGNATURE_TYPE, judge_signature
from tests.conftest import examples

REACHES_INSIDE = {
    "agc.resume._snapshot": "the signature file's path next to a snapshot",
    "agc.resume._snapshot_sig": "the signature record's type and the signature judge, directly",
}

PRIVATE = Ed25519PrivateKey.generate()
KEY = SigningKey(PRIVATE, key_id_of(PRIVATE.public_key()))
TRUSTED: dict[str, Ed25519PublicKey] = {KEY.key_id: PRIVATE.public_key()}
_OTHER = Ed25519PrivateKey.generate()
OTHER = SigningKey(_OTHER, key_id_of(_OTHER.public_key()))  # the attacker's own key


def _snapshot(text: str = "hello", run_id: str = "run-7") -> SessionSnapshot:
    return SessionSnapshot(run_id, "s", [{"role": "user", "content": text}], agent_config={})


def _digest(data: bytes, algorithm: Algorithm = "blake3") -> str:
    hasher = new_hasher(algorithm)
    hasher.update(data)
    return hasher.hexdigest()


def _reseal(path: Path) -> None:
    """What anyone who can write the folder can do: seal the bytes there again."""
    sidecar_path(path, "blake3").write_bytes(format_sidecar(_digest(path.read_bytes()), path.name))


def _signed_document(path: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(signature_path(path).read_bytes())
    return document


def _write_signature(path: Path, document: dict[str, Any]) -> None:
    signature_path(path).write_bytes(json.dumps(document).encode() + b"\n")


# -- saving --------------------------------------------------------------------------------


@pytest.mark.parametrize("compress", [False, True])
def test_a_signed_snapshot_round_trips_under_its_trusted_key(store: Path, compress: bool) -> None:
    result = save_snapshot(_snapshot(), store, compress=compress, signing_key=KEY)
    assert result.signature == signature_path(result.path)
    assert result.signature.name == result.path.name + ".sig"
    assert result.key_id == KEY.key_id
    assert result.to_dict()["signature"] == str(result.signature)
    assert stat.S_IMODE(os.stat(result.signature).st_mode) == 0o600
    loaded = load_snapshot("run-7", store, trusted_keys=TRUSTED)
    assert loaded.messages == _snapshot().messages
    assert load_snapshot_file(result.path, trusted_keys=TRUSTED).run_id == "run-7"


@pytest.mark.parametrize("algorithm", ["blake3", "sha256"])
def test_the_signature_file_is_the_documented_canonical_document(
    store: Path, algorithm: Algorithm
) -> None:
    result = save_snapshot(_snapshot(), store, algorithm=algorithm, signing_key=KEY)
    raw = result.signature.read_bytes() if result.signature else b""
    document = json.loads(raw)
    assert raw == canonical_json(document) + b"\n"  # RFC 8785 form, one line
    data = result.path.read_bytes()
    unsigned = {
        "type": SIGNATURE_TYPE,
        "schemaVersion": 1,
        "file": "run-7.json",
        "algorithm": algorithm,
        "digest": _digest(data, algorithm),
        "bytes": len(data),
    }
    assert {k: v for k, v in document.items() if k != "signature"} == unsigned
    assert set(document["signature"]) == {"algorithm", "key_id", "value"}
    assert document["signature"]["algorithm"] == "ed25519"
    assert document["signature"]["key_id"] == KEY.key_id
    # Ed25519 (RFC 8032) over the RFC 8785 canonical JSON of the other members.
    PRIVATE.public_key().verify(
        base64.b64decode(document["signature"]["value"]), canonical_json(unsigned)
    )


def test_an_unsigned_save_writes_no_signature_and_removes_an_old_one(store: Path) -> None:
    signed = save_snapshot(_snapshot("one"), store, signing_key=KEY)
    assert signed.signature is not None
    assert signed.signature.exists()
    unsigned = save_snapshot(_snapshot("two"), store)
    assert unsigned.signature is None
    assert unsigned.key_id is None
    assert not signature_path(unsigned.path).exists()  # never a signature over other bytes
    assert unsigned.to_dict()["signature"] is None


def test_a_save_of_the_other_compression_removes_the_old_signature(store: Path) -> None:
    plain = save_snapshot(_snapshot("one"), store, signing_key=KEY)
    packed = save_snapshot(_snapshot("two"), store, compress=True, signing_key=KEY)
    assert not plain.path.exists()
    assert not signature_path(plain.path).exists()
    assert packed.signature is not None
    assert packed.signature.exists()
    assert load_snapshot("run-7", store, trusted_keys=TRUSTED).messages[0]["content"] == "two"


# -- when a signature is required (the rule of run manifests) --------------------------------


def test_without_trusted_keys_an_unsigned_snapshot_loads_as_before(store: Path) -> None:
    save_snapshot(_snapshot(), store)
    assert load_snapshot("run-7", store).messages == _snapshot().messages


def test_any_trusted_key_requires_a_signature(store: Path) -> None:
    save_snapshot(_snapshot(), store)
    with pytest.raises(UnsignedError) as caught:
        load_snapshot("run-7", store, trusted_keys=TRUSTED)
    assert caught.value.code == "unsigned"
    assert caught.value.exit_code == ExitCode.FINDINGS
    assert str(snapshot_path("run-7", store)) in caught.value.message


def test_allow_unsigned_relaxes_only_unsigned(store: Path) -> None:
    save_snapshot(_snapshot(), store)
    assert load_snapshot("run-7", store, trusted_keys=TRUSTED, allow_unsigned=True).run_id
    saved = save_snapshot(_snapshot(), store, signing_key=OTHER)  # signed: still checked
    with pytest.raises(UnknownKeyError):
        load_snapshot("run-7", store, trusted_keys=TRUSTED, allow_unsigned=True)
    _reseal_with_change(saved.path)
    with pytest.raises(BadSignatureError):
        load_snapshot("run-7", store, trusted_keys={**TRUSTED, OTHER.key_id: _OTHER.public_key()})


def test_require_signature_without_trusted_keys_refuses_both(store: Path) -> None:
    save_snapshot(_snapshot(), store)
    with pytest.raises(UnsignedError):
        load_snapshot("run-7", store, require_signature=True)
    save_snapshot(_snapshot(), store, signing_key=KEY)
    with pytest.raises(UnknownKeyError, match="no trusted key was given"):
        load_snapshot("run-7", store, require_signature=True)
    with pytest.raises(UsageError):
        load_snapshot("run-7", store, require_signature=True, allow_unsigned=True)


def test_a_signature_without_trusted_keys_is_not_read_and_noted(store: Path) -> None:
    saved = save_snapshot(_snapshot(), store, signing_key=KEY)
    assert saved.signature is not None
    saved.signature.write_bytes(b"garbage")  # not read: nothing to check it against
    notes: list[str] = []
    assert load_snapshot("run-7", store, on_note=notes.append).run_id == "run-7"
    assert len(notes) == 1
    assert "not checked" in notes[0]


def test_a_key_that_is_not_trusted_is_unknown_key(store: Path) -> None:
    save_snapshot(_snapshot(), store, signing_key=OTHER)
    with pytest.raises(UnknownKeyError) as caught:
        load_snapshot("run-7", store, trusted_keys=TRUSTED)
    assert OTHER.key_id in caught.value.message
    assert caught.value.exit_code == ExitCode.FINDINGS


def test_insecure_skip_verify_checks_no_signature(store: Path) -> None:
    save_snapshot(_snapshot(), store)
    assert load_snapshot("run-7", store, trusted_keys=TRUSTED, insecure_skip_verify=True).run_id


# -- the attacks named ----------------------------------------------------------------------


def _reseal_with_change(path: Path) -> None:
    path.write_bytes(path.read_bytes().replace(b"hello", b"HELLO"))
    _reseal(path)


def _attacks(store: Path) -> dict[str, Callable[[Path], None]]:
    """Each turns the folder holding a snapshot of run-7 signed by KEY into a forgery."""
    elsewhere = store.parent / "elsewhere"
    other = save_snapshot(_snapshot("rm -rf /"), elsewhere, signing_key=KEY).path
    other_run = save_snapshot(_snapshot("hi", run_id="run-8"), elsewhere, signing_key=KEY).path

    def swap_signature(path: Path) -> None:  # another snapshot's .sig, same key
        _reseal_with_change(path)
        signature_path(path).write_bytes(signature_path(other).read_bytes())

    def replace_all_but_signature(path: Path) -> None:
        path.write_bytes(other.read_bytes())
        _reseal(path)

    def extra_member_in_signature(path: Path) -> None:
        document = _signed_document(path)
        document["signature"]["note"] = "x"
        _write_signature(path, document)

    def extra_member(path: Path) -> None:
        document = _signed_document(path)
        document["runId"] = "run-7"
        _write_signature(path, document)

    def other_file_name(path: Path) -> None:  # run-8's signed files, renamed to run-7
        path.write_bytes(other_run.read_bytes())
        _reseal(path)
        signature_path(path).write_bytes(signature_path(other_run).read_bytes())

    def digest_edited(path: Path) -> None:
        _reseal_with_change(path)
        document = _signed_document(path)
        document["digest"] = _digest(path.read_bytes())
        _write_signature(path, document)

    def truncated(path: Path) -> None:
        raw = signature_path(path).read_bytes()
        signature_path(path).write_bytes(raw[: len(raw) // 2])

    def emptied(path: Path) -> None:
        signature_path(path).write_bytes(b"")

    def attacker_key(path: Path) -> None:
        _reseal_with_change(path)
        document = _signed_document(path)
        data = path.read_bytes()
        document["digest"], document["bytes"] = _digest(data), len(data)
        forged = sign_document(document, OTHER)
        forged["signature"]["key_id"] = KEY.key_id  # claims the trusted key
        _write_signature(path, forged)

    def null_signature(path: Path) -> None:
        document = _signed_document(path)
        document["signature"] = None
        _write_signature(path, document)

    def symlinked(path: Path) -> None:
        target = store.parent / "sig"
        target.write_bytes(signature_path(path).read_bytes())
        signature_path(path).unlink()
        signature_path(path).symlink_to(target)

    def folder(path: Path) -> None:
        signature_path(path).unlink()
        signature_path(path).mkdir()

    def huge(path: Path) -> None:
        signature_path(path).write_bytes(b" " * 5000 + signature_path(path).read_bytes())

    def removed(path: Path) -> None:
        _reseal_with_change(path)
        signature_path(path).unlink()

    return {
        name: attack
        for name, attack in locals().items()
        if callable(attack) and not name.startswith("_")
    }


ATTACKS = [
    "swap_signature",
    "replace_all_but_signature",
    "extra_member_in_signature",
    "extra_member",
    "other_file_name",
    "digest_edited",
    "truncated",
    "emptied",
    "attacker_key",
    "null_signature",
    "symlinked",
    "folder",
    "huge",
    "removed",
]


@pytest.mark.parametrize("attack", ATTACKS)
def test_no_forgery_loads_under_trusted_keys(tmp_path: Path, attack: str) -> None:
    store = tmp_path / "store"
    path = save_snapshot(_snapshot(), store, signing_key=KEY).path
    attacks = _attacks(store)
    assert sorted(attacks) == sorted(ATTACKS)
    attacks[attack](path)
    expected: type[AgcError] = UnsignedError if attack == "removed" else BadSignatureError
    with pytest.raises(expected) as caught:
        load_snapshot("run-7", store, trusted_keys=TRUSTED)
    assert caught.value.exit_code == ExitCode.FINDINGS
    assert str(path) in caught.value.message  # names the file


@pytest.mark.parametrize("attack", ["swap_signature", "digest_edited", "removed"])
def test_the_seal_alone_does_not_stop_these_forgeries(tmp_path: Path, attack: str) -> None:
    # Without the feature (no trusted key) the same folder loads: the attacker's history
    # would be resumed. This is what the signature check refuses above.
    store = tmp_path / "store"
    path = save_snapshot(_snapshot(), store, signing_key=KEY).path
    _attacks(store)[attack](path)
    assert load_snapshot("run-7", store).messages[0]["content"] == "HELLO"


def test_a_snapshot_moved_under_another_name_fails(tmp_path: Path) -> None:
    # The whole signed trio of run-7, renamed to run-9 (sidecar made for the new name).
    store = tmp_path / "store"
    path = save_snapshot(_snapshot(), store, signing_key=KEY).path
    moved = snapshot_path("run-9", store)
    moved.write_bytes(path.read_bytes())
    signature_path(moved).write_bytes(signature_path(path).read_bytes())
    _reseal(moved)
    with pytest.raises(BadSignatureError, match="signs the snapshot"):
        load_snapshot_file(moved, trusted_keys=TRUSTED)


# -- the property: an attacker who writes the folder and holds no key -----------------------


_FILES = ("snapshot", "sidecar", "signature")


def _mutation() -> st.SearchStrategy[tuple[str, str, bytes, int]]:
    """(file, how, bytes, position): one change to one of the three files."""
    return st.tuples(
        st.sampled_from(_FILES),
        st.sampled_from(
            [
                "flip",
                "truncate",
                "append",
                "replace",
                "delete",
                "donor",
                "rewrite",
                "reseal",
                "resign",
            ]
        ),
        st.binary(max_size=64),
        st.integers(min_value=0, max_value=10**6),
    )


def _apply(path: Path, donor: Path, mutation: tuple[str, str, bytes, int]) -> None:
    which, how, blob, position = mutation
    target = {
        "snapshot": path,
        "sidecar": sidecar_path(path, "blake3"),
        "signature": signature_path(path),
    }[which]
    donor_file = {
        "snapshot": donor,
        "sidecar": sidecar_path(donor, "blake3"),
        "signature": signature_path(donor),
    }[which]
    if how == "reseal":
        if path.exists():
            _reseal(path)
        return
    if how == "resign":  # the attacker's own key, claiming the trusted key's id
        if path.exists():
            data = path.read_bytes()
            document = {
                "type": SIGNATURE_TYPE,
                "schemaVersion": 1,
                "file": path.name,
                "algorithm": "blake3",
                "digest": _digest(data),
                "bytes": len(data),
            }
            forged = sign_document(document, OTHER)
            forged["signature"]["key_id"] = KEY.key_id
            _write_signature(path, forged)
        return
    if how == "rewrite":  # another valid history in the same file (of any of the three)
        try:
            document = json.loads(target.read_bytes())
            document["messages"][0]["content"] = "forged " + blob.hex()
        except (OSError, ValueError, KeyError, IndexError, TypeError):
            return
        target.write_bytes(json.dumps(document, separators=(",", ":")).encode() + b"\n")
        return
    if how == "delete":
        if target.exists():
            target.unlink()
        return
    if how == "donor":
        target.write_bytes(donor_file.read_bytes())
        return
    old = target.read_bytes() if target.exists() else b""
    if how == "flip" and old:
        index = position % len(old)
        new = old[:index] + bytes([old[index] ^ (1 << (position % 8))]) + old[index + 1 :]
    elif how == "truncate":
        new = old[: position % (len(old) + 1)]
    elif how == "append":
        new = old + (blob or b"\n")
    else:
        new = blob
    target.write_bytes(new)


@settings(max_examples=examples(300), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutations=st.lists(_mutation(), min_size=1, max_size=4))
def test_whatever_the_attacker_writes_only_signed_bytes_load(
    tmp_path_factory: pytest.TempPathFactory, mutations: list[tuple[str, str, bytes, int]]
) -> None:
    root = tmp_path_factory.mktemp("attack")
    path = save_snapshot(_snapshot("the user's history"), root / "a", signing_key=KEY).path
    # Another snapshot of the same run, also signed by the trusted key, in another store.
    donor = save_snapshot(_snapshot("an older history"), root / "b", signing_key=KEY).path
    genuine = {path.read_bytes(), donor.read_bytes()}
    for mutation in mutations:
        _apply(path, donor, mutation)
    refused: AgcError | None = None
    try:
        loaded = load_snapshot("run-7", root / "a", trusted_keys=TRUSTED)
    except AgcError as exc:
        refused = exc
    if refused is not None:  # a refusal of the evidence (1) or of its shape (2)
        assert refused.exit_code in {ExitCode.FINDINGS, ExitCode.USAGE}, refused
        return
    # Accepted: the bytes are ones the trusted key signed under this name (a replay of
    # another signed snapshot of the run is the documented limit, not a forgery).
    assert path.read_bytes() in genuine
    assert loaded.messages[0]["content"] in {"the user's history", "an older history"}


def test_the_property_has_teeth_without_trusted_keys(tmp_path: Path) -> None:
    # The same kind of mutation, judged without trusted keys: modified bytes load.
    path = save_snapshot(_snapshot("the user's history"), tmp_path / "a", signing_key=KEY).path
    path.write_bytes(path.read_bytes().replace(b"user's", b"evil's"))
    _apply(path, path, ("snapshot", "reseal", b"", 0))
    assert load_snapshot("run-7", tmp_path / "a").messages[0]["content"] == "the evil's history"
    with pytest.raises(BadSignatureError):
        load_snapshot("run-7", tmp_path / "a", trusted_keys=TRUSTED)


# -- the judge itself --------------------------------------------------------------------------


def test_the_judge_reads_nothing_without_trusted_keys() -> None:
    def never() -> bytes:
        raise AssertionError("read")

    outcome = judge_signature(
        never, where="x.json.sig", file_name="x.json", data=b"", trusted_keys=None, required=False
    )
    assert outcome == "not-checked"
    assert (
        judge_signature(
            None,
            where="x.json.sig",
            file_name="x.json",
            data=b"",
            trusted_keys=None,
            required=False,
        )
        == "unsigned"
    )


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"type": "agc-run-manifest"}, "type"),
        ({"schemaVersion": 2}, "schemaVersion"),
        ({"schemaVersion": True}, "schemaVersion"),
        ({"file": 7}, "file"),
        ({"algorithm": "md5"}, "algorithm"),
        ({"digest": "AB" * 32}, "digest"),
        ({"bytes": -1}, "bytes"),
        ({"bytes": 1.5}, "bytes"),
    ],
)
def test_a_malformed_member_is_a_bad_signature(
    store: Path, change: dict[str, Any], problem: str
) -> None:
    path = save_snapshot(_snapshot(), store, signing_key=KEY).path
    document = {**_signed_document(path), **change}
    _write_signature(path, document)
    with pytest.raises(BadSignatureError, match=problem):
        load_snapshot("run-7", store, trusted_keys=TRUSTED)


def test_a_tampered_snapshot_is_still_snapshot_tampered_first(store: Path) -> None:
    path = save_snapshot(_snapshot(), store, signing_key=KEY).path
    path.write_bytes(path.read_bytes().replace(b"hello", b"HELLO"))
    with pytest.raises(SnapshotTamperedError):
        load_snapshot("run-7", store, trusted_keys=TRUSTED)


def test_resume_session_checks_the_signature_too(store: Path) -> None:
    from agc.resume import resume_session  # noqa: PLC0415 - the public entry

    save_snapshot(_snapshot(), store)
    with pytest.raises(UnsignedError):
        resume_session("run-7", store, trusted_keys=TRUSTED)
    save_snapshot(_snapshot(), store, signing_key=KEY)
    assert resume_session("run-7", store, trusted_keys=TRUSTED).messages == _snapshot().messages


# -- an oversized snapshot ------------------------------------------------------------------


def test_an_oversized_snapshot_is_invalid_and_never_read(store: Path) -> None:
    """A sparse file of a terabyte in place of a signed snapshot: refused from its size
    as snapshot-invalid (exit 2, as a snapshot that expands too far), not read into
    memory up to the limit and then reported as an unreadable store (exit 3)."""
    path = save_snapshot(_snapshot(), store, signing_key=KEY).path
    with path.open("r+b") as handle:
        handle.truncate(1 << 40)
    tracemalloc.start()
    try:
        with pytest.raises(SnapshotInvalidError, match="larger than") as caught:
            load_snapshot("run-7", store, trusted_keys=TRUSTED)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert caught.value.exit_code == ExitCode.USAGE
    assert peak < 16 * 1024 * 1024
    with pytest.raises(SnapshotInvalidError, match="larger than"):
        load_snapshot_file(path, insecure_skip_verify=True)
