"""Tests for agc.ledger._events: the three inputs, detected line by line."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agc.errors import UsageError
from agc.exitcodes import ExitCode
from agc.ledger import EventDecoder, decode_lines
from agc.ledger._events.decode import detect
from agc.ledger._events.item import camel_case
from tests.ledger.helpers import command, completed, mcp

REACHES_INSIDE = {
    "agc.ledger._events.decode": "input format detection of single lines",
    "agc.ledger._events.item": "the item field-name helper",
}


def _decode(lines: list[Any], fmt: str = "auto") -> tuple[list[Any], EventDecoder]:
    decoder = EventDecoder(fmt)  # type: ignore[arg-type]
    out = []
    for line in lines:
        out.extend(decoder.feed(line if isinstance(line, str) else json.dumps(line)))
    out.extend(decoder.finish())
    return out, decoder


# -- app-server --------------------------------------------------------------------------


def test_app_server_items_complete_with_item_completed_and_started_ones_end_incomplete() -> None:
    lines = [
        {"method": "item/started", "params": {"item": {"type": "commandExecution", "id": "a"}}},
        {"method": "item/commandExecution/outputDelta", "params": {"delta": "x"}},
        {"method": "item/agentMessage/delta", "params": {"delta": "x"}},
        command("c1", "ls"),
        {"id": 3, "result": {"thread": {"id": "t"}}},
        {"method": "turn/completed", "params": {"turn": {"status": "completed"}}},
    ]
    items, decoder = _decode(lines)
    # "a" started and never completed: it comes last, as incomplete
    assert [(i.item_id, i.status) for i in items] == [("c1", "completed"), ("a", "incomplete")]
    assert decoder.completed is True
    assert decoder.stats.formats == {"app-server": 6}


def test_app_server_copies_no_output_result_or_diff() -> None:
    lines = [
        command("c1", "ls", [{"type": "read", "path": "/x", "command": "cat /x", "name": "x"}]),
        mcp("m1", "agc_write_file", {"path": "a"}, error={"message": "ERROR-TEXT"}),
        completed(
            {
                "type": "fileChange",
                "id": "f1",
                "changes": [
                    {"path": "a", "kind": {"type": "update", "movePath": "b"}, "diff": "D"}
                ],
            }
        ),
    ]
    items, _ = _decode(lines)
    flat = json.dumps([dict(i.fields) for i in items])
    for forbidden in (
        "OUTPUT-SHOULD-NEVER-APPEAR",
        "RESULT-SHOULD-NEVER-APPEAR",
        "ERROR-TEXT",
        '"D"',
    ):
        assert forbidden not in flat
    assert items[1].fields["hasError"] is True
    assert items[2].fields["changes"] == [{"path": "a", "kind": "update", "movePath": "b"}]


def test_app_server_turn_failed_is_not_completed() -> None:
    _, decoder = _decode([{"method": "turn/completed", "params": {"turn": {"status": "failed"}}}])
    assert decoder.completed is False


# -- codex exec --json --------------------------------------------------------------------


def test_exec_items_map_to_app_server_types_with_their_fields() -> None:
    lines = [
        {"type": "thread.started", "thread_id": "t"},
        {"type": "turn.started"},
        {"type": "item.started", "item": {"id": "i1", "type": "command_execution"}},
        {
            "type": "item.completed",
            "item": {
                "id": "i1",
                "type": "command_execution",
                "command": "bash -lc ls",
                "aggregated_output": "SECRET",
                "exit_code": 2,
                "status": "failed",
            },
        },
        {"type": "item.completed", "item": {"id": "i2", "type": "web_search", "query": "q"}},
        {"type": "item.completed", "item": {"id": "i3", "type": "agent_message", "text": "x"}},
        {"type": "turn.completed", "usage": {}},
    ]
    items, decoder = _decode(lines)
    assert [(i.item_type, i.source_type, i.status) for i in items] == [
        ("commandExecution", "command_execution", "failed"),
        ("webSearch", "web_search", "completed"),
        ("agentMessage", "agent_message", "completed"),
    ]
    assert dict(items[0].fields) == {"command": "bash -lc ls", "exitCode": 2}
    assert decoder.completed is True


def test_exec_turn_failed() -> None:
    _, decoder = _decode([{"type": "turn.failed", "error": {"message": "x"}}])
    assert decoder.completed is False


# -- rollout --------------------------------------------------------------------------------


def _ri(payload: dict[str, Any]) -> dict[str, Any]:
    return {"timestamp": "2026-02-23T11:41:38.901Z", "type": "response_item", "payload": payload}


def test_rollout_pairs_calls_with_outputs_and_never_reads_the_output() -> None:
    lines = [
        {"timestamp": "t", "type": "session_meta", "payload": {"cwd": "/redacted"}},
        _ri(
            {
                "type": "function_call",
                "name": "exec_command",
                "arguments": json.dumps({"cmd": "cat a.md", "workdir": "/w"}),
                "call_id": "c1",
            }
        ),
        _ri({"type": "function_call_output", "call_id": "c1", "output": "OUTPUT"}),
        _ri(
            {
                "type": "function_call",
                "name": "shell",
                "arguments": json.dumps({"command": ["bash", "-lc", "ls -la"]}),
                "call_id": "c2",
            }
        ),
        {"timestamp": "t", "type": "event_msg", "payload": {"type": "task_complete"}},
    ]
    items, decoder = _decode(lines)
    assert [(i.item_type, i.status, dict(i.fields)) for i in items] == [
        ("commandExecution", "completed", {"command": "cat a.md"}),
        ("commandExecution", "incomplete", {"command": "bash -lc 'ls -la'"}),
    ]
    assert decoder.completed is True
    assert "OUTPUT" not in json.dumps([dict(i.fields) for i in items])


def test_rollout_maps_apply_patch_view_image_mcp_and_others() -> None:
    patch = (
        "*** Begin Patch\n*** Add File: game/main.js\n+SECRET-LINE\n"
        "*** Update File: a.md\n*** Move to: b.md\n@@\n-x\n+y\n"
        "*** Delete File: old.md\n*** End Patch"
    )
    lines = [
        _ri({"type": "custom_tool_call", "name": "apply_patch", "input": patch, "call_id": "p"}),
        _ri({"type": "custom_tool_call_output", "call_id": "p", "output": "ok"}),
        _ri(
            {
                "type": "function_call",
                "name": "view_image",
                "arguments": '{"path": "i.png"}',
                "call_id": "v",
            }
        ),
        _ri({"type": "function_call_output", "call_id": "v", "output": "..."}),
        _ri(
            {
                "type": "function_call",
                "name": "mcp__agc_tools__agc_write_file",
                "arguments": '{"path": "game/index.html", "content": "C"}',
                "call_id": "m",
            }
        ),
        _ri({"type": "function_call_output", "call_id": "m", "output": "..."}),
        _ri(
            {
                "type": "function_call",
                "name": "[REDACTED_NAME len=4]",
                "arguments": "[REDACTED]",
                "call_id": "r",
            }
        ),
        _ri({"type": "function_call_output", "call_id": "r", "output": "..."}),
        _ri(
            {
                "type": "web_search_call",
                "status": "completed",
                "action": {"type": "search", "query": "q"},
            }
        ),
        _ri(
            {
                "type": "local_shell_call",
                "call_id": "l",
                "status": "completed",
                "action": {"type": "exec", "command": ["ls"]},
            }
        ),
        _ri({"type": "function_call_output", "call_id": "l", "output": "..."}),
    ]
    items, _ = _decode(lines)
    assert [i.item_type for i in items] == [
        "fileChange",
        "imageView",
        "mcpToolCall",
        "functionCall",
        "webSearch",
        "commandExecution",
    ]
    assert items[0].fields["changes"] == [
        {"path": "game/main.js", "kind": "add"},
        {"path": "a.md", "kind": "update", "movePath": "b.md"},
        {"path": "old.md", "kind": "delete"},
    ]
    assert items[1].fields == {"path": "i.png"}
    assert items[2].fields["server"] == "agc_tools"
    assert items[2].fields["tool"] == "agc_write_file"
    assert items[3].fields == {"name": "[REDACTED_NAME len=4]"}
    assert items[4].fields == {"query": "q"}
    assert items[5].fields == {"command": "ls"}
    assert "SECRET-LINE" not in json.dumps([dict(i.fields) for i in items])


def test_rollout_turn_aborted_is_not_completed() -> None:
    _, decoder = _decode(
        [{"timestamp": "t", "type": "event_msg", "payload": {"type": "turn_aborted"}}]
    )
    assert decoder.completed is False


# -- detection and tolerance -------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ({"method": "item/completed", "params": {}}, "app-server"),
        ({"id": 1, "result": {}}, "app-server"),
        ({"type": "item.completed", "item": {}}, "exec"),
        ({"type": "error", "message": "x"}, "exec"),
        ({"type": "response_item", "payload": {}}, "rollout"),
        ({"type": "something"}, None),
        ({}, None),
    ],
)
def test_detect(message: dict[str, Any], expected: str | None) -> None:
    assert detect(message) == expected


def test_bad_lines_are_counted_never_fatal() -> None:
    items, decoder = _decode(
        ["not json", "[1,2]", "", '{"type":"x"}', json.dumps(command("c1", "ls")), "\xff"]
    )
    assert len(items) == 1
    assert decoder.stats.invalid_lines == 4
    assert decoder.stats.ignored_lines == 1


def test_fixed_format_ignores_other_inputs() -> None:
    lines = [
        command("c1", "ls"),
        {"type": "item.completed", "item": {"id": "e", "type": "web_search"}},
    ]
    items, decoder = _decode(lines, "exec")
    assert [i.item_id for i in items] == ["e"]
    assert decoder.stats.ignored_lines == 1


def test_unknown_format_name_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="input format 'xml'") as caught:
        EventDecoder("xml")  # type: ignore[arg-type]
    assert caught.value.exit_code == ExitCode.USAGE


def test_camel_case() -> None:
    assert camel_case("command_execution") == "commandExecution"
    assert camel_case("mcpToolCall") == "mcpToolCall"


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=10,
)


@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    st.sampled_from(
        [
            "commandExecution",
            "mcpToolCall",
            "fileChange",
            "imageView",
            "webSearch",
            "dynamicToolCall",
            "x",
        ]
    ),
    st.dictionaries(
        st.sampled_from(
            [
                "id",
                "command",
                "commandActions",
                "arguments",
                "changes",
                "path",
                "query",
                "tool",
                "server",
                "status",
                "durationMs",
                "exitCode",
            ]
        ),
        JSON,
    ),
)
def test_property_any_item_shape_decodes_without_error(kind: str, fields: dict[str, Any]) -> None:
    items = list(decode_lines([json.dumps(completed({**fields, "type": kind}))]))
    assert len(items) == 1
    assert items[0].item_type == kind


@pytest.mark.parametrize(
    "line",
    [
        {"type": "response_item", "payload": {"type": ["function_call"]}},
        {"type": "response_item", "payload": {"type": "function_call", "name": {"a": 1}}},
        {"type": "response_item", "payload": {"type": "function_call", "name": ["shell"]}},
        {"type": "response_item", "payload": {"type": "function_call_output", "call_id": []}},
        {"type": "event_msg", "payload": {"type": ["task_complete"]}},
        {"method": "turn/completed", "params": {"turn": {"status": ["completed"]}}},
        {"method": "turn/completed", "params": {"turn": {"status": {"x": 1}}}},
    ],
)
def test_lines_of_unexpected_shape_are_never_fatal(line: dict[str, Any]) -> None:
    # docs/ledger.md "Inputs": nothing in the input is fatal (a value of the wrong JSON
    # type where a word is expected, e.g. a list as "type", must not raise).
    items, decoder = _decode([line, command("c1", "ls")])
    assert [i.item_id for i in items][-1] == "c1"
    assert decoder.stats.lines == 2


@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    st.sampled_from(["response_item", "event_msg"]),
    st.dictionaries(st.sampled_from(["type", "name", "call_id", "arguments", "status"]), JSON),
    JSON,
)
def test_property_any_rollout_or_turn_line_decodes_without_error(
    line_type: str, payload: dict[str, Any], status: Any
) -> None:
    lines = [
        {"type": line_type, "payload": payload},
        {"method": "turn/completed", "params": {"turn": {"status": status}}},
    ]
    _decode(lines)
