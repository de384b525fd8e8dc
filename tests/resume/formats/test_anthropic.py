"""Tests for agc.resume._formats.anthropic: content blocks classified, rewritten faithfully."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from agc.resume import repair_history
from agc.resume._formats import anthropic

REACHES_INSIDE = {
    "agc.resume._formats": "the Anthropic Messages reader and writer on their own",
}

_BLOCK = st.one_of(
    st.fixed_dictionaries({"type": st.just("text"), "text": st.text(max_size=5)}),
    st.fixed_dictionaries(
        {
            "type": st.just("tool_use"),
            "id": st.text(min_size=1, max_size=3),
            "name": st.just("f"),
            "input": st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
        }
    ),
    st.fixed_dictionaries(
        {
            "type": st.just("tool_result"),
            "tool_use_id": st.text(max_size=3),
            "content": st.text(max_size=3),
        }
    ),
    st.fixed_dictionaries(
        {
            "type": st.just("thinking"),
            "thinking": st.text(max_size=3),
            "signature": st.text(max_size=3),
        }
    ),
    st.fixed_dictionaries(
        {"type": st.just("image"), "source": st.just({"type": "url", "url": "u"})}
    ),
)
_MESSAGE = st.fixed_dictionaries(
    {
        "role": st.sampled_from(["user", "assistant"]),
        "content": st.one_of(st.text(max_size=5), st.lists(_BLOCK, max_size=4)),
    }
)


@given(messages=st.lists(_MESSAGE, max_size=6))
def test_property_read_then_write_is_identity(messages: list[dict[str, Any]]) -> None:
    history = anthropic.read(messages)
    assert anthropic.write(history, history.messages) == messages
    kinds = {"tool_use": "call", "tool_result": "result", "thinking": "reasoning", "text": "text"}
    for message, read in zip(messages, history.messages, strict=True):
        if isinstance(message["content"], list):
            expected = [kinds.get(block["type"], "other") for block in message["content"]]
            assert [block.kind for block in read.blocks] == expected


def test_string_content_becomes_a_text_block_when_rewritten() -> None:
    messages = [
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}],
        },
        {"role": "user", "content": "go on"},
    ]
    result = repair_history(messages, "anthropic", strategy="synthesize")
    assert result.messages[1]["content"][0]["type"] == "tool_result"
    assert result.messages[1]["content"][1] == {"type": "text", "text": "go on"}
