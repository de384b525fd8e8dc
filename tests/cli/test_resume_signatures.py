"""``agc resume`` with signed snapshots: --trusted-key, $AGC_TRUSTED_KEYS,
--require-signature, --allow-unsigned (run in process through ``agc.cli.app.main``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agc._core.digest import new_hasher
from agc._core.sidecar import format_sidecar, sidecar_path
from agc.cli.app import main
from agc.exitcodes import ExitCode
from agc.integrity._signing import SigningKey, generate_keypair, load_signing_key
from agc.resume._snapshot import SessionSnapshot, ToolCallState, save_snapshot, signature_path

PENDING: list[dict[str, Any]] = [
    {"role": "user", "content": "hi"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "run", "arguments": "{}"}},
        ],
    },
]


@pytest.fixture
def keys(tmp_path: Path) -> tuple[SigningKey, Path, Path]:
    """A signing key, its public key file and the folder holding both."""
    folder = tmp_path / "keys"
    private, public, _ = generate_keypair(folder)
    return load_signing_key(private), public, folder


def _save(store: Path, key: SigningKey | None) -> Path:
    snapshot = SessionSnapshot("run-7", "s", PENDING, ToolCallState(True, "a"), {"model": "m"})
    return save_snapshot(snapshot, store, signing_key=key).path


def _resume(store: Path, *extra: str) -> int:
    return main(["resume", "run-7", "--store", str(store), "--check", "--json", *extra])


def _error(capsys: pytest.CaptureFixture[str]) -> dict[str, str]:
    error: dict[str, str] = json.loads(capsys.readouterr().out)["error"]
    return error


def test_a_signed_snapshot_resumes_under_its_trusted_key(
    store: Path, keys: tuple[SigningKey, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    key, public, folder = keys
    _save(store, key)
    assert _resume(store, "--trusted-key", str(public)) == ExitCode.FINDINGS  # history invalid
    assert json.loads(capsys.readouterr().out)["valid"] is False  # … but it was loaded
    assert main(["resume", "run-7", "--store", str(store), "--trusted-key", str(folder)]) == 0


def test_an_unsigned_snapshot_is_refused_with_a_trusted_key(
    store: Path, keys: tuple[SigningKey, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    _, public, _ = keys
    path = _save(store, None)
    assert main(["resume", "run-7", "--store", str(store)]) == 0  # unchanged without keys
    capsys.readouterr()
    assert _resume(store, "--trusted-key", str(public)) == ExitCode.FINDINGS
    error = _error(capsys)
    assert error["code"] == "unsigned"
    assert str(path) in error["message"]
    # --allow-unsigned relaxes it.
    args = ["resume", "run-7", "--store", str(store), "--trusted-key", str(public)]
    assert main([*args, "--allow-unsigned"]) == 0


def test_the_trusted_keys_folder_of_the_environment_requires_a_signature(
    store: Path,
    keys: tuple[SigningKey, Path, Path],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, _, folder = keys
    _save(store, None)
    monkeypatch.setenv("AGC_TRUSTED_KEYS", str(folder))
    assert _resume(store) == ExitCode.FINDINGS
    assert _error(capsys)["code"] == "unsigned"


def test_a_resealed_forgery_is_a_bad_signature_and_a_file_too(
    store: Path, keys: tuple[SigningKey, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    key, public, _ = keys
    path = _save(store, key)
    path.write_bytes(path.read_bytes().replace(b'"hi"', b'"rm"'))
    hasher = new_hasher("blake3")
    hasher.update(path.read_bytes())
    sidecar_path(path, "blake3").write_bytes(format_sidecar(hasher.hexdigest(), path.name))
    assert main(["resume", "run-7", "--store", str(store)]) == 0  # the seal alone passes
    capsys.readouterr()
    assert _resume(store, "--trusted-key", str(public)) == ExitCode.FINDINGS
    error = _error(capsys)
    assert error["code"] == "bad-signature"
    assert str(signature_path(path)) in error["message"]
    rc = main(["resume", str(path), "--check", "--json", "--trusted-key", str(public)])
    assert rc == ExitCode.FINDINGS
    assert _error(capsys)["code"] == "bad-signature"


def test_a_snapshot_signed_by_another_key_is_unknown_key(
    store: Path,
    keys: tuple[SigningKey, Path, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, public, _ = keys
    other, _, _ = generate_keypair(tmp_path / "other")
    _save(store, load_signing_key(other))
    assert _resume(store, "--trusted-key", str(public)) == ExitCode.FINDINGS
    assert _error(capsys)["code"] == "unknown-key"


def test_require_signature_without_a_trusted_key(
    store: Path, keys: tuple[SigningKey, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    key, _, _ = keys
    _save(store, key)
    assert _resume(store, "--require-signature") == ExitCode.FINDINGS
    assert _error(capsys)["code"] == "unknown-key"
    rc = _resume(store, "--require-signature", "--allow-unsigned")
    assert rc == ExitCode.USAGE
    assert _error(capsys)["code"] == "usage"


def test_a_signature_not_checked_is_a_warning(
    store: Path, keys: tuple[SigningKey, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    key, _, _ = keys
    _save(store, key)
    assert main(["resume", "run-7", "--store", str(store)]) == 0
    assert "signature was not checked" in capsys.readouterr().err


def test_insecure_skip_verify_checks_no_signature(
    store: Path, keys: tuple[SigningKey, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    _, public, _ = keys
    _save(store, None)
    args = ["resume", "run-7", "--store", str(store), "--trusted-key", str(public)]
    assert main([*args, "--insecure-skip-verify"]) == 0
    assert "nor its signature" in capsys.readouterr().err


def test_a_recorded_run_is_checked_under_the_trusted_key_too(
    store: Path,
    keys: tuple[SigningKey, Path, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, public, folder = keys
    source = tmp_path / "history.json"
    source.write_text(json.dumps(PENDING))
    assert main(["import", str(source), "--run-id", "u1", "--store", str(store)]) == 0
    signing = ["--signing-key", str(folder / "signing-key.pem")]
    assert main(["import", str(source), "--run-id", "s1", "--store", str(store), *signing]) == 0
    capsys.readouterr()
    trust = ["--trusted-key", str(public)]
    assert main(["resume", "u1", "--store", str(store)]) == 0  # unchanged without keys
    capsys.readouterr()
    assert main(["resume", "u1", "--store", str(store), "--json", *trust]) == ExitCode.FINDINGS
    error = _error(capsys)
    assert error["code"] == "incomplete"
    assert "not signed" in error["message"]
    assert main(["resume", "s1", "--store", str(store), *trust]) == 0
    assert main(["resume", "u1", "--store", str(store), *trust, "--allow-unsigned"]) == 0
