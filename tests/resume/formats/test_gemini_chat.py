"""Gemini CLI session files: read as the client replays them, checked, repaired, written back.

``client_contents`` below is an independent model of what Gemini CLI 0.61 sends after
``gemini --resume`` (its ``loadConversationRecord`` replay and
``convertSessionToClientHistory``); the properties judge agc's repairs by it, with the
Gemini API's rule: the turn after a function call turn holds exactly one
``functionResponse`` part per ``functionCall`` part.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agc.cli.app import main
from agc.errors import InputError
from agc.resume import (
    Strategy,
    check_loaded,
    load_history,
    next_step,
    repair_loaded,
    scan_session,
)
from tests.conftest import examples

REACHES_INSIDE = {"agc.resume._snapshot": "the limit of whole reads, made small"}

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "hooks" / "gemini" / "session-file.jsonl"
GEMINI_COUNT = "number of function response parts is equal to the number of function call parts"


def client_contents(data: bytes) -> list[dict[str, Any]]:
    """The ``contents`` Gemini CLI 0.61 builds from a session file when it resumes it."""
    messages: dict[str, dict[str, Any]] = {}
    for line in data.decode().splitlines():
        if not line.strip():
            continue
        record = json.loads(line)
        if isinstance(record.get("$rewindTo"), str):
            ids = list(messages)
            if record["$rewindTo"] in ids:
                for gone in ids[ids.index(record["$rewindTo"]) :]:
                    del messages[gone]
            else:
                messages.clear()
        elif isinstance(record.get("id"), str):
            messages[record["id"]] = record
        elif isinstance(record.get("$set"), dict) and isinstance(
            record["$set"].get("messages"), list
        ):
            messages = {m["id"]: m for m in record["$set"]["messages"]}
    contents: list[dict[str, Any]] = []
    for message in messages.values():
        parts = message.get("content")
        parts = [{"text": parts}] if isinstance(parts, str) else list(parts or [])
        if message["type"] == "user":
            text = "".join(
                p.get("text", "") or ("[fr]" if "functionResponse" in p else "") for p in parts
            ).strip()
            if text and not text.startswith(("/", "?", "<session_context>", "<hook_context>")):
                contents.append({"role": "user", "parts": parts})
        elif message["type"] == "gemini":
            calls = message.get("toolCalls") or []
            model = parts + [{"functionCall": {"id": c["id"], "name": c["name"]}} for c in calls]
            if model:
                contents.append({"role": "model", "parts": model})
                answers = [p for c in calls if c.get("result") for p in c["result"]]
                if answers:
                    contents.append({"role": "user", "parts": answers})
    return contents


def api_accepts(contents: list[dict[str, Any]]) -> bool:
    """The Gemini API's pairing rule, consecutive user turns read as one turn."""
    for index, turn in enumerate(contents):
        calls = [p["functionCall"]["id"] for p in turn["parts"] if "functionCall" in p]
        following: list[str] = []
        position = index + 1
        while position < len(contents) and contents[position]["role"] == "user":
            following += [
                p["functionResponse"]["id"]
                for p in contents[position]["parts"]
                if "functionResponse" in p
            ]
            position += 1
        if turn["role"] == "model" and sorted(calls) != sorted(following):
            return False
        if (
            turn["role"] == "user"
            and following
            and index
            and contents[index - 1]["role"] != "model"
        ):
            return False
    return True


def test_real_session_file_is_detected_and_reads_as_the_client_replays_it() -> None:
    history = load_history(REAL.read_bytes(), source=REAL.name)
    assert history.format == "gemini-chat"
    assert history.session_id == "00000000-0000-4000-8000-000000000001"
    assert [m.role for m in history.messages] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
        "assistant",
    ]
    # each completed result twice: in toolCalls[].result and as a user message
    assert [len(m.results()) for m in history.messages if m.role == "user"] == [0, 2, 2]


def test_real_session_file_sends_each_response_twice_and_check_says_so() -> None:
    data = REAL.read_bytes()
    assert not api_accepts(client_contents(data))  # the client's own file, resumed as is
    report = check_loaded(load_history(data, source=REAL.name))
    assert [f.code for f in report.findings] == ["duplicate-tool-result"] * 2
    assert all(GEMINI_COUNT in f.message for f in report.findings)


@pytest.mark.parametrize("strategy", ["strip", "synthesize"])
def test_real_session_file_repaired_keeps_each_result_once(strategy: Strategy) -> None:
    data = REAL.read_bytes()
    result = repair_loaded(load_history(data, source=REAL.name), strategy=strategy)
    assert result.report.after.valid
    contents = client_contents(result.data)
    assert api_accepts(contents)
    outputs = [
        p["functionResponse"]["response"]["output"]
        for turn in contents
        for p in turn["parts"]
        if "functionResponse" in p
    ]
    assert len(outputs) == 2
    assert "agc-hook-probe" in outputs[0]
    assert "agc-hook-fail" in outputs[1]
    kept = set(result.data.decode().splitlines())
    dropped = [line for line in data.decode().splitlines() if line not in kept]
    assert len(dropped) == 2  # the two duplicate user messages, nothing else
    assert all('"type": "user"' in line and "functionResponse" in line for line in dropped)


def _session(plan: list[str], *, duplicate: bool) -> bytes:
    """A session as Gemini CLI 0.61 writes one: header, a prompt, then per step a model
    message written first bare and again with its toolCalls (``answered``: with its
    result; ``in-flight``: killed while the call ran; ``text``: a plain answer), the
    client's copy of each result as a user message when ``duplicate``."""
    lines: list[dict[str, Any]] = [
        {"sessionId": "sess-1234abcd", "projectHash": "h", "startTime": "2026-01-02T03:04:05Z"},
        {"id": "p", "timestamp": "t", "type": "user", "content": [{"text": "go"}]},
    ]
    for number, step in enumerate(plan):
        mid = f"m{number}"
        base = {"id": mid, "timestamp": "t", "type": "gemini", "content": ""}
        lines.append(dict(base))
        lines.append({"$set": {"lastUpdated": "t"}})
        if step == "text":
            lines.append({**base, "content": "done"})
            continue
        if step == "killed":  # the client writes toolCalls only once the calls finish
            continue
        calls = [f"c{number}a", f"c{number}b"]
        entries = []
        for call in calls:
            entry: dict[str, Any] = {
                "id": call,
                "name": "run_shell_command",
                "args": {"command": "ls"},
            }
            if step == "answered" or (step == "half" and call.endswith("a")):
                response = {"id": call, "name": "run_shell_command", "response": {"output": call}}
                entry["result"] = [{"functionResponse": response}]
                entry["status"] = "success"
            else:
                entry["status"] = "executing"
            entries.append(entry)
        lines.append({**base, "toolCalls": entries})
        answered = [e["result"][0] for e in entries if "result" in e]
        if duplicate and answered:
            lines.append(
                {"id": f"r{number}", "timestamp": "t", "type": "user", "content": answered}
            )
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


@settings(max_examples=examples(60), deadline=None)
@given(
    plan=st.lists(st.sampled_from(["answered", "in-flight", "half", "text", "killed"]), max_size=6),
    duplicate=st.booleans(),
    strategy=st.sampled_from(["strip", "synthesize"]),
)
def test_repair_gives_a_history_the_client_sends_and_the_api_accepts(
    plan: list[str], duplicate: bool, strategy: Strategy
) -> None:
    """Any session of answered, killed and half-answered calls, with or without the
    client's duplicate copies: check finds a problem exactly when the client's request
    would be refused, and after either repair the client's request is valid and keeps
    every completed result exactly once."""
    data = _session(plan, duplicate=duplicate)
    history = load_history(data, source="session-x.jsonl")
    assert history.format == "gemini-chat"
    assert check_loaded(history).valid == api_accepts(client_contents(data))
    result = repair_loaded(history, strategy=strategy)
    assert result.report.after.valid
    contents = client_contents(result.data)
    assert api_accepts(contents)
    outputs = [
        p["functionResponse"]["response"].get("output")
        for turn in contents
        for p in turn["parts"]
        if "functionResponse" in p
    ]
    completed = [
        f"c{n}{s}"
        for n, step in enumerate(plan)
        for s in "ab"
        if step == "answered" or (step == "half" and s == "a")
    ]
    if strategy == "synthesize":
        assert [o for o in outputs if o is not None] == completed
    else:
        assert set(completed) - {f"c{n}a" for n, s in enumerate(plan) if s == "half"} <= set(
            outputs
        )
    again = load_history(result.data, source="session-x.jsonl")
    assert check_loaded(again).valid


def test_in_flight_call_is_unanswered_and_synthesize_answers_it_in_its_entry() -> None:
    data = _session(["answered", "in-flight"], duplicate=False)
    report = check_loaded(load_history(data, source="s.jsonl"))
    assert [(f.code, f.call_id) for f in report.findings] == [
        ("tool-call-unanswered", "c1a"),
        ("tool-call-unanswered", "c1b"),
    ]
    result = repair_loaded(load_history(data, source="s.jsonl"), strategy="synthesize")
    last = json.loads(result.data.decode().splitlines()[-1])
    assert [e["status"] for e in last["toolCalls"]] == ["error", "error"]
    assert [e["result"][0]["functionResponse"]["id"] for e in last["toolCalls"]] == ["c1a", "c1b"]
    stripped = repair_loaded(load_history(data, source="s.jsonl"), strategy="strip")
    last = json.loads(stripped.data.decode().splitlines()[-1])
    assert last["toolCalls"] == []


def test_a_repeat_named_by_a_rewind_is_emptied_not_removed() -> None:
    """A ``$rewindTo`` naming a missing id makes the client drop every message, so the
    repeated result a rewind names stays as a user message without parts (which the
    client does not send) instead of going."""
    data = _session(["answered", "answered"], duplicate=True)
    again = next(line for line in data.splitlines() if b'"id": "r1"' in line)
    data += (json.dumps({"$rewindTo": "r1"}) + "\n").encode() + again + b"\n"
    result = repair_loaded(load_history(data, source="s.jsonl"), strategy="strip")
    kept = [json.loads(line) for line in result.data.decode().splitlines()]
    # the one before the rewind is replaced on replay; the last one is emptied
    assert [r.get("content") == [] for r in kept if r.get("id") == "r1"] == [False, True]
    assert {"$rewindTo": "r1"} in kept
    assert not [r for r in kept if r.get("id") == "r0"]
    contents = client_contents(result.data)
    assert api_accepts(contents)
    assert [turn["role"] for turn in contents] == ["user", "model", "user", "model", "user"]


def test_a_model_message_left_without_parts_is_named_as_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Killed while a call ran, Gemini CLI leaves the model message bare (its toolCalls
    come only when the calls finish): the client sends nothing of it, so the history is
    valid, but the check says a call may have run unrecorded."""
    data = _session(["answered", "killed"], duplicate=False)
    report = check_loaded(load_history(data, source="s.jsonl"))
    assert report.valid
    assert [(f.code, f.severity, f.record) for f in report.findings] == [
        ("unrecorded-call", "warning", 5)
    ]
    answered = check_loaded(load_history(_session(["answered"], duplicate=False), source="s"))
    assert answered.findings == ()
    source = tmp_path / "session.jsonl"
    source.write_bytes(data)
    assert main(["resume", str(source), "--check"]) == 0
    assert "line 6: unrecorded-call (warning): a model message recorded without" in (
        capsys.readouterr().out
    )


def test_next_step_names_the_clients_file_and_resume_command(tmp_path: Path) -> None:
    project = tmp_path / ".gemini" / "tmp" / "my-app"
    (project / "chats").mkdir(parents=True)
    (project / ".project_root").write_text("/work/my app\n")
    header = {
        "sessionId": "abcdef12-0000-4000-8000-000000000009",
        "projectHash": hashlib.sha256(b"/work/my app").hexdigest(),
        "startTime": "2026-12-06T20:59:16.300Z",
    }
    data = (json.dumps(header) + "\n").encode()
    step = next_step(load_history(data, source="x.jsonl"), {"GEMINI_CLI_HOME": str(tmp_path)})
    assert step is not None
    assert step.client == "gemini"
    assert step.path == project / "chats" / "session-2026-12-06T20-59-abcdef12.jsonl"
    assert not step.exists
    assert step.commands == (
        "cd '/work/my app' && gemini --resume abcdef12-0000-4000-8000-000000000009",
    )
    step.path.write_bytes(data)
    found = next_step(load_history(data, source="x.jsonl"), {"GEMINI_CLI_HOME": str(tmp_path)})
    assert found is not None
    assert found.exists
    assert found.path == step.path


def test_agc_resume_file_checks_repairs_and_names_the_next_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``agc resume FILE`` on a session where the client keeps it: check exits 1 naming
    the duplicate; the repair is valid and says where the client reads it and how to
    resume it."""
    chats = tmp_path / ".gemini" / "tmp" / "project" / "chats"
    chats.mkdir(parents=True)
    (chats.parent / ".project_root").write_text("/home/user/project")
    source = chats / "session-2026-12-06T20-59-00000000.jsonl"
    source.write_bytes(REAL.read_bytes())
    monkeypatch.setenv("GEMINI_CLI_HOME", str(tmp_path))
    assert main(["resume", str(source), "--check", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    findings = report.get("report", report)["findings"]
    assert [f["code"] for f in findings] == ["duplicate-tool-result"] * 2
    out = tmp_path / "fixed.jsonl"
    assert main(["resume", str(source), "--strategy", "synthesize", "--out", str(out)]) == 0
    said = capsys.readouterr().err
    assert str(source) in said
    assert "gemini --resume 00000000-0000-4000-8000-000000000001" in said
    assert api_accepts(client_contents(out.read_bytes()))


def test_a_session_file_beyond_the_limit_of_whole_reads_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Read whole as its client reads it, a Gemini CLI session file larger than the limit
    of whole reads is refused with a message naming it, not read into memory."""
    import agc.resume._snapshot as snapshot  # noqa: PLC0415 - the limit, patched

    source = tmp_path / "session.jsonl"
    source.write_bytes(REAL.read_bytes())
    history = scan_session(source, source="session.jsonl", format=None)
    assert history.format == "gemini-chat"
    monkeypatch.setattr(snapshot, "MAX_SNAPSHOT_BYTES", len(REAL.read_bytes()) - 1)
    with pytest.raises(InputError, match=r"session\.jsonl is a Gemini CLI session file larger"):
        scan_session(source, source="session.jsonl", format=None)
