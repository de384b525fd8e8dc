"""Tests for the session-file parsers: tool events and facts from real client files.

Expected counts are taken from the files by an independent reading (the JSON blocks a
client writes for a call and a result, counted here), never from the parser.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agc.capture import SessionFacts, SessionParser, ToolEvent, detect_format, parse_session
from tests.conftest import REAL_FIXTURES, require_shared

CLAUDE = REAL_FIXTURES / "claude-code"
ROLLOUTS = REAL_FIXTURES / "codex-rollout"
EXEC = REAL_FIXTURES / "codex-exec"


def _lines(path: Path) -> list[Any]:
    out: list[Any] = []
    for raw in require_shared(path).read_bytes().splitlines():
        try:
            out.append(json.loads(raw))
        except ValueError:
            out.append(None)
    return out


def _files(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.jsonl")) if folder.is_dir() else [folder / "absent.jsonl"]


def _claude_blocks(lines: list[Any]) -> Iterator[dict[str, Any]]:
    for line in lines:
        message = line.get("message") if isinstance(line, dict) else None
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict):
                yield block


@pytest.mark.parametrize("path", _files(CLAUDE), ids=lambda p: p.name)
def test_claude_code_sessions_give_one_event_per_tool_use_and_tool_result(path: Path) -> None:
    lines = _lines(path)
    blocks = list(_claude_blocks(lines))
    uses = [b["id"] for b in blocks if b.get("type") == "tool_use"]
    results = [b for b in blocks if b.get("type") == "tool_result"]
    events, facts = parse_session(lines)
    assert [e.call_id for e in events if e.event == "call"] == uses
    assert [e.call_id for e in events if e.event == "result"] == [b["tool_use_id"] for b in results]
    assert [e.status for e in events if e.event == "result"] == [
        "error" if b.get("is_error") is True else "ok" for b in results
    ]
    assert all(e.source == "session-file" and e.client == "claude-code" for e in events)
    assert facts is not None
    assert facts.tool_calls == len(uses)
    assert facts.tool_failures == sum(b.get("is_error") is True for b in results)
    ids = {line["sessionId"] for line in lines if isinstance(line, dict) and "sessionId" in line}
    assert facts.session_id in ids


def test_the_session_that_reads_as_23_tool_calls_gives_23_calls_and_20_results() -> None:
    lines = _lines(CLAUDE / "agentcmd-full-session.jsonl")
    events, facts = parse_session(lines)
    calls = [e for e in events if e.event == "call"]
    assert len(calls) == 23
    assert sum(e.event == "result" for e in events) == 20  # three calls still in flight
    assert facts is not None
    cwd = next(line["cwd"] for line in lines if isinstance(line, dict) and "cwd" in line)
    assert facts.project == SessionFacts.project_of(cwd)
    assert cwd not in json.dumps(facts.to_attributes())  # never the host path
    assert facts.model == "claude-sonnet-4-5-20250929"
    stamps = [line["timestamp"] for line in lines if isinstance(line, dict) and "timestamp" in line]
    assert (facts.first_agent_ts, facts.last_agent_ts) == (stamps[0], stamps[-1])


@pytest.mark.parametrize("path", _files(ROLLOUTS), ids=lambda p: p.name)
def test_codex_rollouts_pair_calls_with_outputs(path: Path) -> None:
    lines = _lines(path)
    items = [line["payload"] for line in lines if line.get("type") == "response_item"]
    calls = [
        p["call_id"]
        for p in items
        if p.get("type") in {"function_call", "custom_tool_call", "local_shell_call"}
    ]
    outputs = [
        p["call_id"]
        for p in items
        if p.get("type") in {"function_call_output", "custom_tool_call_output"}
    ]
    events, facts = parse_session(lines)
    assert [e.call_id for e in events if e.event == "call"] == calls
    assert [e.call_id for e in events if e.event == "result"] == outputs
    meta = lines[0]["payload"]
    assert facts is not None
    assert facts.client == "codex"
    assert facts.session_id == meta["id"]
    assert facts.project == SessionFacts.project_of(meta["cwd"])
    assert facts.first_agent_ts == lines[0]["timestamp"]
    assert facts.last_agent_ts == lines[-1]["timestamp"]
    assert facts.tool_calls == len(calls)


def test_the_rollout_interrupted_mid_tool_ends_with_a_call_and_no_result() -> None:
    path = next(iter(ROLLOUTS.glob("rollout-2026-02-23T13-19-38-*.jsonl")), ROLLOUTS / "absent")
    events, _ = parse_session(_lines(path))
    assert events[-1].event == "call"
    assert events[-1].tool == "exec_command"
    assert not any(e.event == "result" and e.call_id == events[-1].call_id for e in events)


@pytest.mark.parametrize("path", _files(EXEC), ids=lambda p: p.name)
def test_codex_exec_streams_keep_the_thread_id_and_give_their_tool_items(path: Path) -> None:
    lines = _lines(path)
    tools = {
        line["item"]["id"]
        for line in lines
        if line["type"].startswith("item.")
        and line["item"]["type"] in {"command_execution", "file_change", "mcp_tool_call"}
    }
    events, facts = parse_session(lines)
    assert {e.call_id for e in events if e.event == "call"} == tools
    assert {e.call_id for e in events if e.event == "result"} == tools
    assert sum(e.event == "call" for e in events) == len(tools)  # started + completed: once
    assert facts is not None
    assert facts.thread_id == lines[0]["thread_id"] == facts.session_id


def _gemini(status: str) -> list[dict[str, Any]]:
    """A Gemini CLI chat as its chat recording writes one: metadata, then each message
    appended again whenever it changes (here: a tool call scheduled, then finished)."""
    call = {"id": "run_shell_command-1", "name": "run_shell_command", "args": {"command": "ls"}}
    message = {"id": "m2", "timestamp": "2026-12-01T10:00:02Z", "type": "gemini", "content": ""}
    return [
        {"sessionId": "5e1f", "projectHash": "ab" * 32, "startTime": "2026-12-01T10:00:00Z"},
        {"id": "m1", "timestamp": "2026-12-01T10:00:01Z", "type": "user", "content": "hi"},
        {**message, "model": "gemini-2.5-pro", "toolCalls": [{**call, "status": "executing"}]},
        {"$set": {"lastUpdated": "2026-12-01T10:00:02Z"}},
        {**message, "toolCalls": [{**call, "status": status, "result": [{"text": "a b"}]}]},
        {"$set": {"messages": [{**message, "toolCalls": [{**call, "status": status}]}]}},
    ]


@pytest.mark.parametrize(("status", "expected"), [("success", "ok"), ("error", "error")])
def test_a_gemini_chat_gives_each_call_and_result_once(status: str, expected: str) -> None:
    events, facts = parse_session(_gemini(status))
    assert [(e.event, e.tool, e.call_id) for e in events] == [
        ("call", "run_shell_command", "run_shell_command-1"),
        ("result", "run_shell_command", "run_shell_command-1"),
    ]
    assert events[1].status == expected
    assert facts == SessionFacts(
        client="gemini",
        session_id="5e1f",
        model="gemini-2.5-pro",
        project="sha256:" + "ab" * 8,
        first_agent_ts="2026-12-01T10:00:00Z",
        last_agent_ts="2026-12-01T10:00:02Z",
        tool_calls=1,
        tool_failures=int(expected == "error"),
    )


def test_a_secret_in_a_tool_input_is_redacted_in_the_record() -> None:
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    line = {
        "type": "assistant",
        "sessionId": "s",
        "message": {
            "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"k": secret}}]
        },
    }
    (event,) = SessionParser().feed(line)
    assert secret not in json.dumps(event.to_record())


def test_a_file_of_no_known_format_gives_nothing() -> None:
    events, facts = parse_session([{"role": "user", "content": "hi"}, {"a": 1}, None, 3])
    assert (events, facts) == ([], None)
    assert detect_format({"type": "user"}) is None


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)
KEYS = st.sampled_from(
    [
        "type",
        "payload",
        "sessionId",
        "message",
        "content",
        "item",
        "id",
        "toolCalls",
        "$set",
        "messages",
        "call_id",
        "projectHash",
        "status",
        "tool_use_id",
        "timestamp",
    ]
)
TYPES = st.sampled_from(
    [
        "response_item",
        "session_meta",
        "item.completed",
        "item.started",
        "thread.started",
        "assistant",
        "user",
        "gemini",
        "function_call",
        "function_call_output",
        "tool_use",
        "tool_result",
        "command_execution",
    ]
)
LINE = st.recursive(
    st.dictionaries(KEYS, JSON | TYPES, max_size=5),
    lambda inner: st.dictionaries(KEYS, inner | st.lists(inner, max_size=3) | TYPES, max_size=5),
    max_leaves=20,
)


@given(st.lists(LINE | JSON, max_size=12))
def test_any_lines_give_records_that_read_back_and_facts_that_count_them(
    lines: list[Any],
) -> None:
    events, facts = parse_session(lines)
    for event in events:
        assert event.event in {"call", "result"}
        assert ToolEvent.from_record(event.to_record()) is not None
        json.dumps(event.to_record())
    if facts is not None:
        assert facts.tool_calls == sum(e.event == "call" for e in events)
        assert facts.tool_failures == sum(e.status == "error" for e in events)
        json.dumps(facts.to_attributes())
    else:
        assert events == []


@pytest.mark.parametrize("path", _files(CLAUDE)[:1] + _files(ROLLOUTS)[:1], ids=lambda p: p.name)
def test_each_event_names_the_line_of_the_file_it_comes_from(path: Path) -> None:
    lines = _lines(path)
    events, _ = parse_session(lines)
    assert events
    for event in events:
        assert event.line is not None
        text = json.dumps(lines[event.line - 1])
        assert json.dumps(event.call_id)[1:-1] in text


def test_the_record_of_an_import_names_the_transcript_line() -> None:
    parser = SessionParser()
    line = {"type": "thread.started", "thread_id": "t"}
    item = {"type": "item.completed", "item": {"id": "i1", "type": "web_search", "query": "q"}}
    assert parser.feed(line, 7) == []
    (call, result) = parser.feed(item, 9)
    assert (call.line, result.line) == (9, 9)
