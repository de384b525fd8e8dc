"""Tests for agc.resume._formats.detect: format detection and loading."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agc.errors import HistoryFormatError, InputError
from agc.resume import FormatName, detect_format, load_history
from agc.resume._formats import dump_history

REACHES_INSIDE = {
    "agc.resume._formats": "writes a history back (dump_history) to compare bytes",
}

ARRAYS: list[tuple[str, list[dict[str, Any]]]] = [
    ("openai-chat", [{"role": "tool", "tool_call_id": "a", "content": "x"}]),
    ("openai-chat", [{"role": "user", "content": "plain"}]),
    (
        "anthropic",
        [
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t", "name": "n", "input": {}}],
            }
        ],
    ),
    (
        "openai-responses",
        [{"type": "function_call", "call_id": "c", "name": "n", "arguments": "{}"}],
    ),
    ("openai-responses", [{"role": "user", "content": [{"type": "input_text", "text": "x"}]}]),
    # Ambiguous markers: a Chat assistant message may hold a `refusal` content part
    # (Chat Completions reference), and a saved Anthropic response object has
    # `"type": "message"`; the tool-call markers decide.
    (
        "openai-chat",
        [
            {"role": "assistant", "content": [{"type": "refusal", "refusal": "no"}]},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c", "type": "function", "function": {"name": "n", "arguments": "{}"}}
                ],
            },
        ],
    ),
    (
        "anthropic",
        [
            {"role": "user", "content": "hi"},
            {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t", "name": "n", "input": {}}],
            },
        ],
    ),
]


@pytest.mark.parametrize(("expected", "records"), ARRAYS)
def test_detect_json_arrays(expected: str, records: list[dict[str, Any]]) -> None:
    assert detect_format(records, line_based=False) == expected
    history = load_history(json.dumps(records).encode(), source="x")
    assert history.format == expected
    assert json.loads(dump_history(history, history.records)) == records


def test_detect_session_files() -> None:
    codex = [{"timestamp": "t", "type": "session_meta", "payload": {}}]
    claude = [{"type": "user", "uuid": "u", "message": {"role": "user", "content": "x"}}]
    assert detect_format(codex, line_based=True) == "codex-rollout"
    assert detect_format(claude, line_based=True) == "claude-code"


def test_codex_exec_stream_is_named() -> None:
    with pytest.raises(HistoryFormatError, match="codex exec --json"):
        load_history(b'{"type":"thread.started","thread_id":"x"}\n', source="s.jsonl")


@pytest.mark.parametrize(
    ("data", "error"),
    [
        (b"", InputError),
        (b"[1, 2", InputError),
        (b'{"x": 1}\n', HistoryFormatError),
        (b'[{"content": "no role"}]', HistoryFormatError),
        (b"\xff\xfe\n", InputError),
    ],
)
def test_bad_input_is_named(data: bytes, error: type[Exception]) -> None:
    with pytest.raises(error):
        load_history(data, source="input.json")


_META = b'{"timestamp": "t", "type": "session_meta", "payload": {"id": "s"}}\n'


@pytest.mark.parametrize("first", [b"[1]", b"[", b'  ["a", {"b": 2}]'])
def test_a_session_file_whose_first_line_opens_as_an_array_is_read_as_one(first: bytes) -> None:
    # JSONL whose first line is no JSON object (the client skips it): a repair that
    # drops the lines before such a line leaves it first, and agc reads that back.
    item = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "x"}]}
    line = json.dumps({"timestamp": "t", "type": "response_item", "payload": item}).encode()
    history = load_history(first + b"\n" + _META + line + b"\n", source="s.jsonl")
    assert history.format == "codex-rollout"
    assert [message.role for message in history.messages] == ["user"]
    assert list(history.unread) == [0]


@pytest.mark.parametrize(
    ("data", "format"),
    [
        (b"[1]\n[2]\n", None),  # no line of a session
        (b'[\n{"role": "user", "content": "x"},\n{"role": "user"\n]\n', None),
        (b"[1]\n" + _META, "anthropic"),  # an array's format asked for
    ],
)
def test_an_array_that_does_not_parse_is_refused_as_one(
    data: bytes, format: FormatName | None
) -> None:
    with pytest.raises(InputError, match="is not a valid JSON array"):
        load_history(data, source="input.json", format=format)


def test_explicit_format_that_does_not_fit() -> None:
    with pytest.raises(HistoryFormatError, match="not a claude-code session file"):
        load_history(b'[{"role": "user", "content": "x"}]', source="x", format="claude-code")
    with pytest.raises(HistoryFormatError, match="content is neither"):
        load_history(b'[{"role": "user", "content": 5}]', source="x", format="anthropic")


_CHAT_PENDING: list[dict[str, Any]] = [
    {"role": "user", "content": "go"},
    {
        "role": "assistant",
        "content": "removing it",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "rm", "arguments": "{}"}}
        ],
    },
]
_ANTHROPIC_PENDING: list[dict[str, Any]] = [
    {"role": "user", "content": "go"},
    {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "rm", "input": {}}]},
]
_CODEX_LINES = (
    b'{"timestamp":"t","type":"session_meta","payload":{"id":"s"}}\n'
    b'{"timestamp":"t","type":"response_item","payload":{"type":"function_call",'
    b'"name":"exec_command","arguments":"{}","call_id":"c1"}}\n'
)
_CLAUDE_LINES = (
    b'{"type":"assistant","uuid":"u1","parentUuid":null,"sessionId":"s","message":'
    b'{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{}}]}}\n'
)


@pytest.mark.parametrize(
    ("data", "forced"),
    [
        (json.dumps(_CHAT_PENDING).encode(), "anthropic"),
        (json.dumps(_CHAT_PENDING).encode(), "openai-responses"),
        (json.dumps(_ANTHROPIC_PENDING).encode(), "openai-chat"),
        (json.dumps(_ANTHROPIC_PENDING).encode(), "openai-responses"),
        (_CODEX_LINES, "claude-code"),
        (_CLAUDE_LINES, "codex-rollout"),
    ],
)
def test_forced_format_that_hides_the_tool_calls_is_refused(data: bytes, forced: str) -> None:
    # Read as the wrong format, the pending call would be invisible and the history
    # reported valid (`--check` exit 0) although its provider rejects it.
    with pytest.raises(HistoryFormatError):
        load_history(data, source="x", format=forced)  # type: ignore[arg-type]
