"""A kill between any two steps of saving a snapshot never yields a wrong snapshot.

The child process below saves a run's second snapshot (the same or the other
compression) and is killed right before its k-th mutating system call (``write``,
``open(O_CREAT)``, ``replace``, ``rename``, ``link``, ``unlink``), for every k. After each
kill, loading the run gives the earlier snapshot or the new one, each sealed and whole,
or refuses (``snapshot-unsealed``, or ``snapshot-invalid`` when both compressions are
left): never a torn or mixed document as valid. The next save then succeeds and is
loaded as saved.

Saved with a signing key, every kill leaves, under the trusted key, a snapshot fully
signed or one sealed but unsigned (``unsigned``), never a signature file beside bytes it
does not sign (which would load as ``bad-signature``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from agc._core.digest import new_hasher
from agc._core.signing import SigningKey, key_id_of
from agc.errors import SnapshotInvalidError, SnapshotUnsealedError, UnsignedError
from agc.resume import SessionSnapshot, ToolCallState, load_snapshot, save_snapshot, snapshot_path
from agc.resume._snapshot import signature_path
from tests.faults import kill_at_step

REACHES_INSIDE = {
    "agc.resume._snapshot": "the signature file's path next to a snapshot",
}

# Kills and disk faults: os.fsync stays real here (tests/conftest.py, _fsync_off).
pytestmark = pytest.mark.real_fsync

_PRIVATE = Ed25519PrivateKey.generate()
KEY = SigningKey(_PRIVATE, key_id_of(_PRIVATE.public_key()))
TRUSTED = {KEY.key_id: _PRIVATE.public_key()}


def _snapshot(turns: int) -> SessionSnapshot:
    messages: list[Any] = [{"role": "user", "content": f"turn {n} " * 200} for n in range(turns)]
    return SessionSnapshot("run-7", "s", messages, ToolCallState(False, None), {"model": "m"})


FIRST, SECOND, THIRD = _snapshot(1), _snapshot(2), _snapshot(3)


def _save_in_child(
    store: Path, step: int, *, compress: bool, signing_key: SigningKey | None = None
) -> int:
    """Fork; the child saves SECOND with a kill at ``step``; its exit code (0: finished
    before ``step``, else the number of steps it made when ``step`` is huge)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        code = 0
        try:
            counter = kill_at_step(step)
            save_snapshot(SECOND, store, compress=compress, signing_key=signing_key)
            code = min(counter(), 250) if step > 250 else 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def _outcome(store: Path, step: int) -> str:
    """What loading the run gives after the kill at ``step`` (asserting it is allowed)."""
    try:
        loaded = load_snapshot("run-7", store)
    except SnapshotUnsealedError:
        return "unsealed"
    except SnapshotInvalidError as exc:
        message = exc.message
        if "both" not in message:
            raise
        return "both"
    assert loaded.messages in (FIRST.messages, SECOND.messages), step
    return "first" if loaded.messages == FIRST.messages else "second"


@pytest.mark.parametrize(("first", "second"), [(False, False), (False, True), (True, False)])
def test_a_kill_at_any_step_of_a_save_never_loads_a_wrong_snapshot(
    tmp_path: Path, first: bool, second: bool
) -> None:
    probe = tmp_path / "probe"
    save_snapshot(FIRST, probe, compress=first)
    steps = _save_in_child(probe, 10**9, compress=second)
    assert 3 <= steps < 250, steps
    outcomes: set[str] = set()
    for step in range(1, steps + 1):
        store = tmp_path / f"s{step}"
        save_snapshot(FIRST, store, compress=first)
        assert _save_in_child(store, step, compress=second) == 9
        outcomes.add(_outcome(store, step))
        save_snapshot(THIRD, store, compress=second)
        assert load_snapshot("run-7", store).messages == THIRD.messages
    assert "first" in outcomes, outcomes  # a kill before anything is replaced


def _signatures_sign_their_bytes(store: Path, step: int) -> None:
    """Every signature file left names the file beside it and that file's bytes."""
    for compressed in (False, True):
        path = snapshot_path("run-7", store, compressed=compressed)
        signature = signature_path(path)
        if not signature.exists():
            continue
        document = json.loads(signature.read_bytes())
        assert path.exists(), step
        data = path.read_bytes()
        hasher = new_hasher(document["algorithm"])
        hasher.update(data)
        assert (document["file"], document["digest"], document["bytes"]) == (
            path.name,
            hasher.hexdigest(),
            len(data),
        ), step


def _signed_outcome(store: Path, step: int) -> str:
    """What loading under the trusted key gives after the kill at ``step``; a
    ``bad-signature`` (or any other error) fails the test."""
    try:
        loaded = load_snapshot("run-7", store, trusted_keys=TRUSTED)
    except UnsignedError:
        loaded = load_snapshot("run-7", store)  # sealed, only the signature is missing
        assert loaded.messages in (FIRST.messages, SECOND.messages), step
        return "unsigned"
    except SnapshotUnsealedError:
        return "unsealed"
    except SnapshotInvalidError as exc:
        if "both" not in exc.message:
            raise
        return "both"
    assert loaded.messages in (FIRST.messages, SECOND.messages), step
    return "first" if loaded.messages == FIRST.messages else "second"


@pytest.mark.parametrize(("first", "second"), [(False, False), (False, True), (True, False)])
@pytest.mark.parametrize("resign", [True, False])
def test_a_kill_at_any_step_of_a_signed_save_never_leaves_a_signature_over_other_bytes(
    tmp_path: Path, first: bool, second: bool, resign: bool
) -> None:
    # The earlier snapshot is signed; the save killed is signed too (resign) or not.
    key = KEY if resign else None
    probe = tmp_path / "probe"
    save_snapshot(FIRST, probe, compress=first, signing_key=KEY)
    steps = _save_in_child(probe, 10**9, compress=second, signing_key=key)
    assert 3 <= steps < 250, steps
    outcomes: set[str] = set()
    for step in range(1, steps + 1):
        store = tmp_path / f"s{step}"
        save_snapshot(FIRST, store, compress=first, signing_key=KEY)
        assert _save_in_child(store, step, compress=second, signing_key=key) == 9
        _signatures_sign_their_bytes(store, step)
        outcomes.add(_signed_outcome(store, step))
        save_snapshot(THIRD, store, compress=second, signing_key=KEY)
        assert load_snapshot("run-7", store, trusted_keys=TRUSTED).messages == THIRD.messages
    assert "first" in outcomes, outcomes  # a kill before anything is replaced
    if resign and first == second:
        # A kill after the new sidecar and before the signature: sealed, unsigned.
        assert "unsigned" in outcomes, outcomes
