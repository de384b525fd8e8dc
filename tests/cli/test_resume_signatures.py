"""``agc resume`` with signed snapshots: --trusted-key, $AGC_TRUSTED_KEYS,
--require-signature, --allow-unsigned (run in process through ``agc.cli.app.main``)."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agc._core.digest import new_hasher
from agc._core.sidecar import format_sidecar, sidecar_path
from agc.cli.app import main
from agc.exitcodes import ExitCode
from agc.integrity import SigningKey, generate_keypair, load_signing_key
from agc.resume import SessionSnapshot, ToolCallState, save_snapshot
from agc.resume._snapshot import signature_path
from tests.conftest import examples

REACHES_INSIDE = {
    "agc.resume._snapshot": "the signature file's path beside a snapshot",
}

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
    repair = ["resume", "run-7", "--store", str(store), "--out", "-"]  # written: exit 0
    assert main([*repair, "--trusted-key", str(folder)]) == 0


def test_an_unsigned_snapshot_is_refused_with_a_trusted_key(
    store: Path, keys: tuple[SigningKey, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    _, public, _ = keys
    path = _save(store, None)
    assert main(["resume", "run-7", "--store", str(store), "--out", "-"]) == 0  # no keys: loaded
    capsys.readouterr()
    assert _resume(store, "--trusted-key", str(public)) == ExitCode.FINDINGS
    error = _error(capsys)
    assert error["code"] == "unsigned"
    assert str(path) in error["message"]
    # --allow-unsigned relaxes it.
    args = ["resume", "run-7", "--store", str(store), "--trusted-key", str(public), "--out", "-"]
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
    assert main(["resume", "run-7", "--store", str(store), "--out", "-"]) == 0  # the seal passes
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
    assert main(["resume", "run-7", "--store", str(store), "--out", "-"]) == 0
    assert "signature was not checked" in capsys.readouterr().err


def test_insecure_skip_verify_checks_no_signature(
    store: Path, keys: tuple[SigningKey, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    _, public, _ = keys
    _save(store, None)
    args = ["resume", "run-7", "--store", str(store), "--trusted-key", str(public), "--out", "-"]
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
    assert main(["resume", "u1", "--store", str(store), "--out", "-"]) == 0  # no keys: loaded
    capsys.readouterr()
    assert main(["resume", "u1", "--store", str(store), "--json", *trust]) == ExitCode.FINDINGS
    error = _error(capsys)
    assert error["code"] == "incomplete"
    assert "not signed" in error["message"]
    assert main(["resume", "s1", "--store", str(store), *trust, "--out", "-"]) == 0
    allowed = ["--allow-unsigned", "--out", "-"]
    assert main(["resume", "u1", "--store", str(store), *trust, *allowed]) == 0


# A writer of the store who holds no key cannot sign a snapshot, but a FILE that is not
# a snapshot (a JSON array, a session file) carries no signature at all: were it read as
# a history, replacing a signed snapshot with one would resume what no key signed.
_NOT_SNAPSHOTS: dict[str, bytes] = {
    "json-array": json.dumps([{"role": "user", "content": "INJECTED"}]).encode(),
    "json-object-no-state": json.dumps(
        {"schemaVersion": 1, "messages": [{"role": "user", "content": "INJECTED"}]}
    ).encode(),
    "claude-code-jsonl": (
        json.dumps(
            {
                "type": "user",
                "uuid": "u1",
                "parentUuid": None,
                "sessionId": "s",
                "message": {"role": "user", "content": "INJECTED"},
            }
        )
        + "\n"
    ).encode(),
    "bom-snapshot": b"\xef\xbb\xbf" + json.dumps(PENDING).encode(),
}


@pytest.mark.parametrize("kind", sorted(_NOT_SNAPSHOTS))
def test_a_file_that_is_no_snapshot_is_unsigned_under_a_trusted_key(
    store: Path,
    keys: tuple[SigningKey, Path, Path],
    capsys: pytest.CaptureFixture[str],
    kind: str,
) -> None:
    key, public, _ = keys
    path = _save(store, key)
    path.write_bytes(_NOT_SNAPSHOTS[kind])  # the signed snapshot replaced, .sig left
    args = ["resume", str(path), "--check", "--json"]
    assert main([*args, "--trusted-key", str(public)]) == ExitCode.FINDINGS
    out = capsys.readouterr().out
    assert "INJECTED" not in out
    error = json.loads(out)["error"]
    assert error["code"] == "unsigned"
    assert str(path) in error["message"]
    assert main([*args, "--require-signature"]) == ExitCode.FINDINGS
    assert _error(capsys)["code"] == "unsigned"


def test_a_session_file_resumes_under_a_trusted_key_with_allow_unsigned(
    tmp_path: Path, keys: tuple[SigningKey, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    _, public, _ = keys
    source = tmp_path / "history.json"
    source.write_text(json.dumps(PENDING))
    assert main(["resume", str(source), "--check"]) == ExitCode.FINDINGS  # read, invalid
    trust = ["--trusted-key", str(public)]
    rc = main(["resume", str(source), "--check", *trust, "--allow-unsigned"])
    assert rc == ExitCode.FINDINGS
    assert "problem(s)" in capsys.readouterr().out  # … and read, not refused
    assert main(["resume", str(source), "--check", *trust, "--insecure-skip-verify"]) == 1


_MESSAGE = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant"]), "content": st.just("INJECTED")}
)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8) | _MESSAGE,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)
_FORGED = st.one_of(
    st.lists(_MESSAGE, min_size=1, max_size=3).map(lambda m: json.dumps(m).encode()),
    _JSON.map(lambda value: json.dumps(value).encode()),
    st.lists(_JSON, min_size=1, max_size=3).map(
        lambda lines: b"".join(json.dumps(line).encode() + b"\n" for line in lines)
    ),
    st.binary(max_size=64),
)


@settings(max_examples=examples(60), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(forged=_FORGED, reseal=st.booleans())
def test_no_bytes_in_place_of_a_signed_snapshot_resume_under_its_key(
    tmp_path_factory: pytest.TempPathFactory,
    keys: tuple[SigningKey, Path, Path],
    forged: bytes,
    reseal: bool,
) -> None:
    """Whatever a writer of the store puts at a signed snapshot's path (re-sealed or not,
    its .sig left), `agc resume FILE --trusted-key` refuses it (exit 1), never reads it."""
    key, public, _ = keys
    store = tmp_path_factory.mktemp("store")
    path = _save(store, key)
    path.write_bytes(forged)
    if reseal:
        hasher = new_hasher("blake3")
        hasher.update(forged)
        sidecar_path(path, "blake3").write_bytes(format_sidecar(hasher.hexdigest(), path.name))
    with contextlib.redirect_stdout(io.StringIO()) as out:
        rc = main(["resume", str(path), "--check", "--json", "--trusted-key", str(public)])
    assert rc == ExitCode.FINDINGS, out.getvalue()
    assert json.loads(out.getvalue())["error"]["code"] in {
        "unsigned",
        "bad-signature",
        "snapshot-tampered",
    }
