"""The secret corpus through the snapshot path: save_snapshot's stored bytes hold none."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agc.resume import (
    FormatName,
    SessionSnapshot,
    ToolCallState,
    check_history,
    load_snapshot,
    save_snapshot,
)
from tests._core.secret_corpus import Case, build_cases, strings_of, survivors
from tests.conftest import examples, sampled
from tests.resume.helpers import view

CASES = build_cases()
# By default a seeded sample holding every kind and every placement; the whole corpus in
# the thorough profile (tests/conftest.py).
SAMPLE = sampled(
    CASES,
    keep=150,
    seed="snapshot-corpus",
    cover=(lambda case: case.secret.kind, lambda case: case.placement),
)


def _call(call_id: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": "run", "arguments": arguments}}


def _messages(cases: list[Case]) -> tuple[list[dict[str, Any]], str | None]:
    """A Chat Completions history that carries every case: text as user messages, tool
    arguments and tool results; values under their names in content parts; a token
    under ``"id"`` as a tool call's id (and its result's ``tool_call_id``)."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are a coding agent."}]
    pending: str | None = None
    for number, case in enumerate(cases):
        if case.placement == "under-id" and case.value is not None:
            call_id = case.value["id"]
            call = _call(call_id, "{}")
            messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
            messages.append({"role": "tool", "tool_call_id": call_id, "content": "ok"})
            pending = call_id
        elif case.value is not None:
            part = {"type": "text", "text": "see the metadata", "metadata": case.value}
            messages.append({"role": "user", "content": [part]})
        elif number % 3 == 0:
            messages.append({"role": "user", "content": case.text})
        else:
            call_id = f"call_{number}"
            arguments = json.dumps({"input": case.text})
            call = _call(call_id, arguments)
            messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
            result = case.text if number % 3 == 1 else json.dumps({"output": case.text})
            messages.append({"role": "tool", "tool_call_id": call_id, "content": result})
    return messages, pending


@pytest.mark.parametrize("compress", [False, True], ids=["json", "zstd"])
def test_no_corpus_secret_reaches_the_stored_snapshot(tmp_path: Path, compress: bool) -> None:
    messages, pending = _messages(SAMPLE)
    snapshot = SessionSnapshot(
        run_id="corpus",
        session_id="s-1",
        messages=messages,
        tool_call_state=ToolCallState(True, pending),
        agent_config={"provider": "openai", "model": "gpt-5"},
    )
    result = save_snapshot(snapshot, tmp_path, compress=compress)
    data = result.path.read_bytes()
    if compress:
        data = zstandard.ZstdDecompressor().decompress(data)
    stored = data.decode("utf-8")
    decoded = "\n".join(strings_of(json.loads(stored)))
    left = {
        (case.secret.kind, case.placement)
        for case in SAMPLE
        if survivors(case.pieces, stored) or survivors(case.pieces, decoded)
    }
    assert left == set()
    # Every detector kind of the corpus was counted, and the snapshot still loads.
    assert {case.secret.detects_as for case in SAMPLE} <= set(result.redactions)
    loaded = load_snapshot("corpus", tmp_path)
    assert loaded.tool_call_state.pending_tool_call_id is not None
    assert loaded.tool_call_state.pending_tool_call_id.startswith("[REDACTED:")


_TOKENS = [
    "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2",
    "ghp_" + "Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8",
]
# Call ids: secrets of one kind (equal once redacted), a plain id that looks like a
# renamed one, and plain ids.
_CALL_IDS = st.sampled_from(
    [*(f"call_{t}" for t in _TOKENS), "call_[REDACTED:github-token]-1", "call_1", "call_2"]
)


def _history(fmt: str, calls: list[list[str]]) -> list[dict[str, Any]]:
    """One assistant turn per list of call ids, each call answered."""
    out: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for turn in calls:
        if fmt == "openai-chat":
            tool_calls = [_call(call_id, "{}") for call_id in turn]
            out.append({"role": "assistant", "content": None, "tool_calls": tool_calls})
            out += [{"role": "tool", "tool_call_id": c, "content": f"r {c}"} for c in turn]
        elif fmt == "anthropic":
            uses = [{"type": "tool_use", "id": c, "name": "run", "input": {}} for c in turn]
            results = [{"type": "tool_result", "tool_use_id": c, "content": c} for c in turn]
            out += [{"role": "assistant", "content": uses}, {"role": "user", "content": results}]
        else:
            for call_id in turn:
                out.append(
                    {"type": "function_call", "call_id": call_id, "name": "run", "arguments": "{}"}
                )
                out.append({"type": "function_call_output", "call_id": call_id, "output": "r"})
    return out


@settings(
    max_examples=examples(120),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    fmt=st.sampled_from(["openai-chat", "anthropic", "openai-responses"]),
    calls=st.lists(st.lists(_CALL_IDS, min_size=1, max_size=3, unique=True), max_size=4),
    pending_turn=st.integers(min_value=0, max_value=3),
)
def test_call_ids_made_equal_by_the_redaction_stay_distinct(
    tmp_path: Path, fmt: FormatName, calls: list[list[str]], pending_turn: int
) -> None:
    """Two call ids holding different secrets of one kind redact to one text: the saved
    history must still pair each call with its own result (a valid history stays valid,
    nothing for the repair to drop), and pendingToolCallId names the same call."""
    messages = _history(fmt, calls)
    if not check_history(messages, fmt).valid:
        return  # an id reused across turns: not every format allows it
    pending = calls[pending_turn][0] if pending_turn < len(calls) else None
    state = ToolCallState(pending is not None, pending)
    snapshot = SessionSnapshot("r", "s", messages, state, {}, format=fmt)
    store = tmp_path / str(uuid.uuid4())
    save_snapshot(snapshot, store)
    loaded = load_snapshot("r", store)
    assert "ghp_" not in json.dumps(loaded.messages)
    assert check_history(loaded.messages, fmt).valid
    before = [b.call_id for m in view(messages, fmt) for b in m.blocks if b.kind == "call"]
    after = [b.call_id for m in view(loaded.messages, fmt) for b in m.blocks if b.kind == "call"]
    assert len(set(after)) == len(set(before))
    if pending is not None:
        assert loaded.tool_call_state.pending_tool_call_id == after[before.index(pending)]


def test_a_tool_input_whose_keys_redact_to_one_text_keeps_every_member(tmp_path: Path) -> None:
    """An object's keys holding different secrets of one kind: the saved snapshot keeps
    each member under its own name (``<redacted key>-<n>``), in order."""
    tool_input = {_TOKENS[0]: "first", "[REDACTED:github-token]-1": "literal", _TOKENS[1]: "second"}
    messages = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": "run", "input": tool_input}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}],
        },
    ]
    snapshot = SessionSnapshot(
        "r", "s", messages, ToolCallState(False, None), {}, format="anthropic"
    )
    result = save_snapshot(snapshot, tmp_path)
    assert result.redactions == {"github-token": 2}
    saved = load_snapshot("r", tmp_path).messages[1]["content"][0]["input"]
    assert list(saved.items()) == [
        ("[REDACTED:github-token]-2", "first"),
        ("[REDACTED:github-token]-1", "literal"),
        ("[REDACTED:github-token]-3", "second"),
    ]
