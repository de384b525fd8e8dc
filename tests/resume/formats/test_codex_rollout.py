"""Tests for agc.resume._formats.codex_rollout: response items read, other lines kept."""

from __future__ import annotations

import json
from pathlib import Path

from agc.resume._formats import load_history
from agc.resume._repair import repair_loaded

GOLDEN = Path(__file__).resolve().parent.parent / "golden"


def test_codex_reader_keeps_only_response_items() -> None:
    history = load_history((GOLDEN / "codex-rollout-in-flight.jsonl").read_bytes(), source="x")
    assert history.format == "codex-rollout"
    assert [m.origin for m in history.messages] == [1, 2, 3]
    assert history.skipped == [0, 4]


def test_codex_compacted_line_resets_the_history() -> None:
    lines = [
        {
            "timestamp": "t",
            "type": "response_item",
            "payload": {
                "type": "function_call",
                "name": "shell",
                "arguments": "{}",
                "call_id": "old",
            },
        },
        {"timestamp": "t", "type": "compacted", "payload": {"message": "summary"}},
        {
            "timestamp": "t",
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "go"}],
            },
        },
    ]
    data = "".join(json.dumps(line) + "\n" for line in lines).encode()
    history = load_history(data, source="x")
    assert [m.origin for m in history.messages] == [2]
    result = repair_loaded(history)
    assert result.data == data
    assert not result.report.changed
