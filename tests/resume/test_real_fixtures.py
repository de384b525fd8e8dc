"""The real session files in ../shared/fixtures/real/ (see its README).

Three hold calls in flight and must come out valid under both strategies with every
completed call and result kept; every other Codex rollout and Claude Code file must come
out byte for byte unchanged. ``codex exec --json`` streams hold no history: refused.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agc.errors import HistoryFormatError
from agc.resume import RepairResult, Strategy, load_history, repair_loaded
from agc.resume._formats.model import Message
from tests.conftest import require_shared
from tests.resume.helpers import REAL_FIXTURES, need, shared_params

REACHES_INSIDE = {
    "agc.resume._formats.model": "the neutral message model, to compare histories",
}

IN_FLIGHT: dict[str, dict[str, Any]] = {
    # file name prefix -> what the README says is in flight
    "codex-rollout/rollout-2026-02-23T13-19-38": {
        "format": "codex-rollout",
        "ids": ["call_UtYwHmwWekzvq83m8Rb9K8jJ"],
        # Its arguments were replaced by the publisher with "[REDACTED_ARGUMENTS …]",
        # which is not JSON: never kept for replay, so synthesize strips it too.
        "synthesize_action": "stripped",
    },
    "claude-code/agentcmd-full-session": {
        "format": "claude-code",
        "ids": [
            "toolu_019KCj6ze6s4xPHdfY6s1FC5",
            "toolu_011df4X9k8WZCHh9sXKVzGHZ",
            "toolu_01XSaf9HkXmiWhn7q2mekBiR",
        ],
        "synthesize_action": "synthesized",
    },
    "claude-code/cclog-edge_cases": {
        "format": "claude-code",
        "ids": ["tool_edge_002", "toolu_todowrite_002"],
        "synthesize_action": "synthesized",
    },
}


def _find(prefix: str) -> Path:
    require_shared(REAL_FIXTURES)
    folder, _, stem = prefix.partition("/")
    matches = sorted((REAL_FIXTURES / folder).glob(stem + "*.jsonl"))
    assert len(matches) == 1, f"expected one file for {prefix}, found {matches}"
    return matches[0]


def _answered(messages: list[Message]) -> dict[str, tuple[Any, Any]]:
    """call id -> (call raw, first result raw) for every call that has a result."""
    calls = {b.call_id: b.raw for m in messages for b in m.blocks if b.kind == "call"}
    out: dict[str, tuple[Any, Any]] = {}
    for message in messages:
        for block in message.results():
            if block.call_id is not None and block.call_id in calls and block.call_id not in out:
                out[block.call_id] = (calls[block.call_id], block.raw)
    return out


def _repair(path: Path, strategy: Strategy) -> tuple[bytes, RepairResult]:
    data = path.read_bytes()
    return data, repair_loaded(load_history(data, source=str(path)), strategy=strategy)


@pytest.mark.parametrize("strategy", ["strip", "synthesize"])
@pytest.mark.parametrize("prefix", sorted(IN_FLIGHT))
def test_in_flight_file_comes_out_valid(prefix: str, strategy: Strategy) -> None:
    facts = IN_FLIGHT[prefix]
    path = _find(prefix)
    data, result = _repair(path, strategy)
    before = load_history(data, source=str(path))
    assert before.format == facts["format"]
    assert not result.report.before.valid
    assert result.report.after.valid
    action = "stripped" if strategy == "strip" else facts["synthesize_action"]
    assert sorted(result.report.ids(action)) == sorted(facts["ids"])
    # Every completed call and its result are kept exactly as they were.
    after = load_history(result.data, source="repaired", format=facts["format"])
    kept = _answered(after.messages)
    for call_id, pair in _answered(before.messages).items():
        assert kept.get(call_id) == pair, f"completed call {call_id} not kept"
    # The written file is still a session file of the same kind, line for line.
    assert result.data != data
    assert load_history(result.data, source="repaired").format == facts["format"]


@pytest.mark.parametrize("strategy", ["strip", "synthesize"])
@pytest.mark.parametrize("prefix", sorted(IN_FLIGHT))
def test_in_flight_file_keeps_every_other_line(prefix: str, strategy: Strategy) -> None:
    path = _find(prefix)
    data, result = _repair(path, strategy)
    before = data.decode().splitlines()
    after = result.data.decode().splitlines()
    untouched = [line for line in before if line in after]
    touched = {c.record for c in result.report.changes}
    for index, line in enumerate(before):
        if index not in touched and line not in untouched:
            record = json.loads(line)
            # Only lines re-pointed past a dropped/added line may differ.
            assert isinstance(record, dict), line[:80]
            assert "parentUuid" in record, line[:80]


@pytest.mark.parametrize("strategy", ["strip", "synthesize"])
def test_claude_code_chain_stays_linked(strategy: Strategy) -> None:
    path = _find("claude-code/agentcmd-full-session")
    _, result = _repair(path, strategy)
    records = [json.loads(line) for line in result.data.decode().splitlines()]
    uuids = {r.get("uuid") for r in records}
    for record in records[1:]:
        assert record.get("parentUuid") in uuids
    leaf = records[-1]
    chain = []
    by_uuid = {r["uuid"]: r for r in records}
    while leaf is not None:
        chain.append(leaf)
        leaf = by_uuid.get(leaf.get("parentUuid"))
    assert chain[-1] is records[0], "the leaf no longer reaches the first message"
    if strategy == "synthesize":
        results = [
            block
            for r in records[-3:]
            for block in r["message"]["content"]
            if block.get("type") == "tool_result"
        ]
        assert [b["is_error"] for b in results] == [True, True, True]


OTHER_FILES = [
    param
    for param in shared_params(REAL_FIXTURES, "*/*.jsonl")
    if param.values[0] is None
    or not any(
        param.values[0].relative_to(REAL_FIXTURES).as_posix().startswith(p) for p in IN_FLIGHT
    )
]


@pytest.mark.parametrize("strategy", ["strip", "synthesize"])
@pytest.mark.parametrize("path", OTHER_FILES)
def test_other_real_files_come_out_unchanged(path: Path | None, strategy: Strategy) -> None:
    path = need(path, REAL_FIXTURES)
    relative = path.relative_to(REAL_FIXTURES).as_posix()
    if relative.startswith("codex-exec/"):
        with pytest.raises(HistoryFormatError, match="codex exec --json"):
            load_history(path.read_bytes(), source=str(path))
        return
    data, result = _repair(path, strategy)
    assert result.report.before.valid
    assert not result.report.changed
    # byte for byte, except that the output always ends with a line break
    assert result.data == (data if data.endswith(b"\n") else data + b"\n")
