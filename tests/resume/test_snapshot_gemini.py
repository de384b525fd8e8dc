"""Snapshots of Gemini CLI sessions (format ``gemini-chat``): the session file's records,
made secret-free, sealed and signed as every snapshot, and restored by ``agc resume RUN
--out`` as a session file the client replays into the same request as the file itself.

Judged on the real Gemini CLI 0.61 session file (``tests/fixtures/hooks/gemini``) by
the independent model of what the client sends (``client_contents``) and the Gemini
API's pairing rule (``api_accepts``).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from agc._core.signing import SigningKey, key_id_of
from agc.cli.app import main
from agc.errors import SnapshotInvalidError, SnapshotTamperedError, UnknownKeyError
from agc.resume import (
    SessionSnapshot,
    load_history,
    load_snapshot,
    repair_loaded,
    save_snapshot,
    snapshot_path,
)
from tests.resume.formats.test_gemini_chat import REAL, api_accepts, client_contents

TOKEN_A = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
TOKEN_B = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


def _records(data: bytes) -> list[Any]:
    return [json.loads(line) for line in data.splitlines() if line.strip()]


def _snapshot(records: list[Any], run_id: str = "gemini-1") -> SessionSnapshot:
    return SessionSnapshot(
        run_id=run_id,
        session_id=records[0]["sessionId"],
        messages=records,
        agent_config={"provider": "gemini", "model": "gemini-3.8-flash", "apiKey": "AIza-x"},
        format="gemini-chat",
    )


def _outputs(data: bytes) -> list[str]:
    return [
        part["functionResponse"]["response"].get("output", "")
        for turn in client_contents(data)
        for part in turn["parts"]
        if "functionResponse" in part
    ]


def test_a_snapshot_round_trips_and_restores_the_session_the_client_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Saved and loaded, the records come back as they were; ``agc resume RUN --check``
    finds what it finds in the file; ``agc resume RUN --out`` writes a session file the
    client replays into the request the repair of the file itself gives, which the API
    accepts, with each completed result once, and says where the client reads it."""
    project = tmp_path / ".gemini" / "tmp" / "project"
    project.mkdir(parents=True)
    (project / ".project_root").write_text("/home/user/project")
    monkeypatch.setenv("GEMINI_CLI_HOME", str(tmp_path))
    data = REAL.read_bytes()
    records = _records(data)
    # the recorded header hashes the recording host's folder: this host's instead
    records[0]["projectHash"] = hashlib.sha256(b"/home/user/project").hexdigest()
    store = tmp_path / "store"
    saved = save_snapshot(_snapshot(records), store=store)
    assert saved.dropped_config_keys == ("apiKey",)
    loaded = load_snapshot("gemini-1", store=store)
    assert loaded.format == "gemini-chat"
    assert loaded.messages == records  # the real file holds no secret: nothing changed
    assert loaded.session_id == "00000000-0000-4000-8000-000000000001"

    capsys.readouterr()
    assert main(["resume", "gemini-1", "--store", str(store), "--check", "--json"]) == 1
    found = json.loads(capsys.readouterr().out)
    codes = [finding["code"] for finding in found.get("report", found)["findings"]]
    assert codes == ["duplicate-tool-result"] * 2

    out = tmp_path / "restored.jsonl"
    argv = ["resume", "gemini-1", "--store", str(store), "--strategy", "synthesize"]
    assert main([*argv, "--out", str(out)]) == 0
    said = capsys.readouterr().err
    assert "cd /home/user/project && gemini --resume 00000000-0000-4000-8000-000000000001" in said
    assert str(project / "chats" / "session-2026-12-06T20-59-00000000.jsonl") in said
    restored = out.read_bytes()
    direct = repair_loaded(load_history(data, source=REAL.name), strategy="synthesize").data
    assert client_contents(restored) == client_contents(direct)
    assert api_accepts(client_contents(restored))
    assert len(_outputs(restored)) == 2


def test_secrets_leave_the_snapshot_and_call_ids_they_made_equal_stay_apart(
    tmp_path: Path,
) -> None:
    """A token in a call's arguments, a secret in its result and two different tokens in
    the two call ids: the snapshot file holds none of them; the ids, redacted to one
    text, are saved as ``-1`` and ``-2`` in each call, its result and the client's copy
    of the result, so the restored session still pairs each call with its own result."""
    text = REAL.read_text()
    first, second = (
        "run_shell_command__run_shell_command_1796590757821_0",
        "run_shell_command__run_shell_command_1796590760129_0",
    )
    assert first in text
    assert second in text
    text = text.replace(first, f"call_{TOKEN_A}").replace(second, f"call_{TOKEN_B}")
    text = text.replace("echo agc-hook-probe", f"echo {TOKEN_A}")
    text = text.replace("Output: agc-hook-probe", f"Output: AWS_SECRET_ACCESS_KEY={AWS_SECRET}")
    records = _records(text.encode())
    store = tmp_path / "store"
    saved = save_snapshot(_snapshot(records), store=store)
    on_disk = saved.path.read_bytes()
    for secret in (TOKEN_A, TOKEN_B, AWS_SECRET, "AIza-x"):
        assert secret.encode() not in on_disk
    assert saved.redactions.get("github-token", 0) >= 2
    loaded = load_snapshot("gemini-1", store=store)
    restored = "".join(json.dumps(record) + "\n" for record in loaded.messages).encode()
    history = load_history(restored, source="restored.jsonl")
    call_ids = [block.call_id for m in history.messages for block in m.calls()]
    assert call_ids == ["call_[REDACTED:github-token]-1", "call_[REDACTED:github-token]-2"]
    repaired = repair_loaded(history, strategy="strip")
    assert repaired.report.before.codes() == {"duplicate-tool-result"}
    assert api_accepts(client_contents(repaired.data))
    outputs = _outputs(repaired.data)
    assert len(outputs) == 2
    assert "[REDACTED:" in outputs[0]
    assert "agc-hook-fail" in outputs[1]


def test_a_gemini_snapshot_is_sealed_and_signed_as_every_snapshot(tmp_path: Path) -> None:
    """A changed byte fails the seal; a signed snapshot loads under its key and not under
    another's."""
    records = _records(REAL.read_bytes())
    private = Ed25519PrivateKey.generate()
    key = SigningKey(private, key_id_of(private.public_key()))
    other = Ed25519PrivateKey.generate()
    store = tmp_path / "store"
    save_snapshot(_snapshot(records), store=store, signing_key=key)
    trusted = {key.key_id: private.public_key()}
    assert load_snapshot("gemini-1", store=store, trusted_keys=trusted).messages == records
    with pytest.raises(UnknownKeyError):
        load_snapshot(
            "gemini-1",
            store=store,
            trusted_keys={key_id_of(other.public_key()): other.public_key()},
        )
    path = snapshot_path("gemini-1", store)
    data = bytearray(path.read_bytes())
    data[data.index(b"agc-hook-probe")] ^= 0x20
    path.write_bytes(bytes(data))
    with pytest.raises(SnapshotTamperedError):
        load_snapshot("gemini-1", store=store)


def test_a_gemini_snapshot_holds_session_records_only(tmp_path: Path) -> None:
    """Its messages are the lines of a session file, each a JSON object: anything else
    would not be written back as the file it was; refused before anything is written."""
    records: list[Any] = [*_records(REAL.read_bytes()), "a line that is not JSON"]
    with pytest.raises(SnapshotInvalidError, match="each a JSON object"):
        save_snapshot(_snapshot(records), store=tmp_path / "store")
    assert not (tmp_path / "store" / "sessions").exists() or not any(
        (tmp_path / "store" / "sessions").iterdir()
    )
