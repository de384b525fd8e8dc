"""The secret corpus through the snapshot path: save_snapshot's stored bytes hold none."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import zstandard

from agc.resume import load_snapshot
from agc.resume._snapshot import SessionSnapshot, ToolCallState, save_snapshot
from tests._core.secret_corpus import Case, build_cases, strings_of, survivors

CASES = build_cases()


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
    messages, pending = _messages(CASES)
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
        for case in CASES
        if survivors(case.pieces, stored) or survivors(case.pieces, decoded)
    }
    assert left == set()
    # Every detector kind of the corpus was counted, and the snapshot still loads.
    assert {case.secret.detects_as for case in CASES} <= set(result.redactions)
    loaded = load_snapshot("corpus", tmp_path)
    assert loaded.tool_call_state.pending_tool_call_id is not None
    assert loaded.tool_call_state.pending_tool_call_id.startswith("[REDACTED:")
