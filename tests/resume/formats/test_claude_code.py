"""Claude Code session files (and Codex rollouts): read, repaired, written back (golden files).

The golden outputs were checked by hand: unchanged lines are byte for byte the input's,
a dropped line's children hang from its parent, a synthetic result is a new line chained
below the call's line, and lines that are not messages (or not JSON) stay where they were.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agc.resume.formats import load_history
from agc.resume.repair import Strategy, repair_loaded

GOLDEN = Path(__file__).resolve().parent.parent / "golden"


@pytest.mark.parametrize("strategy", ["strip", "synthesize"])
@pytest.mark.parametrize("name", ["claude-code-in-flight", "codex-rollout-in-flight"])
def test_repaired_session_file_matches_golden(name: str, strategy: Strategy) -> None:
    source = GOLDEN / f"{name}.jsonl"
    result = repair_loaded(load_history(source.read_bytes(), source=source.name), strategy=strategy)
    assert result.data == (GOLDEN / f"{name}.{strategy}.jsonl").read_bytes()
    assert result.report.after.valid


def test_claude_code_reader_groups_lines_and_skips_non_messages() -> None:
    history = load_history((GOLDEN / "claude-code-in-flight.jsonl").read_bytes(), source="x")
    assert history.format == "claude-code"
    assert [m.role for m in history.messages] == ["user", "assistant", "user"]
    assert [b.origin for b in history.messages[1].blocks] == [2, 3]
    assert history.skipped == [0, 4, 6]


def test_text_and_result_lines_edited_in_place() -> None:
    lines = [
        {
            "type": "user",
            "uuid": "a",
            "parentUuid": None,
            "message": {"role": "user", "content": "go"},
        },
        {
            "type": "assistant",
            "uuid": "b",
            "parentUuid": "a",
            "message": {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "on it"},
                    {"type": "tool_use", "id": "t1", "name": "Read", "input": {"p": 1}},
                ],
            },
        },
        {
            "type": "user",
            "uuid": "c",
            "parentUuid": "b",
            "message": {"role": "user", "content": "hello?"},
        },
    ]
    data = "".join(json.dumps(line) + "\n" for line in lines).encode()
    result = repair_loaded(load_history(data, source="x"))
    out = [json.loads(line) for line in result.data.decode().splitlines()]
    assert out[1]["message"]["content"] == [{"type": "text", "text": "on it"}]
    assert out[1]["uuid"] == "b"
    assert out[2] == lines[2]


@pytest.mark.parametrize("strategy", ["strip", "synthesize"])
def test_claude_code_blocks_moved_across_lines(strategy: Strategy) -> None:
    """Text after tool_use and text before tool_result, each in its own line, are fixed."""
    lines = [
        {
            "type": "user",
            "uuid": "a",
            "parentUuid": None,
            "message": {"role": "user", "content": "go"},
        },
        {
            "type": "assistant",
            "uuid": "b",
            "parentUuid": "a",
            "message": {
                "id": "m",
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "R", "input": {}}],
            },
        },
        {
            "type": "assistant",
            "uuid": "c",
            "parentUuid": "b",
            "message": {
                "id": "m",
                "role": "assistant",
                "content": [{"type": "text", "text": "also"}],
            },
        },
        {
            "type": "user",
            "uuid": "d",
            "parentUuid": "c",
            "message": {"role": "user", "content": [{"type": "text", "text": "hm"}]},
        },
        {
            "type": "user",
            "uuid": "e",
            "parentUuid": "d",
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}],
            },
        },
    ]
    data = "".join(json.dumps(line) + "\n" for line in lines).encode()
    result = repair_loaded(load_history(data, source="x"), strategy=strategy)
    assert [c.action for c in result.report.changes] == ["moved-text", "moved-result"]
    out = [json.loads(line) for line in result.data.decode().splitlines()]
    assert [r["uuid"] for r in out] == ["a", "b", "d"]
    assert [b["type"] for b in out[1]["message"]["content"]] == ["text", "tool_use"]
    assert [b["type"] for b in out[2]["message"]["content"]] == ["tool_result", "text"]
    assert out[2]["parentUuid"] == "b"
