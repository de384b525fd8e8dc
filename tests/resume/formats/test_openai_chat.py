"""Tests for agc.resume._formats.openai_chat: reading, writing, untouched fields kept."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from agc.resume import repair_history
from agc.resume._formats import openai_chat

REACHES_INSIDE = {
    "agc.resume._formats": "the OpenAI Chat reader and writer on their own",
}

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)
_CALL = st.fixed_dictionaries(
    {
        "id": st.text(min_size=1, max_size=4),
        "type": st.just("function"),
        "function": st.fixed_dictionaries(
            {"name": st.text(max_size=4), "arguments": st.text(max_size=8)}
        ),
    }
)
_MESSAGE = st.one_of(
    st.fixed_dictionaries(
        {"role": st.sampled_from(["user", "system", "developer"]), "content": _JSON}
    ),
    st.fixed_dictionaries(
        {"role": st.just("assistant"), "content": _JSON, "tool_calls": st.lists(_CALL, max_size=3)},
        optional={"name": st.text(max_size=3), "refusal": st.none()},
    ),
    st.fixed_dictionaries(
        {"role": st.just("tool"), "tool_call_id": st.text(max_size=4), "content": _JSON}
    ),
)


@given(messages=st.lists(_MESSAGE, max_size=6))
def test_property_read_then_write_is_identity(messages: list[dict[str, Any]]) -> None:
    history = openai_chat.read(messages)
    assert openai_chat.write(history, history.messages) == messages
    calls = sum(len(m.get("tool_calls") or []) for m in messages if m["role"] == "assistant")
    assert sum(len(m.calls()) for m in history.messages) == calls


def test_rewritten_assistant_message_keeps_its_other_fields() -> None:
    call = {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    message = {
        "role": "assistant",
        "content": "thinking aloud",
        "name": "bot",
        "tool_calls": [call],
    }
    result = repair_history([message], "openai-chat")
    assert result.messages == [{"role": "assistant", "content": "thinking aloud", "name": "bot"}]


def test_custom_tool_call_reports_its_name_and_input() -> None:
    # Chat Completions custom tool calls: {"id", "type": "custom", "custom": {"name", "input"}}.
    call = {"id": "c1", "type": "custom", "custom": {"name": "apply_patch", "input": "*** Begin"}}
    messages = [
        {"role": "user", "content": "patch it"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
    ]
    history = openai_chat.read(messages)
    block = history.messages[1].calls()[0]
    assert (block.name, block.arguments) == ("apply_patch", "*** Begin")
    change = repair_history(messages, "openai-chat").report.changes[0]
    assert (change.action, change.tool_name, change.arguments) == (
        "stripped",
        "apply_patch",
        "*** Begin",
    )
