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
from hypothesis import example, given, settings
from hypothesis import strategies as st

from agc.cli.app import main
from agc.errors import AgcError
from agc.resume import (
    History,
    LineSequence,
    Strategy,
    check_loaded,
    load_history,
    next_step,
    repair_loaded,
    repair_session,
    repair_streamed,
    scan_session,
)
from agc.resume._formats import gemini_chat
from agc.resume._formats.model import RawRef
from tests.conftest import examples

REACHES_INSIDE = {
    "agc.resume._snapshot": "the limit of whole reads, made small",
    "agc.resume._formats": "the place of a part in the file (RawRef); whether a user "
    "message is sent, told from its first part, against its whole text",
}

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "hooks" / "gemini" / "session-file.jsonl"
GEMINI_COUNT = "number of function response parts is equal to the number of function call parts"


def replayed(data: bytes) -> dict[str, dict[str, Any]]:
    """The messages Gemini CLI 0.61 replays a session file into, by id, in order."""
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
    return messages


def client_contents(data: bytes) -> list[dict[str, Any]]:
    """The ``contents`` Gemini CLI 0.61 builds from a session file when it resumes it."""
    messages = replayed(data)
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


def test_real_session_file_duplicates_are_told_at_the_second_response_with_the_tools_name() -> None:
    # Each result is on a model line's toolCalls (kept) and again on the user line after
    # it (removed): the finding and the change both name the user line, and the call's
    # tool name is known.
    data = REAL.read_bytes()
    lines = data.decode().splitlines()
    second = [
        number
        for number, line in enumerate(lines)
        if '"type": "user"' in line and "functionResponse" in line
    ]
    assert len(second) == 2
    report = check_loaded(load_history(data, source=REAL.name))
    assert [f.record for f in report.findings] == second
    result = repair_loaded(load_history(data, source=REAL.name), strategy="strip")
    changes = result.report.changes
    assert [(c.action, c.record) for c in changes] == [
        ("dropped-duplicate-result", n) for n in second
    ]
    assert [c.tool_name for c in changes] == ["run_shell_command"] * 2


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


def _with_log_records(data: bytes, edits: list[tuple[str, int, int]]) -> bytes:
    """``data`` with ``$rewindTo`` records (to a message the log holds there, or to a
    missing id), ``$set`` records holding every replayed message and a message record
    written again (``again``: a copy of an earlier one), inserted between its lines
    (never before the header)."""
    lines = data.splitlines()
    for kind, at, pick in edits:
        position = 1 + at % len(lines)
        head = b"".join(line + b"\n" for line in lines[:position])
        ids = list(replayed(head))
        if kind == "again":
            earlier = [line for line in lines[:position] if b'"id": ' in line[:8]]
            if earlier:
                lines.insert(position, earlier[pick % len(earlier)])
            continue
        if kind == "rewind":
            target = ids[pick % len(ids)] if ids and pick % 4 else "no-such-message"
            record: dict[str, Any] = {"$rewindTo": target}
        else:
            record = {"$set": {"messages": list(replayed(head).values()), "lastUpdated": "t"}}
        lines.insert(position, json.dumps(record).encode())
    return b"".join(line + b"\n" for line in lines)


def _repaired(
    history: History, strategy: Strategy, folder: Path, name: str
) -> tuple[bytes, dict[str, Any]] | str:
    """The repair of a history read line by line from a file, written line by line as
    agc resume FILE --out writes it (or the error's code)."""
    out = folder / name
    try:
        with out.open("wb") as sink:
            report = repair_streamed(
                history,
                sink,
                lambda: scan_session(out, source="out", format="gemini-chat"),
                strategy=strategy,
            )
    except AgcError as exc:
        return exc.code
    return out.read_bytes(), report.to_dict()


@settings(max_examples=examples(60), deadline=None)
@given(
    plan=st.lists(st.sampled_from(["answered", "in-flight", "half", "text", "killed"]), max_size=5),
    duplicate=st.booleans(),
    edits=st.lists(
        st.tuples(
            st.sampled_from(["rewind", "set", "again"]), st.integers(0, 99), st.integers(0, 99)
        ),
        max_size=3,
    ),
    strategy=st.sampled_from(["strip", "synthesize"]),
)
# the client's copy of a result written twice: the repair removes both records of it
@example(plan=["answered"], duplicate=True, edits=[("again", 5, 3)], strategy="strip")
def test_a_file_read_line_by_line_is_the_file_read_whole(
    plan: list[str],
    duplicate: bool,
    edits: list[tuple[str, int, int]],
    strategy: Strategy,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """With rewinds and ``$set`` records anywhere in the log, a session read line by line
    (holding only the replayed messages' view) checks as the same bytes read whole, and
    its repair, written line by line, is the bytes of the whole repair, valid for the
    client and the API."""
    data = _with_log_records(_session(plan, duplicate=duplicate), edits)
    folder = tmp_path_factory.mktemp("stream")
    source = folder / "session.jsonl"
    source.write_bytes(data)
    whole = load_history(data, source="session.jsonl")
    streamed = scan_session(source, source="session.jsonl", format=None)
    assert isinstance(streamed.records, LineSequence)  # read line by line, not whole
    assert streamed.format == whole.format == "gemini-chat"
    assert check_loaded(streamed).to_dict() == check_loaded(whole).to_dict()
    try:
        expected: tuple[bytes, dict[str, Any]] | str = (
            (done := repair_loaded(whole, strategy=strategy)).data,
            done.report.to_dict(),
        )
    except AgcError as exc:
        expected = exc.code
    assert _repaired(streamed, strategy, folder, "out.jsonl") == expected
    assert isinstance(expected, tuple), expected  # every such log is repaired
    assert api_accepts(client_contents(expected[0]))


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


def test_a_session_file_beyond_the_limit_of_whole_reads_is_read_line_by_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Gemini CLI session file is read in one forward pass, as the other session files
    are: the limit of whole reads does not apply, and the history holds each part as its
    place in the file (a :class:`RawRef`), not the parsed lines."""
    import agc.resume._snapshot as snapshot  # noqa: PLC0415 - the limit, patched

    source = tmp_path / "session.jsonl"
    source.write_bytes(REAL.read_bytes())
    monkeypatch.setattr(snapshot, "MAX_SNAPSHOT_BYTES", len(REAL.read_bytes()) - 1)
    history = scan_session(source, source="session.jsonl", format=None)
    assert history.format == "gemini-chat"
    assert isinstance(history.records, LineSequence)
    blocks = [block for message in history.messages for block in message.blocks]
    assert blocks
    assert all(type(block.native()) is RawRef for block in blocks)
    calls = [block for block in blocks if block.kind == "call"]
    assert calls
    assert all(type(call.held_arguments()) is RawRef for call in calls)
    assert calls[0].arguments["command"] == "echo agc-hook-probe"
    whole = load_history(REAL.read_bytes(), source="session.jsonl")
    assert check_loaded(history).to_dict() == check_loaded(whole).to_dict()


_TEXT = st.one_of(
    st.sampled_from(["", " ", "/x", "?", "<session_context>", "<hook_context>", "[x", "ok"]),
    st.text(max_size=6),
)
_NAMED = st.one_of(st.none(), st.fixed_dictionaries({"name": st.text(max_size=4)}))
_PART = st.one_of(
    _TEXT,
    st.fixed_dictionaries({"text": st.one_of(st.none(), st.integers(), _TEXT)}),
    st.fixed_dictionaries(
        {"functionResponse": _NAMED}, optional={"text": st.one_of(st.none(), _TEXT)}
    ),
    st.fixed_dictionaries({"functionCall": _NAMED}, optional={"text": st.one_of(st.none(), _TEXT)}),
    st.fixed_dictionaries({"thought": st.booleans()}),
    st.just({}),
    st.none(),
)


@settings(max_examples=examples(300))
@given(
    content=st.one_of(
        st.tuples(
            _PART.filter(lambda part: isinstance(part, dict)), st.lists(_PART, max_size=3)
        ).map(lambda drawn: [drawn[0], *drawn[1]]),
        st.lists(_PART, max_size=4),
        _PART,
    )
)
# a call or a result whose part also holds a text: the text is what the client reads
@example(content=[{"functionCall": {"name": "a"}, "text": ""}])
@example(content=[{"functionResponse": {"name": "a"}, "text": "/clear"}])
@example(content=[{"functionResponse": None}, {"text": "ok"}])
def test_whether_a_user_message_is_sent_is_told_as_from_its_whole_text(content: Any) -> None:
    """Whether the client sends a ``user`` message (its text, trimmed, not empty and not
    starting with an ignored prefix) is told from its first part when that part is a call
    or a result, and is then what its whole text tells."""
    text = gemini_chat._as_text(gemini_chat._parts(content)).strip()
    sent = bool(text) and not text.startswith(("/", "?", "<session_context>", "<hook_context>"))
    assert gemini_chat._user_turn(content) == sent


def _checked(path: Path, settle: int, keep: int | None) -> History:
    """A session file read line by line for a check, letting go of its messages."""
    return scan_session(
        path, source="session.jsonl", format=None, settle=settle, checked=True, keep=keep
    )


@settings(max_examples=examples(150), deadline=None)
@given(
    plan=st.lists(st.sampled_from(["answered", "in-flight", "half", "text", "killed"]), max_size=8),
    duplicate=st.booleans(),
    edits=st.lists(
        st.tuples(
            st.sampled_from(["rewind", "set", "again"]), st.integers(0, 99), st.integers(0, 99)
        ),
        max_size=2,
    ),
    settle=st.integers(min_value=1, max_value=4),
    keep=st.one_of(st.none(), st.integers(min_value=0, max_value=3)),
)
# let go of in parts, no record reaching back
@example(plan=["answered"] * 6, duplicate=True, edits=[], settle=1, keep=None)
@example(plan=["answered", "killed", "half"] * 2, duplicate=True, edits=[], settle=2, keep=1)
# a record written again, a rewind and a `$set` of every message after parts were let go of
@example(plan=["answered"] * 4, duplicate=True, edits=[("again", 30, 1)], settle=1, keep=None)
@example(plan=["answered"] * 4, duplicate=True, edits=[("rewind", 30, 1)], settle=1, keep=None)
@example(plan=["answered"] * 4, duplicate=False, edits=[("rewind", 30, 0)], settle=1, keep=None)
@example(plan=["answered"] * 4, duplicate=True, edits=[("set", 30, 0)], settle=1, keep=2)
def test_a_check_that_lets_go_of_messages_reports_as_the_whole_read(
    plan: list[str],
    duplicate: bool,
    edits: list[tuple[str, int, int]],
    settle: int,
    keep: int | None,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """A session checked in parts (its messages let go of as the file is read, a record
    that names an earlier message making it read whole) reports the findings of the
    whole read: all of them with ``keep=None``, else their counts and the first ``keep``
    (and the first of each code)."""
    data = _with_log_records(_session(plan, duplicate=duplicate), edits)
    source = tmp_path_factory.mktemp("parts") / "session.jsonl"
    source.write_bytes(data)
    expected = check_loaded(load_history(data, source="session.jsonl"))
    history = _checked(source, settle, keep)
    report = check_loaded(history, keep=keep)
    if keep is None:
        assert report.to_dict() == expected.to_dict()
        return
    assert report.code_counts() == expected.code_counts()
    assert report.total == len(expected.findings)
    assert report.valid == expected.valid
    assert (report.messages, report.calls, report.results) == (
        expected.messages,
        expected.calls,
        expected.results,
    )
    first = expected.findings[:keep]
    assert report.findings[:keep] == first
    # beyond the first ``keep``: only the first finding of each code not among them
    codes_seen = {finding.code for finding in first}
    firsts = []
    for finding in expected.findings[keep:]:
        if finding.code not in codes_seen:
            codes_seen.add(finding.code)
            firsts.append(finding)
    assert list(report.findings[keep:]) == firsts


def test_a_long_session_is_let_go_of_in_parts_and_its_report_holds_few_findings(
    tmp_path: Path,
) -> None:
    """A session where every call has a finding (each result recorded twice) is still let
    go of as it is read: what is held at the end is a few messages, and the report holds
    the first findings asked for beside the count of all of them."""
    plan = ["answered"] * 40
    source = tmp_path / "session.jsonl"
    source.write_bytes(_session(plan, duplicate=True))
    history = _checked(source, 8, 3)
    assert history.settled is not None
    assert history.settled.tallies is not None
    assert len(history.messages) <= 16  # held: at most two parts' worth
    assert history.settled.messages + len(history.messages) == 1 + 2 * len(plan)
    for tally in history.settled.tallies:
        assert len(tally.examples) <= 3 + len(tally.counts)
    report = check_loaded(history, keep=3)
    assert report.total == 2 * len(plan)  # each call's second response
    assert len(report.findings) == 3
    assert report.counts == {"duplicate-tool-result": 2 * len(plan)}
    whole = check_loaded(load_history(source.read_bytes(), source="s"), keep=3)
    assert whole.to_dict() == report.to_dict()


def test_the_text_report_counts_every_finding_and_prints_the_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "session.jsonl"
    source.write_bytes(_session(["answered"] * 30, duplicate=True))
    assert main(["resume", str(source), "--check", "--max-findings", "2"]) == 1
    out = capsys.readouterr().out
    assert "60 problem(s)" in out
    assert "        60  duplicate-tool-result" in out
    assert out.count(": duplicate-tool-result: ") == 2
    assert "… and 58 more problem(s)" in out


def _repaired_in_parts(
    source: Path, strategy: Strategy, settle: int, keep: int | None
) -> tuple[bytes, dict[str, Any], bool] | str:
    """The repair of a session file read in parts as agc resume FILE --out makes it
    (bytes, report, whether it was read in parts), or the error's code."""
    out = source.with_name("parts.jsonl")

    def read_back() -> History:
        return scan_session(out, source="out", format="gemini-chat", settle=settle, checked=True)

    try:
        with out.open("w+b") as sink:
            history, report = repair_session(
                source,
                sink,
                read_back,
                source="session.jsonl",
                strategy=strategy,
                keep=keep,
                settle=settle,
            )
            parted = report is not None
            if report is None:
                report = repair_streamed(history, sink, read_back, strategy=strategy)
    except AgcError as exc:
        return exc.code
    return out.read_bytes(), report.to_dict(), parted


@settings(max_examples=examples(150), deadline=None)
@given(
    plan=st.lists(st.sampled_from(["answered", "in-flight", "half", "text", "killed"]), max_size=8),
    duplicate=st.booleans(),
    edits=st.lists(
        st.tuples(
            st.sampled_from(["rewind", "set", "again"]), st.integers(0, 99), st.integers(0, 99)
        ),
        max_size=2,
    ),
    settle=st.integers(min_value=1, max_value=4),
    strategy=st.sampled_from(["strip", "synthesize"]),
)
@example(
    plan=["answered", "in-flight", "half", "text"] * 2,
    duplicate=True,
    edits=[],
    settle=1,
    strategy="synthesize",
)
@example(plan=["answered", "killed"] * 3, duplicate=True, edits=[], settle=2, strategy="strip")
# reaching back after parts were written: the output is written again from its start
@example(
    plan=["answered"] * 4, duplicate=True, edits=[("again", 30, 1)], settle=1, strategy="strip"
)
@example(
    plan=["answered"] * 4, duplicate=True, edits=[("rewind", 30, 1)], settle=1, strategy="strip"
)
@example(
    plan=["answered"] * 4, duplicate=True, edits=[("set", 30, 0)], settle=1, strategy="synthesize"
)
def test_a_repair_in_parts_writes_the_bytes_of_the_whole_repair(
    plan: list[str],
    duplicate: bool,
    edits: list[tuple[str, int, int]],
    settle: int,
    strategy: Strategy,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """A session repaired part by part as it is read (each part written once read, a
    record reaching back making it read whole and written again) writes the bytes of
    the repair of the whole file and reports the same findings and changes."""
    data = _with_log_records(_session(plan, duplicate=duplicate), edits)
    source = tmp_path_factory.mktemp("parts") / "session.jsonl"
    source.write_bytes(data)
    whole = load_history(data, source="session.jsonl")
    refused: str | None
    try:
        done = repair_loaded(whole, strategy=strategy)
    except AgcError as exc:
        refused = exc.code
    else:
        refused = None
    got = _repaired_in_parts(source, strategy, settle, None)
    if refused is not None:
        assert got == refused
        return
    assert not isinstance(got, str), got
    data_out, report, _ = got
    assert data_out == done.data
    assert report == done.report.to_dict()
    few = _repaired_in_parts(source, strategy, settle, 1)
    assert not isinstance(few, str), few
    assert few[0] == done.data
    counts: dict[str, int] = {}
    for change in done.report.changes:
        counts[change.action] = counts.get(change.action, 0) + 1
    assert few[1]["changes"][:1] == report["changes"][:1]
    assert {c["action"] for c in few[1]["changes"]} == set(counts)


def test_a_long_session_is_repaired_in_parts(tmp_path: Path) -> None:
    """A session where every call has a finding is repaired part by part: what the
    read holds at the end is a few messages, and the report the first changes asked
    for beside the counts of all."""
    plan = ["answered", "answered", "in-flight"] * 14
    source = tmp_path / "session.jsonl"
    source.write_bytes(_session(plan, duplicate=True))
    done = repair_loaded(load_history(source.read_bytes(), source="s"), strategy="synthesize")
    out = tmp_path / "out.jsonl"
    with out.open("w+b") as sink:
        history, report = repair_session(
            source,
            sink,
            lambda: scan_session(out, source="o", format="gemini-chat", settle=8, checked=True),
            source="session.jsonl",
            strategy="synthesize",
            keep=3,
            settle=8,
        )
    assert report is not None
    assert history.settled is not None
    assert len(history.messages) <= 16
    assert out.read_bytes() == done.data
    assert report.change_total == len(done.report.changes)
    assert report.action_counts() == done.report.action_counts()
    assert len(report.changes) <= 3 + len(report.action_counts())
    assert report.changes[:3] == done.report.changes[:3]


def test_a_session_whose_project_folder_is_not_found_says_why_there_is_no_next_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A repaired session whose Gemini CLI project folder is not under the client's home
    (another GEMINI_CLI_HOME, a removed folder): no path can be built, and both the
    human output and ``--json`` say so, naming the folder looked in."""
    home = tmp_path / "home"
    (home / ".gemini" / "tmp").mkdir(parents=True)
    monkeypatch.setenv("GEMINI_CLI_HOME", str(home))
    source = tmp_path / "session.jsonl"
    source.write_bytes(REAL.read_bytes())
    out = tmp_path / "fixed.jsonl"
    args = ["resume", str(source), "--strategy", "synthesize", "--out", str(out)]
    assert main(args) == 0
    said = capsys.readouterr().err
    (line,) = [line for line in said.splitlines() if line.startswith("next:")]
    assert line.startswith("next: no resume step: the Gemini CLI folder ")
    assert str(home / ".gemini" / "tmp") in line
    assert main([*args[:-1], str(tmp_path / "again.jsonl"), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["next_step"] is None
    assert "holds no file of session" in report["no_next_step"]
    # a step found (the session's file where the client keeps it): no reason
    chats = home / ".gemini" / "tmp" / "project" / "chats"
    chats.mkdir(parents=True)
    (chats / "session-2026-12-06T20-59-00000000.jsonl").write_bytes(REAL.read_bytes())
    assert main([*args[:-1], str(tmp_path / "third.jsonl"), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["next_step"] is not None
    assert report["no_next_step"] is None


@pytest.mark.parametrize("case", ["named", "registered", "taken", "unnamed"])
def test_a_session_away_from_its_folder_gets_the_folder_gemini_will_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    """A session file not under Gemini CLI's folder: its project directory is the
    workspace directory of its first message whose SHA-256 is the projectHash, and
    the folder is the name Gemini CLI 0.61 gives it (projects.json, else the slug of
    its last component): the step copies the repair there and resumes in the
    directory, as for Claude Code and Codex. When the directory is not known, or the
    slug belongs to another directory, no folder is named and the message says why."""
    root = str(tmp_path / "work" / "My App.v2")
    lines = [json.loads(line) for line in _session(["half"], duplicate=False).splitlines()]
    lines[0]["projectHash"] = hashlib.sha256(
        (root if case != "unnamed" else "/elsewhere").encode()
    ).hexdigest()
    lines[1]["content"] = [
        {
            "text": "<session_context>\nThe project's temporary directory is: /x/.gemini/tmp/"
            f"my-app-v2\n- **Workspace Directories:**\n  - /other\n  - {root}\n"
            "- **Directory Structure:**\n</session_context>"
        }
    ]
    source = tmp_path / "session-2026-01-02T03-04-sess1234.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in lines))
    home = tmp_path / "home"
    monkeypatch.setenv("GEMINI_CLI_HOME", str(home))
    temp = home / ".gemini" / "tmp"
    name = "my-app-v2"
    if case == "registered":
        name = "custom-7"
        registry = {"projects": {root: name}}
        (home / ".gemini").mkdir(parents=True)
        (home / ".gemini" / "projects.json").write_text(json.dumps(registry))
    if case == "taken":
        (temp / name).mkdir(parents=True)
        (temp / name / ".project_root").write_text("/someone/else\n")
    out = tmp_path / "g.jsonl"
    assert main(["resume", str(source), "--out", str(out)]) == 0
    said = capsys.readouterr().err
    if case in {"named", "registered"}:
        target = temp / name / "chats" / "session-2026-01-02T03-04-sess-123.jsonl"
        assert f"run: mkdir -p -- {target.parent} && cp -- {out} {target}" in said
        assert f"resume with: cd '{root}' && gemini --resume sess-1234abcd" in said
        assert "no resume step" not in said
    elif case == "taken":
        assert "no resume step" in said
        assert f"belongs to /someone/else, so it will take {name}-1" in said
    else:
        assert "no resume step" in said
        assert "lists no workspace directory with that hash" in said
