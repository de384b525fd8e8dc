"""Tests for agc.resume.formats.openai_responses: items kept whole, outputs synthesized."""

from __future__ import annotations

from typing import Any

import pytest

from agc.resume.formats import openai_responses
from agc.resume.repair import repair_history


@pytest.mark.parametrize(
    ("call_type", "output_type"),
    [
        ("function_call", "function_call_output"),
        ("custom_tool_call", "custom_tool_call_output"),
        ("local_shell_call", "local_shell_call_output"),
    ],
)
def test_each_call_type_gets_its_output_type(call_type: str, output_type: str) -> None:
    call: dict[str, Any] = {"type": call_type, "call_id": "c", "name": "n", "arguments": "{}"}
    result = repair_history([call], "openai-responses", strategy="synthesize")
    assert result.messages[0] is call
    assert result.messages[1]["type"] == output_type
    assert result.messages[1]["call_id"] == "c"


def test_computer_call_is_never_synthesized() -> None:
    call = {"type": "computer_call", "call_id": "c", "action": {"type": "click"}}
    result = repair_history([call], "openai-responses", strategy="synthesize")
    assert result.messages == []
    assert result.report.changes[0].reason.endswith("cannot be answered")


def test_easy_input_message_without_type_is_a_message() -> None:
    history = openai_responses.read([{"role": "user", "content": "hi"}])
    assert history.messages[0].role == "user"
    assert history.messages[0].blocks[0].kind == "text"
