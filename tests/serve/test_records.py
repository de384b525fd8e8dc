"""Record builders, traces and answers: tool events, hashes, windows, waitingFor."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from agc.serve import TraceEvent, TurnEnd, TurnInfo, reply_record, request_record, tool_event
from agc.serve._trace import Trace, iso_ms, trim, waiting_for_after

REACHES_INSIDE = {
    "agc.serve._trace": "the trace buffer: trimming, timestamps and waits",
}


def _info(message: str = "run it", key: str | None = "k-1") -> TurnInfo:
    return TurnInfo(
        trace_id="trc-1",
        conversation_id="conv-1",
        turn_number=2,
        message=message,
        created_at_ms=1_700_000_000_000,
        provider="codex-stdio",
        workspace=Path("/work"),
        idempotency_key=key,
    )


def test_the_request_record_keeps_the_message_redacted_and_its_hash() -> None:
    secret = "sk-proj-" + "Z" * 40
    record = request_record(_info(f"use {secret}"))
    assert record["type"] == "serve.request"
    assert record["turn"] == 2
    assert secret not in str(record)
    assert record["message"] == "use [REDACTED:openai-key]"
    assert record["message_sha256"] == hashlib.sha256(f"use {secret}".encode()).hexdigest()
    assert record["idempotency_key_sha256"] == hashlib.sha256(b"k-1").hexdigest()
    assert request_record(_info(key=None))["idempotency_key_sha256"] is None


def test_the_reply_record_says_how_the_turn_ended() -> None:
    end = TurnEnd(
        "failed",
        None,
        {"code": "provider_exited", "message": "killed"},
        "app-server",
        "m",
        "thr",
        "sess",
        "turn",
        7,
        5,
    )
    record = reply_record(_info(), end)
    assert record["status"] == "failed"
    assert record["reply"] is None
    assert record["error"]["code"] == "provider_exited"
    assert record["event_count"] == 7


def _event(method: str, params: dict[str, Any], kind: str = "notification") -> TraceEvent:
    return Trace("trc-1", "conv-1", 1, 0, 100).add("codex", method, params, kind)


def test_app_server_tool_items_become_call_and_result_events() -> None:
    item = {
        "type": "commandExecution",
        "id": "call_9",
        "command": "ls",
        "cwd": "/w",
        "status": "inProgress",
    }
    call = tool_event(_event("item/started", {"item": item, "turnId": "t"}))
    assert call == {
        "type": "tool.call",
        "call_id": "call_9",
        "tool": "commandExecution",
        "status": "inProgress",
        "turn_id": "t",
        "trace_seq": 0,
        "source": "app-server",
        "command": "ls",
        "cwd": "/w",
    }
    done = {
        **item,
        "status": "completed",
        "exitCode": 2,
        "durationMs": 5,
        "aggregatedOutput": "abc",
    }
    result = tool_event(_event("item/completed", {"item": done, "turnId": "t"}))
    assert result is not None
    assert (result["type"], result["exit_code"], result["output_chars"]) == ("tool.result", 2, 3)
    assert "abc" not in str(result)  # outputs stay in the transcript only
    mcp = {"type": "mcpToolCall", "id": "m", "server": "s", "tool": "t", "arguments": {"a": 1}}
    assert tool_event(_event("item/started", {"item": mcp}))["name"] == "t"  # type: ignore[index]
    message = {"type": "agentMessage", "id": "x", "text": "hi"}
    assert tool_event(_event("item/completed", {"item": message})) is None
    assert tool_event(_event("turn/started", {})) is None


def test_an_answered_approval_is_a_tool_event() -> None:
    asked = _event(
        "item/commandExecution/requestApproval",
        {"itemId": "call_1", "agcAnswer": {"decision": "decline"}},
        kind="server-request",
    )
    assert tool_event(asked) == {
        "type": "tool.approval",
        "method": "item/commandExecution/requestApproval",
        "call_id": "call_1",
        "decision": "decline",
        "trace_seq": 0,
    }


def test_waiting_for_follows_the_turn() -> None:
    trace = Trace("trc-1", "conv-1", 1, 0, 100)
    steps = [
        ("serve", "serve.session.starting", {}, "session"),
        ("serve", "serve.session.ready", {}, "turn-start"),
        ("codex", "turn/started", {}, "model"),
        ("codex", "item/started", {"item": {"type": "commandExecution"}}, "tool:commandExecution"),
        ("codex", "item/commandExecution/outputDelta", {}, "tool:commandExecution"),
        ("codex", "item/completed", {"item": {"type": "commandExecution"}}, "model"),
        ("codex", "item/started", {"item": {"type": "agentMessage"}}, "reply"),
        ("codex", "turn/completed", {}, "audit"),
    ]
    for source, method, params, expected in steps:
        trace.add(source, method, params, "notification")  # type: ignore[arg-type]
        assert trace.waiting_for == expected, method
    begin = _event("codex/event", {"msg": {"type": "exec_command_begin"}})
    assert waiting_for_after(begin, None) == "tool:exec_command"


def test_a_trace_keeps_its_newest_events_and_pages_past_dropped_ones() -> None:
    trace = Trace("trc-1", "conv-1", 1, 0, max_events=3)
    for index in range(5):
        trace.add("codex", "warning", {"n": index}, "notification")
    assert trace.event_count == 5
    assert [event.seq for event in trace.events] == [2, 3, 4]
    events, more = trace.page(-1, 2)
    assert [event.seq for event in events] == [2, 3]
    assert more
    events, more = trace.page(3, 10)
    assert [event.seq for event in events] == [4]
    assert not more


def test_trim_cuts_long_strings_and_deep_nesting() -> None:
    assert trim({"a": "x" * 10}, 4) == {"a": "xxxx…[+6 chars]"}
    deep: object = "leaf"
    for _ in range(40):
        deep = [deep]
    flat = str(trim(deep, 100))
    assert "leaf" not in flat
    assert "…" in flat
    assert iso_ms(1_700_000_000_123) == "2023-11-14T22:13:20.123Z"


@given(
    sizes=st.lists(st.integers(min_value=0, max_value=40_000), min_size=1, max_size=60),
    budget=st.integers(min_value=1, max_value=200_000),
    finished=st.integers(min_value=1, max_value=50_000),
)
def test_a_trace_keeps_within_its_byte_budget_the_newest_events_in_order(
    sizes: list[int], budget: int, finished: int
) -> None:
    trace = Trace("trc-1", "conv-1", 1, 0, max_events=50, max_bytes=budget, window=5)
    for index, size in enumerate(sizes):
        trace.add("codex" if index % 2 else "serve", "warning", {"t": "x" * size}, "notification")
        kept = [event.seq for event in trace.events]
        # The newest events, contiguous, the last one always; within both bounds unless
        # the newest alone is over the budget.
        assert kept == list(range(trace.event_count - len(kept), trace.event_count))
        assert len(kept) <= 50
        assert trace.kept_bytes <= budget or len(kept) == 1
    trace.compact(finished)
    assert trace.kept_bytes <= finished or len(trace.events) == 1
    assert trace.events[-1].seq == len(sizes) - 1
    # The /result windows do not depend on what the trace still keeps.
    assert [e.seq for e in trace.runner_window] == list(range(len(sizes)))[-5:]
    assert [e.seq for e in trace.provider_window] == list(range(1, len(sizes), 2))[-5:]
    assert trace.provider_count == len(sizes) // 2
