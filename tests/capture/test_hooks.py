"""Tests for reading a client hook's event JSON into one tool-events record."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agc.capture import (
    CLIENTS,
    EVENT_KINDS,
    MAX_HOOK_EVENT_BYTES,
    ToolEvent,
    event_kind,
    parse_hook_event,
)
from agc.errors import HookEventInvalidError

# The members each client sends (Claude Code's hooks reference; Codex's hook input
# schemas, codex-rs/hooks/schema/generated; the Gemini CLI's hooks reference).
CLAUDE_PRE = {
    "session_id": "0199a1b2-7c3d-7e4f-8a9b-0c1d2e3f4a5b",
    "transcript_path": "/home/u/.claude/projects/p/0199a1b2.jsonl",
    "cwd": "/home/u/p",
    "permission_mode": "default",
    "hook_event_name": "PreToolUse",
    "tool_name": "Bash",
    "tool_input": {"command": "ls", "description": "list"},
    "tool_use_id": "toolu_01ABC",
}
CODEX_POST = {
    "session_id": "019a-thread",
    "transcript_path": None,
    "cwd": "/w",
    "hook_event_name": "PostToolUse",
    "model": "gpt-5-codex",
    "permission_mode": "default",
    "tool_name": "shell",
    "tool_input": {"command": ["ls"]},
    "tool_response": "a\nb\n",
    "tool_use_id": "call_7",
    "turn_id": "t1",
}
GEMINI_AFTER = {
    "session_id": "g-1",
    "transcript_path": "/home/u/.gemini/tmp/p/chats/session-x.jsonl",
    "cwd": "/w",
    "hook_event_name": "AfterTool",
    "timestamp": "2026-12-06T20:00:00.000Z",
    "tool_name": "run_shell_command",
    "tool_input": {"command": "false"},
    "tool_response": {"llmContent": "", "returnDisplay": "", "error": "exit 1"},
}


def _bytes(value: Any) -> bytes:
    return json.dumps(value).encode()


def test_a_claude_code_call_keeps_tool_call_id_and_input() -> None:
    event = parse_hook_event("claude-code", _bytes(CLAUDE_PRE))
    record = event.record
    assert (record.event, record.tool, record.call_id) == ("call", "Bash", "toolu_01ABC")
    assert record.input == {"command": "ls", "description": "list"}
    assert (record.status, record.result_bytes, record.hook) == (None, None, "PreToolUse")
    assert event.transcript_path == CLAUDE_PRE["transcript_path"]
    assert event.cwd == "/home/u/p"
    assert not event.ends_session


def test_a_codex_result_has_its_size_status_and_model_but_no_input() -> None:
    event = parse_hook_event("codex", _bytes(CODEX_POST))
    record = event.record
    assert (record.event, record.status, record.call_id) == ("result", "ok", "call_7")
    assert record.result_bytes == len(json.dumps("a\nb\n"))
    assert record.input is None
    assert event.model == "gpt-5-codex"
    assert event.transcript_path is None  # null in the payload


def test_a_gemini_result_with_an_error_is_a_failure_without_a_call_id() -> None:
    record = parse_hook_event("gemini", _bytes(GEMINI_AFTER)).record
    assert (record.event, record.status, record.call_id) == ("result", "error", None)
    assert record.agent_ts == "2026-12-06T20:00:00.000Z"


def test_a_claude_code_failure_event_is_a_failed_result() -> None:
    payload = {**CLAUDE_PRE, "hook_event_name": "PostToolUseFailure", "error": "exit 2"}
    record = parse_hook_event("claude-code", _bytes(payload)).record
    assert (record.event, record.status, record.result_bytes) == ("result", "error", 8)


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("SessionEnd", "session-end"),
        ("sessionEnd", "session-end"),
        ("session_end", "session-end"),
        ("BeforeTool", "call"),
        ("preToolUse", "call"),
        ("Stop", "stop"),
        ("AfterAgent", "stop"),
        ("PreCompress", "compact"),
        ("UserPromptSubmit", "prompt"),
        ("Notification", "other"),
    ],
)
def test_event_names_of_every_client_map_to_one_kind(name: str, kind: str) -> None:
    assert event_kind(name) == kind
    record = parse_hook_event("codex", _bytes({"session_id": "s", "hook_event_name": name}))
    assert record.record.event == kind
    assert record.record.hook == name
    assert record.ends_session == (kind == "session-end")


def test_every_table_name_is_already_normalised() -> None:
    assert all(name == name.lower() and name.isalpha() for name in EVENT_KINDS)


def test_a_secret_in_a_tool_input_is_redacted_in_the_record() -> None:
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    payload = {**CLAUDE_PRE, "tool_input": {"command": f"GITHUB_TOKEN={secret} gh pr list"}}
    record = parse_hook_event("claude-code", _bytes(payload)).record.to_record()
    assert secret not in json.dumps(record)


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"", "not JSON"),
        (b"{", "not JSON"),
        (b"\xff\xfe", "not JSON"),
        (b'{"session_id": "a", "session_id": "b"}', "not JSON"),
        (b"[1, 2]", "JSON list"),
        (b'"text"', "JSON str"),
        (b"{}", "no session_id"),
        (b'{"session_id": ""}', "no session_id"),
        (b'{"session_id": 7}', "no session_id"),
    ],
)
def test_an_unusable_event_is_refused_with_its_problem(data: bytes, problem: str) -> None:
    with pytest.raises(HookEventInvalidError, match=problem):
        parse_hook_event("claude-code", data)


def test_an_event_larger_than_the_limit_is_refused_not_cut() -> None:
    data = b'{"session_id": "s", "x": "' + b"a" * MAX_HOOK_EVENT_BYTES + b'"}'
    with pytest.raises(HookEventInvalidError, match="more than"):
        parse_hook_event("gemini", data)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)
_MEMBERS = st.sampled_from(
    [
        "session_id",
        "hook_event_name",
        "tool_name",
        "tool_input",
        "tool_response",
        "tool_use_id",
        "transcript_path",
        "cwd",
        "model",
        "timestamp",
        "error",
    ]
)


@given(
    client=st.sampled_from(CLIENTS),
    payload=st.dictionaries(_MEMBERS | st.text(max_size=10), _JSON, max_size=10),
    name=st.sampled_from([*EVENT_KINDS, "Other", "PostToolUseFailure"]) | st.text(max_size=20),
)
def test_any_object_gives_a_writable_record_or_the_one_error(
    client: str, payload: dict[str, Any], name: str
) -> None:
    """Garbage members, missing members, members of the wrong type: every object either
    reads into a record that writes as JSON and reads back, or is refused as a whole."""
    if payload.get("hook_event_name") is None:
        payload["hook_event_name"] = name
    try:
        event = parse_hook_event(client, json.dumps(payload).encode())  # type: ignore[arg-type]
    except HookEventInvalidError:
        assert not (isinstance(payload.get("session_id"), str) and payload["session_id"])
        return
    record = event.record.to_record()
    json.dumps(record, allow_nan=False)
    back = ToolEvent.from_record(record)
    assert back.session_id  # as given, or redacted when it looks like a secret
    assert back.source == "hook"
    assert back.client == client
    if back.event != "call":
        assert back.input is None
    if back.event != "result":
        assert back.status is None
        assert back.result_bytes is None
    else:
        assert back.status in {"ok", "error"}


@given(st.binary(max_size=200))
def test_any_bytes_give_a_record_or_the_one_error(data: bytes) -> None:
    refused: HookEventInvalidError | None = None
    try:
        event = parse_hook_event("claude-code", data)
    except HookEventInvalidError as exc:
        refused = exc
    if refused is None:
        assert event.record.session_id
    else:
        assert refused.exit_code == 2


@pytest.mark.parametrize(
    ("content", "status"),
    [
        ("Output: x\nExit Code: 3\nProcess Group PGID: 1", "error"),
        ("Output: x\nExit Code: 0\n", "ok"),
        ("Output: Exit Code: 3 was printed", "ok"),
    ],
)
def test_a_gemini_shell_result_fails_by_its_exit_code(content: str, status: str) -> None:
    payload = {**GEMINI_AFTER, "tool_response": {"llmContent": content, "returnDisplay": ""}}
    assert parse_hook_event("gemini", _bytes(payload)).record.status == status
    # The rule is the Gemini CLI shell tool's: another client's text is not read so.
    assert parse_hook_event("codex", _bytes(payload)).record.status == "ok"
