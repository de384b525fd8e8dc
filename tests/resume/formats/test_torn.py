"""A torn last line (a write cut off by a crash): found, described, removed on repair."""

from __future__ import annotations

import json
from collections.abc import Mapping

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agc.errors import InputError
from agc.resume import Strategy, check_loaded, idempotency_key, load_history, repair_loaded
from agc.resume._formats.torn import describe_torn, torn_line
from tests.conftest import examples

REACHES_INSIDE = {
    "agc.resume._formats.torn": "torn last-line detection and its description",
}


def _rollout(*payloads: Mapping[str, object]) -> list[str]:
    lines = [{"timestamp": "t", "ordinal": 0, "type": "session_meta", "payload": {"id": "s"}}]
    for payload in payloads:
        lines.append(
            {"timestamp": "t", "ordinal": len(lines), "type": "response_item", "payload": payload}
        )
    return [json.dumps(line, separators=(",", ":")) for line in lines]


USER = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]}
CALL = {"type": "function_call", "name": "exec_command", "arguments": "{}", "call_id": "call_9"}
OUTPUT = {"type": "function_call_output", "call_id": "call_9", "output": "done"}


def _claude_lines() -> list[str]:
    records = [
        {
            "parentUuid": None,
            "type": "user",
            "uuid": "u1",
            "sessionId": "s",
            "message": {"role": "user", "content": "go"},
        },
        {
            "parentUuid": "u1",
            "type": "assistant",
            "uuid": "a1",
            "sessionId": "s",
            "message": {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "toolu_9",
                        "name": "Bash",
                        "input": {"command": "sleep 9"},
                    }
                ],
            },
        },
    ]
    return [json.dumps(record, separators=(",", ":")) for record in records]


def test_torn_call_line_is_a_finding_naming_the_lost_call() -> None:
    lines = _rollout(USER, CALL)
    data = ("\n".join(lines[:-1]) + "\n" + lines[-1][:-2]).encode()
    history = load_history(data, source="r.jsonl")
    assert history.torn == 2
    report = check_loaded(history)
    assert not report.valid
    (finding,) = report.findings
    assert (finding.code, finding.record, finding.call_id) == ("torn-tail", 2, "call_9")
    assert "line 3" in finding.message
    assert "function_call (call call_9)" in finding.message


@pytest.mark.parametrize("strategy", ["strip", "synthesize"])
def test_repair_drops_the_torn_line_and_says_so(strategy: Strategy) -> None:
    lines = _rollout(USER, CALL, OUTPUT)
    data = ("\n".join(lines) + "\n" + lines[2][:30]).encode()
    result = repair_loaded(load_history(data, source="r.jsonl"), strategy=strategy)
    assert result.data == ("\n".join(lines) + "\n").encode()
    (change,) = result.report.changes
    assert change.action == "dropped-torn-line"
    assert change.record == 4
    assert result.report.before.findings[0].code == "torn-tail"
    assert result.report.after.valid


def test_torn_claude_tool_use_is_named() -> None:
    lines = _claude_lines()
    cut = lines[-1].index("toolu_9") + len("toolu_9") + 5
    data = (lines[0] + "\n" + lines[1][:cut]).encode()
    report = check_loaded(load_history(data, source="s.jsonl"))
    assert [(f.code, f.call_id) for f in report.findings] == [("torn-tail", "toolu_9")]
    result = repair_loaded(load_history(data, source="s.jsonl"), strategy="synthesize")
    assert result.data == (lines[0] + "\n").encode()


def test_a_whole_last_line_without_a_line_break_is_not_torn() -> None:
    lines = _rollout(USER, CALL, OUTPUT)
    data = "\n".join(lines).encode()
    history = load_history(data, source="r.jsonl")
    assert history.torn is None
    assert check_loaded(history).valid
    result = repair_loaded(history)
    assert result.data == data + b"\n"  # the output always ends with a line break


def test_fragment_descriptions() -> None:
    assert describe_torn(
        '{"type":"response_item","payload":{"type":"function_call_output","call_id":"c1","out'
    ).describe() == ("a function_call_output (the result of call c1)")
    assert (
        describe_torn(
            '{"parentUuid":"a","type":"user","message":{"role":"user","content":'
            '[{"tool_use_id":"toolu_2","type":"tool_res'
        ).result_id
        == "toolu_2"
    )
    assert describe_torn("\x00\x01garbage").call_id is None
    assert torn_line(["{}", "   "], final_newline=False) is None


@settings(max_examples=examples(80), deadline=None)
@given(data=st.data())
def test_any_cut_inside_the_last_line_is_found_and_repaired(data: st.DataObject) -> None:
    """Wherever a kill cuts the last line, check says torn-tail and repair gives back the
    lines before it, newline-terminated and valid."""
    lines = data.draw(st.sampled_from([_rollout(USER, CALL, OUTPUT, CALL), _claude_lines()]))
    last = lines[-1]
    cut = data.draw(st.integers(min_value=1, max_value=len(last) - 1))
    torn = ("\n".join(lines[:-1]) + "\n" + last[:cut]).encode()
    history = load_history(torn, source="x.jsonl")
    report = check_loaded(history)
    assert report.findings[-1].code == "torn-tail"
    strategy: Strategy = data.draw(st.sampled_from(["strip", "synthesize"]))
    result = repair_loaded(history, strategy=strategy)
    assert result.report.changes[-1].action == "dropped-torn-line"
    assert result.data.endswith(b"\n")
    assert result.report.after.valid
    kept = load_history(result.data, source="out")
    assert kept.torn is None


_WIDE_CALL = {
    "type": "function_call",
    "call_id": "call_9",
    "name": "exec_command",
    "arguments": json.dumps({"cmd": "echo 你好 — ✓ 🚀"}, ensure_ascii=False),
}


@settings(max_examples=examples(80), deadline=None)
@given(data=st.data())
def test_a_cut_inside_a_multibyte_character_is_a_torn_tail(data: st.DataObject) -> None:
    """Codex and Claude Code write UTF-8 as is: a kill may cut the last line in the middle
    of a character. That is a torn tail like any other cut (found, dropped on repair), not
    a file that is not UTF-8 (exit 2 for the whole session)."""
    lines = _rollout(USER)
    head = ("\n".join(lines) + "\n").encode()
    record = {"timestamp": "t", "ordinal": 2, "type": "response_item", "payload": _WIDE_CALL}
    last = json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode()
    inside = [i for i in range(1, len(last)) if last[i] & 0xC0 == 0x80]  # continuation bytes
    cut = data.draw(st.sampled_from(inside))
    history = load_history(head + last[:cut], source="x.jsonl")
    report = check_loaded(history)
    assert [f.code for f in report.findings] == ["torn-tail"]
    assert report.findings[0].call_id == "call_9"
    result = repair_loaded(history, strategy=data.draw(st.sampled_from(["strip", "synthesize"])))
    assert result.data == head
    assert result.report.changes[-1].action == "dropped-torn-line"


@pytest.mark.parametrize(
    "data",
    [b'{"a":1}\n{"b":"\xff"}', b'{"a":1}\n{"b":"\xe4\xbd"}\n', b'{"a":"\xe4\xbd"}\n{"b":1}'],
    ids=["bad-byte-in-last-line", "cut-character-then-line-break", "cut-character-not-last"],
)
def test_invalid_utf8_that_is_not_a_cut_tail_is_still_refused(data: bytes) -> None:
    with pytest.raises(InputError, match="is not UTF-8"):
        load_history(data, source="x.jsonl")


def _gemini_lines() -> list[str]:
    """A Gemini CLI session whose model message was recorded when it started (no parts)
    and again with its finished call (``toolCalls``, the result inside)."""
    call = {
        "id": "run_shell_command__run_shell_command_1_0",
        "name": "run_shell_command",
        "args": {"command": "sleep 9"},
        "result": [
            {
                "functionResponse": {
                    "id": "run_shell_command__run_shell_command_1_0",
                    "name": "run_shell_command",
                    "response": {"output": "done"},
                }
            }
        ],
        "status": "success",
    }
    records = [
        {"sessionId": "s", "projectHash": "p", "startTime": "t", "kind": "main"},
        {"id": "u1", "timestamp": "t", "type": "user", "content": [{"text": "go"}]},
        {"id": "m1", "timestamp": "t", "type": "gemini", "content": "", "model": "g"},
        {"id": "m1", "timestamp": "t", "type": "gemini", "content": "", "toolCalls": [call]},
        {"id": "u2", "timestamp": "t", "type": "user", "content": call["result"]},
    ]
    return [json.dumps(record, separators=(",", ":")) for record in records]


@pytest.mark.parametrize("strategy", ["strip", "synthesize"])
def test_torn_gemini_record_of_a_finished_call_is_named(strategy: Strategy) -> None:
    """The Gemini CLI writes a call's ``toolCalls`` entry once the call has finished: a
    kill mid-write loses a call that ran, and the finding and the repair name it."""
    lines = _gemini_lines()[:4]
    call_id = "run_shell_command__run_shell_command_1_0"
    cut = lines[-1].index(call_id) + len(call_id) + 20
    head = "\n".join(lines[:-1]) + "\n"
    history = load_history((head + lines[-1][:cut]).encode(), source="session.jsonl")
    assert history.format == "gemini-chat"
    torn = [f for f in check_loaded(history).findings if f.code == "torn-tail"]
    assert [(f.record, f.call_id) for f in torn] == [(3, call_id)]
    assert f"a gemini message with toolCalls (call {call_id})" in torn[0].message
    result = repair_loaded(history, strategy=strategy)
    assert result.data == head.encode()
    (change,) = [c for c in result.report.changes if c.action == "dropped-torn-line"]
    assert change.call_id == call_id
    assert change.idempotency_key == idempotency_key(call_id, session="s")


def test_gemini_fragment_descriptions() -> None:
    lines = _gemini_lines()
    call = describe_torn(lines[3][: lines[3].index('"args"')])
    assert (call.what, call.call_id, call.tool_name) == (
        "a gemini message with toolCalls",
        "run_shell_command__run_shell_command_1_0",
        "run_shell_command",  # the entry's own name, whole before the cut
    )
    # cut inside the entry's name: no name is made up from what is left of it
    assert describe_torn(lines[3][: lines[3].index('"run_shell_command"') + 5]).tool_name is None
    response = describe_torn(lines[4][: lines[4].index('"response"')])
    assert (response.what, response.result_id) == (
        "a user message with a functionResponse",
        "run_shell_command__run_shell_command_1_0",
    )
    # a model message cut before its toolCalls: nothing to name
    assert describe_torn(lines[3][: lines[3].index('"toolCalls"')]).call_id is None
