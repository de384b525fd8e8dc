"""Claude Code session files (and Codex rollouts): read, repaired, written back (golden files).

The golden outputs were checked by hand: unchanged lines are byte for byte the input's,
a dropped line's children hang from its parent, a synthetic result is a new line chained
below the call's line, and lines that are not messages (or not JSON) stay where they were.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agc.resume import Strategy, load_history, repair_loaded
from tests.conftest import examples

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


def test_real_result_that_cannot_be_moved_is_never_replaced_by_a_synthetic_one() -> None:
    """Issue 4: real results are never replaced by synthetic ones.

    The result of `deploy` sits two messages after its call; a session-file line is
    never moved, so the call cannot keep it. Answering the call as "interrupted, may or
    may not have executed" while the history shows it ran would replace the real
    result: the call is stripped with its result instead, under both strategies.
    """

    def line(kind: str, uuid: str, parent: str | None, content: Any) -> dict[str, Any]:
        return {
            "type": kind,
            "uuid": uuid,
            "parentUuid": parent,
            "sessionId": "s",
            "message": {"role": kind, "content": content},
        }

    lines = [
        line("user", "u1", None, "go"),
        line(
            "assistant", "a1", "u1", [{"type": "tool_use", "id": "tA", "name": "Bash", "input": {}}]
        ),
        line("user", "u2", "a1", [{"type": "text", "text": "also b"}]),
        line(
            "assistant", "a2", "u2", [{"type": "tool_use", "id": "tB", "name": "Read", "input": {}}]
        ),
        line(
            "user",
            "u3",
            "a2",
            [{"type": "tool_result", "tool_use_id": "tA", "content": "deployed"}],
        ),
        line("user", "u4", "u3", [{"type": "tool_result", "tool_use_id": "tB", "content": "bbb"}]),
    ]
    data = "".join(json.dumps(item) + "\n" for item in lines).encode()
    result = repair_loaded(load_history(data, source="x"), strategy="synthesize")
    actions = [(c.action, c.call_id) for c in result.report.changes]
    assert ("stripped", "tA") in actions
    assert ("dropped-orphan-result", "tA") in actions
    assert not result.report.ids("synthesized")
    stripped = next(c for c in result.report.changes if c.action == "stripped")
    assert "no result in the history" not in stripped.reason
    assert b"agc resume:" not in result.data
    assert b'"bbb"' in result.data


# --- the uuid chain stays whole (what Claude Code loads a session by) ----------------------


def _chain_session(plan: list[str]) -> bytes:
    """A Claude Code session as it writes one: every line chained to the one before by
    parentUuid, side lines (attachment, last-prompt with leafUuid) in between."""
    lines: list[dict[str, Any]] = []
    parent: str | None = None

    def add(record: dict[str, Any]) -> None:
        nonlocal parent
        record = {"parentUuid": parent, "sessionId": "s", **record}
        record["uuid"] = f"u{len(lines)}"
        parent = record["uuid"]
        lines.append(record)

    add({"type": "user", "message": {"role": "user", "content": "go"}})
    for number, step in enumerate(plan):
        if step == "attachment":
            add({"type": "attachment", "attachment": {"type": "reminder"}})
            continue
        call = f"toolu_{number}"
        add(
            {
                "type": "assistant",
                "message": {
                    "role": "assistant",
                    "content": [
                        {"type": "tool_use", "id": call, "name": "Bash", "input": {"command": "ls"}}
                    ],
                },
            }
        )
        lines.append({"type": "last-prompt", "leafUuid": parent, "sessionId": "s"})
        if step == "answered":
            add(
                {
                    "type": "user",
                    "message": {
                        "role": "user",
                        "content": [{"type": "tool_result", "tool_use_id": call, "content": "ok"}],
                    },
                }
            )
    return "".join(json.dumps(line, separators=(",", ":")) + "\n" for line in lines).encode()


@settings(max_examples=examples(60), deadline=None)
@given(
    plan=st.lists(st.sampled_from(["answered", "unanswered", "attachment"]), max_size=8),
    strategy=st.sampled_from(["strip", "synthesize"]),
)
def test_repair_keeps_the_uuid_chain_whole(plan: list[str], strategy: Strategy) -> None:
    """After any repair every parentUuid and leafUuid names a line of the file, uuids are
    unique, and walking parents from the last line reaches every message line: the file
    stays loadable for Claude Code, not only for agc."""
    data = _chain_session(plan)
    result = repair_loaded(load_history(data, source="s.jsonl"), strategy=strategy)
    records = [json.loads(line) for line in result.data.splitlines()]
    uuids = [r["uuid"] for r in records if "uuid" in r]
    assert len(uuids) == len(set(uuids))
    known = set(uuids)
    for record in records:
        for key in ("parentUuid", "leafUuid"):
            if record.get(key) is not None:
                assert record[key] in known, (key, record)
    by_uuid = {r["uuid"]: r for r in records if "uuid" in r}
    walked: set[str] = set()
    node: str | None = uuids[-1]
    while node is not None:
        walked.add(node)
        node = by_uuid[node]["parentUuid"]
    messages = {r["uuid"] for r in records if r["type"] in {"user", "assistant"}}
    assert messages <= walked
