"""Tests for agc.resume._repair: strategies, placement, reports, and repair properties."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agc.errors import UsageError
from agc.resume import (
    ACTIONS,
    FormatName,
    Strategy,
    ToolCallState,
    check_history,
    idempotency_key,
    load_history,
    repair_history,
    repair_loaded,
    session_identity,
)
from agc.resume._formats import read_history
from agc.resume._validate import check_messages
from tests.conftest import examples
from tests.resume.helpers import blocks

REACHES_INSIDE = {
    "agc.resume._formats": "reads parsed records as a format (read_history)",
    "agc.resume._validate": "the check of a neutral view (check_messages)",
}


def _chat_call(call_id: str, arguments: str = '{"cmd": "ls"}') -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": "run", "arguments": arguments}}


def test_strip_keeps_answered_sibling_and_its_result() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "", "tool_calls": [_chat_call("a"), _chat_call("b")]},
        {"role": "tool", "tool_call_id": "a", "content": "ok"},
    ]
    result = repair_history(messages, "openai-chat", tool_call_state=ToolCallState(True, "b"))
    assert result.messages == [
        messages[0],
        {"role": "assistant", "content": "", "tool_calls": [_chat_call("a")]},
        messages[2],
    ]
    assert result.messages[1] is not messages[1], "the input is never mutated"
    assert messages[1]["tool_calls"] == [_chat_call("a"), _chat_call("b")]


def test_synthesize_answers_call_directly_after_it_in_responses() -> None:
    items = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]},
        {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "x"},
        {"type": "function_call", "call_id": "c1", "name": "sh", "arguments": "{}"},
        {"type": "function_call", "call_id": "c2", "name": "sh", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "done"},
    ]
    result = repair_history(items, "openai-responses", strategy="synthesize")
    assert [item.get("call_id") for item in result.messages] == [
        None,
        None,
        "c1",
        "c2",
        "c2",
        "c1",
    ]
    synthetic = result.messages[4]
    assert synthetic["type"] == "function_call_output"
    assert "may or may not have executed" in synthetic["output"]
    assert (
        idempotency_key("c2", session=session_identity(read_history(items, "openai-responses")))
        in synthetic["output"]
    )


def test_strip_drops_reasoning_that_belonged_to_the_dropped_call() -> None:
    items = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]},
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {"type": "function_call", "call_id": "c1", "name": "sh", "arguments": "{}"},
    ]
    result = repair_history(items, "openai-responses")
    assert result.messages == items[:1]
    # Changes are listed in history order: the reasoning item comes first.
    assert [c.action for c in result.report.changes] == ["dropped-reasoning", "stripped"]


def test_reasoning_followed_by_a_kept_message_is_kept() -> None:
    items = [
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "x"}]},
        {"type": "function_call", "call_id": "c1", "name": "sh", "arguments": "{"},
    ]
    result = repair_history(items, "openai-responses", strategy="synthesize")
    assert result.messages == items[:2]
    assert result.report.changes[0].reason.endswith("never kept")


def test_synthesize_keeps_partial_result_of_pending_call() -> None:
    messages = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "", "tool_calls": [_chat_call("a")]},
        {"role": "tool", "tool_call_id": "a", "content": "partial"},
    ]
    state = ToolCallState(True, "a")
    result = repair_history(messages, "openai-chat", strategy="synthesize", tool_call_state=state)
    assert result.messages == messages
    assert [c.action for c in result.report.changes] == ["kept-partial-result"]
    assert result.report.was_interrupted


def test_result_after_intervening_user_message_is_moved_not_replaced() -> None:
    messages = [
        {"role": "assistant", "content": "", "tool_calls": [_chat_call("a")]},
        {"role": "user", "content": "wait"},
        {"role": "tool", "tool_call_id": "a", "content": "real"},
    ]
    result = repair_history(messages, "openai-chat", strategy="synthesize")
    assert result.messages == [messages[0], messages[2], messages[1]]
    assert [c.action for c in result.report.changes] == ["moved-result"]


def test_change_reports_tool_name_arguments_and_key() -> None:
    messages = [{"role": "assistant", "content": "", "tool_calls": [_chat_call("x", '{"a":1}')]}]
    change = repair_history(messages, "openai-chat", session_id="s9").report.changes[0]
    assert change.to_dict() == {
        "action": "stripped",
        "message_index": 0,
        "record": 0,
        "call_id": "x",
        "tool_name": "run",
        "arguments": '{"a":1}',
        "idempotency_key": idempotency_key("x", session="s9"),
        "reason": "it has no result in the history",
    }
    assert idempotency_key("x", session="s9") != idempotency_key("x", session="s8")
    assert idempotency_key("x", session="s9") == idempotency_key("x", session="s9")


def test_valid_history_is_returned_unchanged() -> None:
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t", "name": "r", "input": {}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "ok"}]},
    ]
    result = repair_history(messages, "anthropic", strategy="synthesize")
    assert result.messages == messages
    assert not result.report.changed
    assert not result.report.was_interrupted
    assert result.report.to_dict()["schema_version"] == 1


def test_unknown_strategy_is_refused() -> None:
    with pytest.raises(UsageError, match="strategy"):
        repair_history([], "openai-chat", strategy="replay")  # type: ignore[arg-type]


# --- property: the repaired history always passes check_history --------------------------

_IDS = st.sampled_from(["a", "b", "c", "d"])
_EVENT = st.one_of(
    st.tuples(st.just("user"), st.text(max_size=5)),
    st.tuples(
        st.just("assistant"),
        st.sampled_from(["", "text", "text-after"]),
        st.lists(st.tuples(_IDS, st.booleans()), max_size=3),
        st.booleans(),
    ),
    st.tuples(st.just("result"), _IDS, st.booleans()),
)


def _render(events: list[tuple[Any, ...]], fmt: FormatName) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for event in events:
        if event[0] == "user":
            text = event[1] or "u"
            if fmt == "openai-chat":
                out.append({"role": "user", "content": text})
            elif fmt == "anthropic":
                out.append({"role": "user", "content": [{"type": "text", "text": text}]})
            else:
                part = {"type": "input_text", "text": text}
                out.append({"type": "message", "role": "user", "content": [part]})
        elif event[0] == "assistant":
            _, text, calls, reasoning = event
            args = ['{"n": 1}' if ok else '{"n": ' for _, ok in calls]
            if fmt == "openai-chat":
                message: dict[str, Any] = {"role": "assistant", "content": text or "x"}
                if calls:
                    message["tool_calls"] = [
                        _chat_call(call_id, arg)
                        for (call_id, _), arg in zip(calls, args, strict=True)
                    ]
                    message["content"] = text
                out.append(message)
            elif fmt == "anthropic":
                content: list[dict[str, Any]] = []
                if reasoning:
                    content.append({"type": "thinking", "thinking": "t", "signature": "s"})
                uses = [
                    {"type": "tool_use", "id": call_id, "name": "r", "input": {} if ok else "{"}
                    for call_id, ok in calls
                ]
                words = [{"type": "text", "text": "w"}] if text or not uses else []
                content += uses + words if text == "text-after" else words + uses
                out.append({"role": "assistant", "content": content})
            else:
                if reasoning:
                    out.append({"type": "reasoning", "id": "rs", "summary": []})
                if text or not calls:
                    part = {"type": "output_text", "text": "w"}
                    out.append({"type": "message", "role": "assistant", "content": [part]})
                for (call_id, _), arg in zip(calls, args, strict=True):
                    out.append(
                        {"type": "function_call", "call_id": call_id, "name": "r", "arguments": arg}
                    )
        else:
            _, call_id, with_text = event
            if fmt == "openai-chat":
                out.append({"role": "tool", "tool_call_id": call_id, "content": f"r-{call_id}"})
            elif fmt == "anthropic":
                block = {"type": "tool_result", "tool_use_id": call_id, "content": f"r-{call_id}"}
                extra = [{"type": "text", "text": "note"}] if with_text else []
                out.append({"role": "user", "content": [block, *extra]})
            else:
                out.append(
                    {"type": "function_call_output", "call_id": call_id, "output": f"r-{call_id}"}
                )
    return out


@settings(max_examples=examples(300), deadline=None)
@given(
    events=st.lists(_EVENT, max_size=12),
    fmt=st.sampled_from(["openai-chat", "anthropic", "openai-responses"]),
    strategy=st.sampled_from(["strip", "synthesize"]),
    in_flight=st.booleans(),
    pending=_IDS,
)
def test_property_repair_output_always_passes_check_history(
    events: list[tuple[Any, ...]],
    fmt: FormatName,
    strategy: Strategy,
    in_flight: bool,
    pending: str,
) -> None:
    messages = _render(events, fmt)
    snapshot = json.dumps(messages)
    state = ToolCallState(in_flight, pending)
    result = repair_history(messages, fmt, strategy=strategy, tool_call_state=state)
    assert json.dumps(messages) == snapshot, "the input was mutated"
    assert result.report.after.valid
    assert check_history(result.messages, fmt).valid
    assert {c.action for c in result.report.changes} <= set(ACTIONS)
    # Every result in the output is a real one from the input, or an explicit synthetic one.
    real = {json.dumps(b.raw, sort_keys=True) for b in blocks(messages, fmt, "result")}
    for block in blocks(result.messages, fmt, "result"):
        assert json.dumps(block.raw, sort_keys=True) in real or "agc resume:" in json.dumps(
            block.raw
        )
    # A history the provider accepts, with no call in flight, is left exactly as it is.
    if check_history(messages, fmt).valid and not in_flight:
        assert result.messages == messages
        assert not result.report.changed
    # Repairing again changes nothing.
    again = repair_history(result.messages, fmt, strategy=strategy)
    assert not again.report.changed


# Blocks of any kind in any role: a history an attacker or a broken client wrote, with
# misplaced calls and results, missing or empty ids, content of every shape.
_ANY_ID = st.sampled_from(["a", "b", "", None])
_ANY_ARGS = st.sampled_from(["{}", '{"x": 1}', "{", None, {"x": 1}])
_ANY_TEXT = st.sampled_from(["", "hi", None, [{"type": "text", "text": "x"}]])
_ANY_RECORD: dict[str, st.SearchStrategy[dict[str, Any]]] = {
    "openai-chat": st.one_of(
        st.fixed_dictionaries(
            {"role": st.sampled_from(["user", "system", "assistant"]), "content": _ANY_TEXT}
        ),
        st.fixed_dictionaries(
            {
                "role": st.just("assistant"),
                "content": _ANY_TEXT,
                "tool_calls": st.lists(
                    st.fixed_dictionaries(
                        {
                            "id": _ANY_ID,
                            "type": st.just("function"),
                            "function": st.fixed_dictionaries(
                                {"name": st.just("r"), "arguments": _ANY_ARGS}
                            ),
                        }
                    ),
                    max_size=3,
                ),
            }
        ),
        st.fixed_dictionaries(
            {"role": st.just("tool"), "tool_call_id": _ANY_ID, "content": st.just("r")}
        ),
    ),
    "anthropic": st.fixed_dictionaries(
        {
            "role": st.sampled_from(["user", "assistant", "user", "assistant", "system"]),
            "content": st.one_of(
                st.sampled_from(["", "hi"]),
                st.lists(
                    st.one_of(
                        st.just({"type": "text", "text": "t"}),
                        st.just({"type": "thinking", "thinking": "t", "signature": "s"}),
                        st.just({"type": "image", "source": {}}),
                        st.fixed_dictionaries(
                            {
                                "type": st.just("tool_use"),
                                "id": _ANY_ID,
                                "name": st.just("r"),
                                "input": st.sampled_from([{}, {"a": 1}, "x"]),
                            }
                        ),
                        st.fixed_dictionaries(
                            {
                                "type": st.just("tool_result"),
                                "tool_use_id": _ANY_ID,
                                "content": st.just("r"),
                            }
                        ),
                    ),
                    max_size=4,
                ),
            ),
        }
    ),
    "openai-responses": st.one_of(
        st.fixed_dictionaries(
            {"role": st.sampled_from(["user", "assistant"]), "content": st.just("x")}
        ),
        st.fixed_dictionaries(
            {
                "type": st.sampled_from(
                    ["function_call", "custom_tool_call", "local_shell_call", "computer_call"]
                ),
                "call_id": _ANY_ID,
                "name": st.just("r"),
                "arguments": _ANY_ARGS,
            }
        ),
        st.fixed_dictionaries(
            {
                "type": st.sampled_from(["function_call_output", "custom_tool_call_output"]),
                "call_id": _ANY_ID,
                "output": st.just("o"),
            }
        ),
        st.fixed_dictionaries(
            {"type": st.just("local_shell_call_output"), "id": _ANY_ID, "output": st.just("o")}
        ),
        st.just({"type": "reasoning", "id": "rs", "summary": []}),
        st.just({"type": "web_search_call", "id": "ws"}),
    ),
}


@settings(max_examples=examples(400), deadline=None)
@given(
    data=st.data(),
    fmt=st.sampled_from(["openai-chat", "anthropic", "openai-responses"]),
    strategy=st.sampled_from(["strip", "synthesize"]),
)
def test_property_check_and_repair_agree_on_any_blocks(
    data: st.DataObject, fmt: FormatName, strategy: Strategy
) -> None:
    """With nothing in flight, the check finds a problem exactly when the repair changes
    something, and the repaired file, read back from its bytes, passes the check and
    needs no further repair: a block the repair would move or drop (a tool_result in an
    assistant message, a tool_use in a user message) is never reported valid, and never
    left behind or kept twice."""
    messages = data.draw(st.lists(_ANY_RECORD[fmt], max_size=8))
    raw = json.dumps(messages).encode()
    history = load_history(raw, source="history.json", format=fmt)
    result = repair_loaded(history, strategy=strategy, session_id="r")
    assert check_messages(history.messages, fmt).valid == (not result.report.changed)
    reread = load_history(result.data, source="repaired.json", format=fmt)
    assert check_messages(reread.messages, fmt).valid
    assert not repair_loaded(reread, strategy=strategy, session_id="r").report.changed
    real = Counter(json.dumps(b.raw, sort_keys=True) for b in blocks(messages, fmt, "result"))
    written = Counter(
        json.dumps(b.raw, sort_keys=True) for b in blocks(json.loads(result.data), fmt, "result")
    )
    for text, count in written.items():  # each real result kept at most once, or synthetic
        assert count <= real[text] or "agc resume:" in text, ("written twice", text)


@settings(max_examples=examples(300), deadline=None)
@given(
    messages=st.lists(_ANY_RECORD["anthropic"], max_size=8),
    split=st.booleans(),
    strategy=st.sampled_from(["strip", "synthesize"]),
)
def test_property_claude_code_check_and_repair_agree_on_any_blocks(
    messages: list[dict[str, Any]], split: bool, strategy: Strategy
) -> None:
    """The same for a Claude Code session of those messages (one line per block when
    ``split``): every message line the repair left alone is still in the file, byte for
    byte (a line with empty content too)."""
    lines: list[str] = []
    for number, message in enumerate(messages):
        if message["role"] not in {"user", "assistant"}:
            continue
        content = message["content"]
        parts = [[block] for block in content] if split and isinstance(content, list) else [content]
        for part in parts:
            record = {
                "parentUuid": f"u{len(lines) - 1}" if lines else None,
                "sessionId": "s",
                "type": message["role"],
                "message": {"role": message["role"], "content": part},
                "uuid": f"u{len(lines)}",
                "n": number,
            }
            lines.append(json.dumps(record, separators=(",", ":")))
    if not lines:
        return
    data = "".join(line + "\n" for line in lines).encode()
    history = load_history(data, source="s.jsonl", format="claude-code")
    result = repair_loaded(history, strategy=strategy, session_id="r")
    assert check_messages(history.messages, "claude-code").valid == (not result.report.changed)
    if result.data.strip():  # every line may be gone (nothing but a stripped call)
        reread = load_history(result.data, source="repaired.jsonl", format="claude-code")
        assert check_messages(reread.messages, "claude-code").valid
        assert not repair_loaded(reread, strategy=strategy, session_id="r").report.changed
    touched = {change.record for change in result.report.changes}
    kept = {json.loads(line)["uuid"] for line in result.data.decode().splitlines()}
    for index, line in enumerate(lines):
        if index not in touched and json.loads(line)["message"]["content"] in ("", []):
            assert f"u{index}" in kept, ("an untouched empty line was dropped", line)


@pytest.mark.parametrize("strategy", ["strip", "synthesize"])
def test_result_in_an_assistant_message_is_moved_once(strategy: Strategy) -> None:
    """A real result written into the next assistant message is placed with its call,
    and not left in the assistant message as well (the provider rejects both)."""
    use_a = {"type": "tool_use", "id": "a", "name": "r", "input": {}}
    use_b = {"type": "tool_use", "id": "b", "name": "r", "input": {}}
    result_a = {"type": "tool_result", "tool_use_id": "a", "content": "ra"}
    result_b = {"type": "tool_result", "tool_use_id": "b", "content": "rb"}
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [use_a]},
        {"role": "assistant", "content": [result_a, use_b]},
        {"role": "user", "content": [result_b]},
    ]
    assert [f.code for f in check_history(messages, "anthropic").findings] == [
        "tool-call-unanswered",
        "orphan-tool-result",
    ]
    result = repair_history(messages, "anthropic", strategy=strategy)
    assert result.messages == [
        messages[0],
        messages[1],
        {"role": "user", "content": [result_a]},
        {"role": "assistant", "content": [use_b]},
        messages[3],
    ]
    assert result.report.ids("moved-result") == ["a"]


def test_tool_use_in_a_user_message_is_stripped() -> None:
    use = {"type": "tool_use", "id": "t", "name": "r", "input": {}}
    messages = [{"role": "user", "content": [{"type": "text", "text": "hi"}, use]}]
    result = repair_history(messages, "anthropic", strategy="synthesize")
    assert result.messages == [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
    assert result.report.ids("stripped") == ["t"]


def _claude_lines(events: list[tuple[Any, ...]], split: bool, noise: bool) -> bytes:
    """Claude Code lines for the events: one line per block when ``split``."""
    messages = _render(events, "anthropic")
    lines = [json.dumps({"type": "summary", "summary": "s", "leafUuid": "none"})]
    parent: str | None = None
    for number, message in enumerate(messages):
        parts = [[block] for block in message["content"]] if split else [message["content"]]
        for part_number, part in enumerate(parts):
            uuid = f"u{number}-{part_number}"
            line = {
                "parentUuid": parent,
                "isSidechain": False,
                "sessionId": "s",
                "type": message["role"],
                "message": {"role": message["role"], "content": part},
                "uuid": uuid,
            }
            lines.append(json.dumps(line))
            if noise:
                progress = {"type": "progress", "parentUuid": uuid, "uuid": "p" + uuid}
                lines.append(json.dumps(progress))
                lines.append("not json")
            parent = uuid
    return "".join(line + "\n" for line in lines).encode()


def _codex_lines(events: list[tuple[Any, ...]], noise: bool) -> bytes:
    lines = [json.dumps({"timestamp": "t", "type": "session_meta", "payload": {"id": "s"}})]
    for item in _render(events, "openai-responses"):
        lines.append(json.dumps({"timestamp": "t", "type": "response_item", "payload": item}))
        if noise:
            lines.append(json.dumps({"timestamp": "t", "type": "event_msg", "payload": {}}))
    return "".join(line + "\n" for line in lines).encode()


def _other_lines(raw: bytes) -> list[str]:
    """Lines that are not messages (progress lines by uuid: they may be re-pointed)."""
    out = []
    for line in raw.decode().splitlines():
        if line == "not json" or '"event_msg"' in line:
            out.append(line)
        elif '"progress"' in line:
            out.append(json.loads(line)["uuid"])
    return out


@settings(max_examples=examples(300), deadline=None)
@given(
    events=st.lists(_EVENT, max_size=12),
    claude=st.booleans(),
    split=st.booleans(),
    noise=st.booleans(),
    strategy=st.sampled_from(["strip", "synthesize"]),
)
def test_property_session_file_repair_passes_check_history(
    events: list[tuple[Any, ...]], claude: bool, split: bool, noise: bool, strategy: Strategy
) -> None:
    data = _claude_lines(events, split, noise) if claude else _codex_lines(events, noise)
    history = load_history(data, source="session.jsonl")
    result = repair_loaded(history, strategy=strategy)
    reread = load_history(result.data, source="repaired", format=history.format)
    assert check_messages(reread.messages, history.format).valid
    if not result.report.changed:
        assert result.data == data
    assert _other_lines(result.data) == _other_lines(data)


def test_arguments_too_deep_to_check_are_never_kept_for_replay() -> None:
    deep = '{"a": ' + "[" * 50_000 + "]" * 50_000 + "}"
    messages = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c", "type": "function", "function": {"name": "w", "arguments": deep}}
            ],
        },
    ]
    result = repair_history(messages, "openai-chat", strategy="synthesize")
    assert [c.action for c in result.report.changes] == ["stripped", "dropped-empty-message"]


_RESULT_BEFORE_CALL: dict[str, list[dict[str, Any]]] = {
    "openai-chat": [
        {"role": "user", "content": "go"},
        {"role": "tool", "tool_call_id": "A", "content": "deployed v2"},
        {"role": "assistant", "content": None, "tool_calls": [_chat_call("A")]},
        {"role": "tool", "tool_call_id": "B", "content": "late"},
    ],
    "anthropic": [
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "A", "content": "deployed v2"},
                {"type": "text", "text": "go"},
            ],
        },
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "A", "name": "run", "input": {}}],
        },
    ],
    "openai-responses": [
        {"role": "user", "content": "go"},
        {"type": "function_call_output", "call_id": "A", "output": "deployed v2"},
        {"type": "function_call", "call_id": "A", "name": "run", "arguments": "{}"},
    ],
}


@pytest.mark.parametrize("strategy", ["strip", "synthesize"])
@pytest.mark.parametrize("fmt", list(_RESULT_BEFORE_CALL))
def test_real_result_recorded_before_its_call_is_moved_after_it(
    fmt: FormatName, strategy: Strategy
) -> None:
    """A result written before its call (records out of order) is the call's real result.

    docs/resume.md: a real result not where the provider looks is moved next to its
    call, never replaced by a synthetic one; the call keeps it under both strategies.
    """
    messages = _RESULT_BEFORE_CALL[fmt]
    result = repair_history(messages, fmt, strategy=strategy)
    assert result.report.after.valid
    assert result.report.ids("moved-result") == ["A"]
    assert not result.report.ids("synthesized")
    assert "A" not in result.report.ids("stripped")
    assert "deployed v2" in json.dumps(result.messages)


@pytest.mark.parametrize("strategy", ["strip", "synthesize"])
def test_result_of_a_dropped_duplicate_call_is_not_given_to_the_earlier_call(
    strategy: Strategy,
) -> None:
    """Two turns reuse one tool_use id: `rm a` (never answered), then `rm b` (answered).

    The later call is dropped as a duplicate; its result must not become the result of
    `rm a`, which would then look answered ("removed b") and never be reported as
    interrupted.
    """
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [_use("A", {"command": "rm a"})]},
        {"role": "user", "content": "hm?"},
        {"role": "assistant", "content": [_use("A", {"command": "rm b"})]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "A", "content": "removed b"}],
        },
    ]
    result = repair_history(messages, "anthropic", strategy=strategy)
    interrupted = "stripped" if strategy == "strip" else "synthesized"
    changed = {(c.action, c.call_id, json.dumps(c.arguments)) for c in result.report.changes}
    assert (interrupted, "A", json.dumps({"command": "rm a"})) in changed
    assert "removed b" not in json.dumps(result.messages)
    assert not result.report.ids("moved-result")


def _use(call_id: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": "Bash", "input": arguments}


_CUT_EMOJI = "output cut mid-emoji: \ud83d"  # a lone surrogate, as JSON.stringify writes it


@pytest.mark.parametrize("strategy", ["strip", "synthesize"])
def test_lone_surrogate_in_history_is_written_back(strategy: Strategy) -> None:
    # `\ud83d` is valid JSON text (RFC 8259 §8.2); a tool output cut at a UTF-16 limit
    # ends with one. The repaired file must still be UTF-8 JSON holding the same value.
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": _CUT_EMOJI},
        {"role": "assistant", "content": None, "tool_calls": [_chat_call("a")]},
    ]
    data = json.dumps(messages).encode()
    result = repair_loaded(load_history(data, source="x"), strategy=strategy)
    assert json.loads(result.data.decode("utf-8"))[0]["content"] == _CUT_EMOJI
    line = {
        "type": "assistant",
        "uuid": "u",
        "message": {
            "role": "assistant",
            "content": [{"type": "text", "text": _CUT_EMOJI}, _use("t", {})],
        },
    }
    session = (json.dumps(line) + "\n").encode()
    result = repair_loaded(load_history(session, source="s.jsonl"), strategy=strategy)
    text = json.loads(result.data.decode("utf-8").splitlines()[0])["message"]["content"][0]
    assert text["text"] == _CUT_EMOJI
    assert idempotency_key("call_\ud83d", session="s").startswith("idem-")


def test_the_change_list_never_shows_a_secret_of_the_arguments() -> None:
    """The report is printed and logged: a key in an interrupted call's arguments is
    redacted there (the repaired history keeps what the input held)."""
    secret = "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcd"
    pem = (
        "-----BEGIN RSA PRIVATE KEY-----\n"
        + "MIIEowIBAAKCAQEA7x9" * 4
        + "\n-----END RSA PRIVATE KEY-----"
    )
    arguments = json.dumps(
        {"cmd": f"export OPENAI_API_KEY={secret}; psql postgres://u:p4ssw0rd@h/db", "key": pem}
    )
    history = [
        {"role": "user", "content": "deploy"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "bash", "arguments": arguments},
                }
            ],
        },
    ]
    result = repair_history(history, format="openai-chat", strategy="synthesize")
    shown = json.dumps(result.report.to_dict())
    for leaked in (secret, "p4ssw0rd", "MIIEowIBAAKCAQEA7x9"):
        assert leaked not in shown
    assert result.report.changes[0].tool_name == "bash"


def test_two_calls_with_one_id_never_share_a_key() -> None:
    """Chat allows one id in two turns: both calls are kept and answered as
    interrupted, each with its own key (the second's counts its occurrence), the first
    keeping the key of the id alone."""
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [_chat_call("a", '{"cmd": "ls"}')]},
        {"role": "user", "content": "again"},
        {"role": "assistant", "content": None, "tool_calls": [_chat_call("a", '{"cmd": "rm"}')]},
    ]
    result = repair_history(messages, "openai-chat", strategy="synthesize")
    session = session_identity(load_history(json.dumps(messages).encode(), source="x"))
    keys = [c.idempotency_key for c in result.report.changes if c.action == "synthesized"]
    assert keys == [
        idempotency_key("a", session=session),
        idempotency_key("a", session=session, occurrence=2),
    ]
    assert keys[0] != keys[1]
    assert str(keys[1]) in json.dumps(result.messages)
    with pytest.raises(ValueError, match="counts from 1"):
        idempotency_key("a", session=session, occurrence=0)
