"""Tests for agc.resume._formats.openai_responses: items kept whole, outputs synthesized."""

from __future__ import annotations

from typing import Any

import pytest

from agc.resume import check_history, repair_history
from agc.resume._formats import openai_responses

REACHES_INSIDE = {
    "agc.resume._formats": "the OpenAI Responses reader and writer on their own",
}


@pytest.mark.parametrize(
    ("call_type", "output_type", "id_key"),
    [
        ("function_call", "function_call_output", "call_id"),
        ("custom_tool_call", "custom_tool_call_output", "call_id"),
        # Responses API: local_shell_call_output has `id` (the call's call_id), no call_id.
        ("local_shell_call", "local_shell_call_output", "id"),
    ],
)
def test_each_call_type_gets_its_output_type(call_type: str, output_type: str, id_key: str) -> None:
    call: dict[str, Any] = {"type": call_type, "call_id": "c", "name": "n", "arguments": "{}"}
    result = repair_history([call], "openai-responses", strategy="synthesize")
    assert result.messages[0] is call
    assert set(result.messages[1]) == {"type", id_key, "output"}
    assert result.messages[1]["type"] == output_type
    assert result.messages[1][id_key] == "c"


def _shell_call(call_id: str) -> dict[str, Any]:
    return {
        "type": "local_shell_call",
        "id": "lsh_" + call_id,
        "call_id": call_id,
        "status": "completed",
        "action": {"type": "exec", "command": ["ls"], "env": {}},
    }


def test_local_shell_output_answers_its_call_by_id() -> None:
    # The documented shape: {"type": "local_shell_call_output", "id": <call_id>, "output"}.
    items = [
        {"role": "user", "content": "list"},
        _shell_call("call_1"),
        {"type": "local_shell_call_output", "id": "call_1", "output": '{"output": "a b"}'},
    ]
    assert check_history(items, "openai-responses").valid
    for strategy in ("strip", "synthesize"):
        result = repair_history(items, "openai-responses", strategy=strategy)
        assert result.messages == items
        assert not result.report.changes


def test_computer_call_is_never_synthesized() -> None:
    call = {"type": "computer_call", "call_id": "c", "action": {"type": "click"}}
    result = repair_history([call], "openai-responses", strategy="synthesize")
    assert result.messages == []
    assert result.report.changes[0].reason.endswith("cannot be answered")


def test_easy_input_message_without_type_is_a_message() -> None:
    history = openai_responses.read([{"role": "user", "content": "hi"}])
    assert history.messages[0].role == "user"
    assert history.messages[0].blocks[0].kind == "text"
