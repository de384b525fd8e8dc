"""Resume only from verified evidence (:mod:`agc.flows`), called as a library: a
recorded run is verified before its records are read, a tampered one is refused (or
used with a warning under the insecure switch), and a file that carries no signature is
refused when one is required."""

from __future__ import annotations

import io
import json
import tempfile
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from agc.errors import RunNotFoundError, UnsignedError, VerificationError
from agc.flows import (
    StoreLayout,
    has_recorded_run,
    history_from_run,
    refuse_unsigned_file,
    refuse_unverified,
    streamable_size,
)
from agc.integrity import RunReport, check_run, generate_keypair, ingest_stream, load_trusted_keys
from agc.resume import check_loaded, has_snapshot

_MAX = 1 << 20


def _rollout(calls: int = 2) -> bytes:
    """A Codex rollout: a user message and ``calls`` calls, the last one unanswered."""
    items: list[dict[str, Any]] = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]}
    ]
    for index in range(calls):
        items.append(
            {
                "type": "function_call",
                "name": "exec_command",
                "arguments": json.dumps({"cmd": f"step {index}"}),
                "call_id": f"call_{index}",
            }
        )
        if index < calls - 1:
            items.append(
                {"type": "function_call_output", "call_id": f"call_{index}", "output": "ok"}
            )
    lines = [{"timestamp": "t", "type": "session_meta", "payload": {"id": "s1"}}]
    lines += [{"timestamp": "t", "type": "response_item", "payload": item} for item in items]
    return "".join(json.dumps(line, separators=(",", ":")) + "\n" for line in lines).encode()


def _record(store: Path, run_id: str = "r1", data: bytes | None = None) -> None:
    ingest_stream(io.BytesIO(data or _rollout()), run_id, store=store, fsync="none")


def _tamper(store: Path, run_id: str = "r1") -> None:
    path = StoreLayout(store).artifact_path(run_id, "transcript")
    path.write_bytes(path.read_bytes().replace(b"step 0", b"step 9"))


def test_a_recorded_run_is_verified_then_read_as_its_session(tmp_path: Path) -> None:
    store = tmp_path / "store"
    _record(store)
    with ExitStack() as stack:
        history, size = history_from_run("r1", store, stack=stack, max_bytes=_MAX)
        report = check_loaded(history)
    assert history.format == "codex-rollout"
    assert size == len(_rollout())
    assert [finding.code for finding in report.findings] == ["tool-call-unanswered"]


def test_a_tampered_run_is_refused_before_it_is_read(tmp_path: Path) -> None:
    store = tmp_path / "store"
    _record(store)
    _tamper(store)
    with ExitStack() as stack, pytest.raises(VerificationError) as caught:
        history_from_run("r1", store, stack=stack, max_bytes=_MAX)
    report = caught.value.report
    assert isinstance(report, RunReport)
    assert not report.complete
    assert "does not verify" in caught.value.message


def test_the_insecure_switch_reads_a_tampered_run_and_says_so(tmp_path: Path) -> None:
    store = tmp_path / "store"
    _record(store)
    _tamper(store)
    warnings: list[str] = []
    with ExitStack() as stack:
        history, _ = history_from_run(
            "r1",
            store,
            stack=stack,
            max_bytes=_MAX,
            insecure_skip_verify=True,
            on_warning=warnings.append,
        )
    assert history.messages
    assert len(warnings) == 1
    assert "--insecure-skip-verify: run r1 does not verify" in warnings[0]


def test_a_run_not_signed_by_a_trusted_key_is_refused(tmp_path: Path) -> None:
    store = tmp_path / "store"
    _record(store)
    _, public, _ = generate_keypair(tmp_path / "keys")
    keys = load_trusted_keys([public])
    with ExitStack() as stack, pytest.raises(VerificationError):
        history_from_run("r1", store, stack=stack, max_bytes=_MAX, trusted_keys=keys)
    with ExitStack() as stack:
        history, _ = history_from_run(
            "r1", store, stack=stack, max_bytes=_MAX, trusted_keys=keys, allow_unsigned=True
        )
    assert history.messages


def test_an_unknown_run_is_no_history(tmp_path: Path) -> None:
    store = tmp_path / "store"
    _record(store)
    with ExitStack() as stack, pytest.raises((RunNotFoundError, VerificationError)):
        history_from_run("other", store, stack=stack, max_bytes=_MAX)
    assert has_recorded_run("r1", store)
    assert not has_recorded_run("other", store)
    assert not has_snapshot("r1", store)


def test_the_temporary_session_lives_as_long_as_the_stack(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "store"
    _record(store)
    private = tmp_path / "tmp"
    private.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(private))
    with ExitStack() as stack:
        history_from_run("r1", store, stack=stack, max_bytes=_MAX)
        kept = list(private.glob("agc-resume-run-*"))
        assert len(kept) == 1
    assert not kept[0].exists()


def test_refuse_unverified_passes_a_complete_run(tmp_path: Path) -> None:
    store = tmp_path / "store"
    _record(store)
    report = check_run("r1", store)
    refuse_unverified(report, "r1", insecure=False)  # no error
    _tamper(store)
    with pytest.raises(VerificationError):
        refuse_unverified(check_run("r1", store), "r1", insecure=False)


@pytest.mark.parametrize(
    ("with_key", "require", "allow", "insecure", "refused"),
    [
        (False, False, False, False, False),
        (True, False, False, False, True),
        (False, True, False, False, True),
        (True, False, True, False, False),
        (True, False, False, True, False),
    ],
    ids=["no-key", "key", "required", "key-allow-unsigned", "key-insecure"],
)
def test_a_file_that_is_no_snapshot_is_unsigned(
    tmp_path: Path, with_key: bool, require: bool, allow: bool, insecure: bool, refused: bool
) -> None:
    path = tmp_path / "session.jsonl"
    path.write_bytes(_rollout())
    keys = load_trusted_keys([generate_keypair(tmp_path / "keys")[1]]) if with_key else None
    kwargs = {
        "trusted_keys": keys,
        "require_signature": require,
        "allow_unsigned": allow,
        "insecure": insecure,
    }
    if refused:
        with pytest.raises(UnsignedError):
            refuse_unsigned_file(path, **kwargs)  # type: ignore[arg-type]
    else:
        refuse_unsigned_file(path, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("content", "format", "streamed"),
    [
        (_rollout(), None, True),
        (_rollout(), "codex-rollout", True),
        (_rollout(), "openai-chat", False),  # a JSON-array format is read whole
        (b'[{"role": "user", "content": "hi"}]', None, False),
        (b'{"toolCallState": {}, "messages": []}\n', None, False),  # a snapshot
        (b"not json\n", None, False),
    ],
    ids=["session", "session-format", "array-format", "array", "snapshot", "not-json"],
)
def test_streamable_size_names_what_is_read_line_by_line(
    tmp_path: Path, content: bytes, format: Any, streamed: bool
) -> None:
    path = tmp_path / "input.jsonl"
    path.write_bytes(content)
    assert streamable_size(path, format) == (len(content) if streamed else None)
