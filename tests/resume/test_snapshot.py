"""Tests for agc.resume._snapshot: atomic, 0600, sealed, secret-free, tamper-evident."""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agc._core.digest import new_hasher
from agc._core.json import MAX_DEPTH
from agc.errors import (
    AgcError,
    SnapshotInvalidError,
    SnapshotNotFoundError,
    SnapshotTamperedError,
    SnapshotUnsealedError,
    UnsafePathError,
)
from agc.resume import (
    SessionSnapshot,
    ToolCallState,
    load_snapshot,
    resume_session,
    save_snapshot,
    snapshot_path,
)
from tests.conftest import examples

KEY = "sk-proj-" + "S3cr3t" * 8


def _snapshot(run_id: str = "run-1") -> SessionSnapshot:
    return SessionSnapshot(
        run_id=run_id,
        session_id="sess-1",
        node_id="node-a",
        messages=[
            {"role": "user", "content": f"use {KEY} please"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": "call-1",
                        "type": "function",
                        "function": {"name": "run", "arguments": '{"cmd": "ls"}'},
                    }
                ],
            },
        ],
        tool_call_state=ToolCallState(True, "call-1"),
        agent_config={
            "provider": "openai",
            "model": "gpt-5",
            "workspace": "/w",
            "apiKey": KEY,
            "baseUrl": "https://proxy.example/v1",
            "headers": {"X-Token": "t"},
        },
    )


@pytest.mark.parametrize("compress", [False, True])
def test_save_and_load_round_trip(store: Path, compress: bool) -> None:
    result = save_snapshot(_snapshot(), store, compress=compress)
    assert result.path == snapshot_path("run-1", store, compressed=compress)
    assert stat.S_IMODE(os.stat(result.path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(result.sidecar).st_mode) == 0o600
    loaded = load_snapshot("run-1", store)
    assert loaded.session_id == "sess-1"
    assert loaded.node_id == "node-a"
    assert loaded.tool_call_state == ToolCallState(True, "call-1")
    assert loaded.agent_config == {"provider": "openai", "model": "gpt-5", "workspace": "/w"}
    assert loaded.messages[0]["content"] == "use [REDACTED:openai-key] please"
    assert result.redactions == {"openai-key": 1}
    assert result.dropped_config_keys == ("apiKey", "baseUrl", "headers")


def test_sidecar_is_the_transcript_sidecar_format(store: Path) -> None:
    result = save_snapshot(_snapshot(), store)
    hasher = new_hasher("blake3")
    hasher.update(result.path.read_bytes())
    assert result.sidecar.read_text() == f"{hasher.hexdigest()}  run-1.json\n"


def test_sha256_seal(store: Path) -> None:
    result = save_snapshot(_snapshot(), store, algorithm="sha256")
    assert result.sidecar.name == "run-1.json.sha256"
    assert load_snapshot("run-1", store).run_id == "run-1"


def test_compressed_file_is_zstd_and_replaces_plain(store: Path) -> None:
    plain = save_snapshot(_snapshot(), store)
    packed = save_snapshot(_snapshot(), store, compress=True)
    assert not plain.path.exists()
    assert not plain.sidecar.exists()
    data = zstandard.ZstdDecompressor().decompress(packed.path.read_bytes())
    assert json.loads(data)["runId"] == "run-1"


def test_no_secret_reaches_the_store(store: Path) -> None:
    save_snapshot(_snapshot(), store)
    for path in store.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert KEY.encode() not in data
            assert b"proxy.example" not in data
    assert sorted(p.name for p in (store / "sessions").iterdir()) == ["run-1.json", "run-1.json.b3"]


def test_allow_list_keeps_no_nested_config(store: Path) -> None:
    # Seed 004's allow-list is provider, model, workspace: a credential nested under an
    # allowed key ({"provider": {"apiKey": …}}) is not one of them, whatever its format.
    snapshot = SessionSnapshot(
        "run-1",
        "s",
        [{"role": "user", "content": "hi"}],
        agent_config={
            "provider": {"name": "openai", "apiKey": "plain-credential-123"},
            "model": "gpt-5",
            "workspace": ["/w", {"token": "plain-credential-456"}],
        },
    )
    result = save_snapshot(snapshot, store)
    data = result.path.read_bytes()
    assert b"plain-credential" not in data
    assert result.dropped_config_keys == ("provider", "workspace")
    assert load_snapshot("run-1", store).agent_config == {"model": "gpt-5"}


def test_resume_session_returns_empty_credentials(store: Path) -> None:
    save_snapshot(_snapshot(), store)
    resumed = resume_session("run-1", store)
    assert resumed.context == {
        "provider": "openai",
        "model": "gpt-5",
        "workspace": "/w",
        "apiKey": "",
        "baseUrl": "",
    }
    assert resumed.was_interrupted
    assert resumed.messages == [{"role": "user", "content": "use [REDACTED:openai-key] please"}]
    change = resumed.report.changes[0]
    assert change.action == "stripped"
    assert change.tool_name == "run"
    assert change.arguments == '{"cmd": "ls"}'
    assert change.idempotency_key is not None
    assert change.idempotency_key.startswith("idem-")


def _flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:-10])


def _empty(path: Path) -> None:
    path.write_bytes(b"")


def _extend(path: Path) -> None:
    path.write_bytes(path.read_bytes() + b" ")


def _drop_sidecar(path: Path) -> None:
    path.with_name(path.name + ".b3").unlink()


def _upper_sidecar(path: Path) -> None:
    sidecar = path.with_name(path.name + ".b3")
    digest, _, name = sidecar.read_text().partition("  ")
    sidecar.write_text(f"{digest.upper()}  {name}")


def _sidecar_names_other(path: Path) -> None:
    sidecar = path.with_name(path.name + ".b3")
    digest, _, _ = sidecar.read_text().partition("  ")
    sidecar.write_text(f"{digest}  other.json\n")


def _reseal_other_run(path: Path) -> None:
    # A valid, sealed snapshot of another run copied under this run's name.
    data = path.read_bytes().replace(b'"runId":"run-1"', b'"runId":"run-2"')
    path.write_bytes(data)
    hasher = new_hasher("blake3")
    hasher.update(data)
    path.with_name(path.name + ".b3").write_text(f"{hasher.hexdigest()}  {path.name}\n")


TAMPERING: list[tuple[str, Callable[[Path], None], type[AgcError]]] = [
    ("byte-flipped", _flip, SnapshotTamperedError),
    ("truncated", _truncate, SnapshotTamperedError),
    ("emptied", _empty, SnapshotTamperedError),
    ("extended", _extend, SnapshotTamperedError),
    ("sidecar-deleted", _drop_sidecar, SnapshotUnsealedError),
    ("sidecar-upper-case", _upper_sidecar, SnapshotTamperedError),
    ("sidecar-names-other-file", _sidecar_names_other, SnapshotTamperedError),
    ("other-run-resealed", _reseal_other_run, SnapshotInvalidError),
]


@pytest.mark.parametrize(
    ("tamper", "error"),
    [pytest.param(t, e, id=name) for name, t, e in TAMPERING],
)
def test_tampered_snapshot_is_refused(
    store: Path, tamper: Callable[[Path], None], error: type[AgcError]
) -> None:
    result = save_snapshot(_snapshot(), store)
    tamper(result.path)
    with pytest.raises(error):
        load_snapshot("run-1", store)


def test_insecure_skip_verify_reads_an_unsealed_snapshot(store: Path) -> None:
    result = save_snapshot(_snapshot(), store)
    _drop_sidecar(result.path)
    assert load_snapshot("run-1", store, insecure_skip_verify=True).run_id == "run-1"
    _truncate(result.path)
    with pytest.raises(SnapshotInvalidError):
        load_snapshot("run-1", store, insecure_skip_verify=True)


def test_missing_snapshot(store: Path) -> None:
    with pytest.raises(SnapshotNotFoundError):
        load_snapshot("nope", store)


def test_symlinked_snapshot_is_refused(store: Path, tmp_path: Path) -> None:
    result = save_snapshot(_snapshot(), store)
    target = tmp_path / "elsewhere.json"
    target.write_bytes(result.path.read_bytes())
    result.path.unlink()
    result.path.symlink_to(target)
    with pytest.raises(UnsafePathError):
        load_snapshot("run-1", store)


def test_save_leaves_no_temporary_files(store: Path) -> None:
    save_snapshot(_snapshot(), store)
    save_snapshot(_snapshot(), store)
    assert sorted(p.name for p in (store / "sessions").iterdir()) == ["run-1.json", "run-1.json.b3"]


@pytest.mark.parametrize(
    ("format", "messages"),
    [
        # Anthropic tool_use blocks saved under the default format, openai-chat.
        (
            "openai-chat",
            [
                {"role": "user", "content": "go"},
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "t1", "name": "n", "input": {}}],
                },
            ],
        ),
        ("anthropic", [{"role": "user", "content": 5}]),
        ("openai-responses", [{"no": "type"}]),
    ],
)
def test_messages_that_do_not_fit_the_format_are_refused_before_writing(
    store: Path, format: str, messages: list[dict[str, object]]
) -> None:
    # Loading refuses them (snapshot-invalid): a sealed snapshot that can never be
    # resumed must not be written.
    bad = SessionSnapshot("run-1", "s", messages, format=format)  # type: ignore[arg-type]
    with pytest.raises(SnapshotInvalidError):
        save_snapshot(bad, store)
    assert not (store / "sessions").exists() or not list((store / "sessions").iterdir())


def test_non_json_value_is_refused_before_writing(store: Path) -> None:
    bad = SessionSnapshot("run-1", "s", [{"role": "user", "content": float("nan")}])
    with pytest.raises(SnapshotInvalidError):
        save_snapshot(bad, store)
    assert not (store / "sessions" / "run-1.json").exists()


@pytest.mark.parametrize("depth", [MAX_DEPTH, 4 * MAX_DEPTH])
def test_messages_nested_deeper_than_json_allows_are_refused_before_writing(
    store: Path, depth: int
) -> None:
    """A snapshot loading would refuse (nested deeper than agc's JSON limit) is never
    sealed, and a very deep one is snapshot-invalid, not a RecursionError."""
    deep: Any = "x"
    for _ in range(depth):
        deep = [deep]
    bad = SessionSnapshot("run-1", "s", [{"role": "user", "content": "hi", "extra": deep}])
    with pytest.raises(SnapshotInvalidError, match="deeper"):
        save_snapshot(bad, store)
    assert not (store / "sessions" / "run-1.json").exists()


# --- property: no secret ever reaches the disk -------------------------------------------

_B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


def _chars(alphabet: str, size: int) -> st.SearchStrategy[str]:
    return st.text(alphabet=alphabet, min_size=size, max_size=size)


_ALNUM = _B64
_PLACEHOLDER_START = re.compile(
    r"(?i)(?:your|my|insert|enter|example|sample|dummy|fake|placeholder|replace)[-_ .]"
)
_SECRETS: st.SearchStrategy[tuple[str, str]] = st.one_of(
    _chars(_ALNUM + "_-", 40).map(lambda s: ("sk-proj-" + s, "sk-proj-" + s)),
    _chars(_ALNUM + "_-", 60).map(lambda s: ("sk-ant-api03-" + s, "sk-ant-api03-" + s)),
    _chars("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16).map(lambda s: ("AKIA" + s, "AKIA" + s)),
    _chars(_ALNUM, 36).map(lambda s: ("ghp_" + s, "ghp_" + s)),
    _chars(_ALNUM + "_-", 20).map(lambda s: ("glpat-" + s, "glpat-" + s)),
    _chars(_ALNUM + "-", 24).map(lambda s: ("xoxb-" + s, "xoxb-" + s)),
    _chars(_ALNUM + "_-", 35).map(lambda s: ("AIza" + s, "AIza" + s)),
    # A bearer token is random: "Bearer 0000…", one holding "...", and one that starts
    # like "my.", "your-" or "example_" (docs/secrets.md, placeholders) are left alone.
    _chars(_ALNUM + "._~+/-", 32)
    .filter(lambda s: len(set(s)) >= 8 and "..." not in s)
    .filter(lambda s: _PLACEHOLDER_START.match(s) is None)
    .map(lambda s: ("Bearer " + s, s)),
    _chars(_B64, 64).map(
        lambda s: (
            "-----BEGIN OPENSSH PRIVATE KEY-----\n"
            f"{s}\n{s[::-1]}\n-----END OPENSSH PRIVATE KEY-----",
            s,
        )
    ),
)
_FILLER = st.text(alphabet=_ALNUM + " .,:;!?()\n", max_size=30)


@st.composite
def _snapshot_with_secrets(draw: st.DrawFn) -> tuple[SessionSnapshot, list[str]]:
    """A snapshot with secrets in message text, tool arguments, results and config."""
    planted: list[str] = []

    def text() -> str:
        parts = []
        for _ in range(draw(st.integers(0, 2))):
            shown, core = draw(_SECRETS)
            planted.append(core)
            # A secret may start a line: in tool arguments (JSON text) it then follows
            # the escape `\n`.
            before = draw(st.sampled_from([" ", "\n", "\t", "=", "'"]))
            parts.append(f"{draw(_FILLER)}{before}{shown} {draw(_FILLER)}")
        return " ".join(parts) or draw(_FILLER)

    messages: list[dict[str, object]] = [{"role": "system", "content": text()}]
    for index in range(draw(st.integers(1, 4))):
        call_id = f"call_{index}"
        messages.append({"role": "user", "content": [{"type": "text", "text": text()}]})
        arguments = json.dumps({"cmd": text(), "env": {"TOKEN": text()}})
        messages.append(
            {
                "role": "assistant",
                "content": text(),
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": "run", "arguments": arguments},
                    }
                ],
            }
        )
        if draw(st.booleans()):
            messages.append({"role": "tool", "tool_call_id": call_id, "content": text()})
    config: dict[str, object] = {"provider": "openai", "model": text(), "workspace": text()}
    shown, core = draw(_SECRETS)
    config[draw(st.sampled_from(["apiKey", "api_key", "baseUrl", "token", "extra"]))] = shown
    planted.append(core)
    snapshot = SessionSnapshot(
        run_id="prop",
        session_id="s",
        messages=messages,
        tool_call_state=ToolCallState(draw(st.booleans()), "call_0"),
        agent_config=config,
    )
    return snapshot, planted


@settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(case=_snapshot_with_secrets(), compress=st.booleans())
def test_property_no_secret_reaches_disk(
    tmp_path: Path, case: tuple[SessionSnapshot, list[str]], compress: bool
) -> None:
    snapshot, planted = case
    store = tmp_path / f"store-{os.urandom(4).hex()}"
    save_snapshot(snapshot, store, compress=compress)
    for path in (store / "sessions").iterdir():
        data = path.read_bytes()
        if path.name.endswith(".zst"):
            data = zstandard.ZstdDecompressor().decompress(data)
        text = data.decode("utf-8")
        decoded = json.dumps(json.loads(text), ensure_ascii=False) if path.suffix != ".b3" else ""
        for secret in planted:
            assert secret not in text
            assert secret not in decoded
            assert json.dumps(secret)[1:-1] not in text
    resumed = resume_session("prop", store)
    assert resumed.context["apiKey"] == ""
    assert resumed.report.after.valid


def test_lone_surrogate_round_trips_through_a_snapshot(store: Path) -> None:
    text = "cut mid-emoji: \ud83d"
    save_snapshot(SessionSnapshot("run-1", "s", [{"role": "user", "content": text}]), store)
    assert load_snapshot("run-1", store).messages[0]["content"] == text
