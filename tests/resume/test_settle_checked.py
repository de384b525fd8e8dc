"""A session file read for a check only (``scan_session`` with ``settle`` and
``checked``) lets go of its messages whatever they break: a Claude Code session or a
Codex rollout interrupted early (a call never answered) or whose call ids are used
again is checked in parts, and its report is the one of the file read whole (the same
findings, the same counts, the same first ``keep`` examples); a result that answers a
call let go of unanswered makes the read fall back to holding the messages. A Codex
rollout's repair (``repair_session``) is decided run by run as that read lets them go
and written in a second pass: the same bytes and report as the whole read's repair,
also when its call ids are used again (twice, or by every copy of its turns) and when
its lines are numbered (``ordinal``, ``history_sequence``), and when its items break
rules apart from any turn (a reasoning item before the user's message, a result before
its call, ``compacted``, a second ``session_meta``). The ids, lines and counts
of ids used again let go of are spilled to files early (``SPILL_AT`` made small)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import agc.resume._formats.model as model
import agc.resume._formats.stream as stream
import agc.resume._repair as repair_module
from agc.errors import AgcError
from agc.resume import (
    History,
    RepairReport,
    ScanStart,
    Strategy,
    check_loaded,
    idempotency_key,
    load_history,
    repair_loaded,
    repair_session,
    repair_streamed,
    scan_session,
    scan_tail,
    session_identity,
)
from tests.conftest import examples
from tests.resume.test_repair import _claude_lines, _codex_lines
from tests.resume.test_settle import _turns

REACHES_INSIDE = {
    "agc.resume._formats.model": "the bound of SpilledLines, SpilledCallIds and of the "
    "repair's counts of ids used again (SPILL_AT) made small, so they are spilled",
    "agc.resume._formats.stream": "its _STALE (how long a call stays open before a check "
    "lets go of it) made small, so the fall back of a later result is reached; the point "
    "_loose_point chooses, against the calls and answers on either side of it",
    "agc.resume._repair": "the messages its repair pass (_Repairer.run_noted) is given "
    "counted: a run that breaks no rule is not given to it",
}


def _checked_as_whole(path: Path, settle: int, keep: int | None) -> History | None:
    """Assert that the checked read of ``path`` reports as the whole read (``keep``
    examples); return it (``None`` when both refuse the file)."""
    try:
        whole = load_history(path.read_bytes(), source=str(path))
    except AgcError as exc:
        with pytest.raises(type(exc)):
            scan_session(path, source=str(path), format=None, settle=settle, checked=True)
        return None
    checked = scan_session(
        path, source=str(path), format=None, settle=settle, checked=True, keep=keep
    )
    assert check_loaded(checked, keep=keep).to_dict() == check_loaded(whole, keep=keep).to_dict()
    return checked


_EARLY: tuple[Any, ...] = ("assistant", "", [("early", True)], False)


@st.composite
def _broken_sessions(draw: st.DrawFn) -> bytes:
    """A session of :func:`~tests.resume.test_settle._turns`, after a call never
    answered or not (its result recorded later or not), the same turns repeated (each
    call id used again) or not, as a Claude Code session or a Codex rollout."""
    events = draw(_turns())
    if draw(st.booleans()):
        events = [("user", "go"), _EARLY, *events]
        if draw(st.booleans()):
            at = draw(st.integers(min_value=2, max_value=len(events)))
            events.insert(at, ("result", "early", False))
    if draw(st.booleans()):
        events = events + events
    if draw(st.booleans()):
        return _claude_lines(events, draw(st.booleans()), draw(st.booleans()))
    return _codex_lines(events, draw(st.booleans()))


@settings(max_examples=examples(300), deadline=None)
@given(
    data=_broken_sessions(),
    settle=st.integers(min_value=1, max_value=4),
    keep=st.sampled_from([None, 0, 1, 3]),
    stale=st.integers(min_value=0, max_value=3),
    spill_at=st.sampled_from([1, 2, 4, model.SPILL_AT]),
)
def test_property_a_checked_read_reports_as_the_whole_read(
    data: bytes,
    settle: int,
    keep: int | None,
    stale: int,
    spill_at: int,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    path = tmp_path_factory.mktemp("checked") / "session.jsonl"
    path.write_bytes(data)
    with mock.patch.object(stream, "_STALE", stale), mock.patch.object(model, "SPILL_AT", spill_at):
        _checked_as_whole(path, settle, keep)


def _rollout(turns: int, *, early: bool, answered_at: int | None = None) -> bytes:
    events: list[tuple[Any, ...]] = [("user", "go"), _EARLY] if early else []
    for turn in range(turns):
        if answered_at == turn:
            events.append(("result", "early", False))
        events += [
            ("user", "go"),
            ("assistant", "", [(f"c{turn}", True)], False),
            ("result", f"c{turn}", False),
            ("assistant", "done", [], False),
        ]
    return _codex_lines(events, False)


@pytest.mark.parametrize("claude", [False, True])
def test_a_session_interrupted_early_is_checked_in_parts(claude: bool, tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    events: list[tuple[Any, ...]] = [("user", "go"), _EARLY]
    for turn in range(200):
        events += [
            ("user", "go"),
            ("assistant", "", [(f"c{turn}", True)], False),
            ("result", f"c{turn}", False),
            ("assistant", "done", [], False),
        ]
    path.write_bytes(_claude_lines(events, False, False) if claude else _codex_lines(events, False))
    with mock.patch.object(stream, "_STALE", 8):
        checked = _checked_as_whole(path, 16, 2)
    assert checked is not None
    assert checked.settled is not None
    # Held: the messages since the last let go, not those from the early call on.
    assert len(checked.messages) <= 2 * 16 + 8
    report = check_loaded(checked, keep=2)
    assert [f.code for f in report.findings] == ["tool-call-unanswered"]


@pytest.mark.parametrize("claude", [False, True])
def test_a_session_with_a_call_unanswered_in_every_turn_is_checked_in_parts(
    claude: bool, tmp_path: Path
) -> None:
    # A call left open in every turn: each is taken as never answered once that many
    # messages followed it, so the read lets go of the turns before the newest ones.
    path = tmp_path / "session.jsonl"
    events: list[tuple[Any, ...]] = []
    for turn in range(300):
        events += [
            ("user", "go"),
            ("assistant", "", [(f"c{turn}", True), (f"open{turn}", True)], False),
            ("result", f"c{turn}", False),
            ("assistant", "done", [], False),
        ]
    path.write_bytes(_claude_lines(events, False, False) if claude else _codex_lines(events, False))
    with mock.patch.object(stream, "_STALE", 8):
        checked = _checked_as_whole(path, 16, 2)
    assert checked is not None
    assert checked.settled is not None
    assert len(checked.messages) <= 2 * 16 + 8 + 8
    report = check_loaded(checked, keep=2)
    assert report.code_counts() == {"tool-call-unanswered": 300}


@settings(max_examples=examples(200), deadline=None)
@given(
    events=_turns(),
    early=st.booleans(),
    answer_at=st.integers(min_value=0, max_value=60),
    stale=st.integers(min_value=1, max_value=6),
)
def test_property_a_rollout_is_never_cut_between_a_call_and_its_answer_held(
    events: list[tuple[Any, ...]], early: bool, answer_at: int, stale: int
) -> None:
    # A call stale by then may be let go of unanswered, but never when a message held
    # answers it (its pairing is then the part's, not a fall back to the whole read).
    events = [("user", "go"), _EARLY, *events] if early else list(events)
    if early:
        events.insert(min(2 + answer_at, len(events)), ("result", "early", False))
    messages = load_history(_codex_lines(events, False), source="s").messages
    cut = stream._loose_point(messages, stale)
    answered_after = {
        block.call_id
        for message in messages[cut:]
        for block in message.blocks
        if block.kind == "result"
    }
    answered_before: set[str | None] = set()
    for message in messages[:cut]:
        for block in message.blocks:
            if block.kind == "result":
                answered_before.add(block.call_id)
    let_go_open = {
        block.call_id
        for message in messages[:cut]
        for block in message.blocks
        if block.kind == "call" and block.call_id not in answered_before
    }
    assert not let_go_open & answered_after


@pytest.mark.parametrize("stale", [0, 1, 3])
@pytest.mark.parametrize("settle", [1, 2, 4])
def test_reasoning_nothing_follows_let_go_of_is_reported_from_its_line(
    settle: int, stale: int, tmp_path: Path
) -> None:
    # The finding of a reasoning item let go of names its item from the line it was
    # read from: that line must still be readable then (it was read past the lines the
    # read knew of: an IndexError, exit 4).
    def line(payload: dict[str, Any]) -> str:
        return json.dumps({"timestamp": "t", "type": "response_item", "payload": payload})

    user = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]}
    lines = [
        json.dumps({"timestamp": "t", "type": "session_meta", "payload": {"id": "s"}}),
        line({"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "e"}),
        line({"type": "function_call_output", "call_id": "c4", "output": "o"}),
        line({"type": "function_call_output", "call_id": "c4", "output": "o"}),
        *[line(user)] * 8,
        line({"type": "function_call", "name": "sh", "arguments": "{}", "call_id": "c3"}),
    ]
    path = tmp_path / "rollout.jsonl"
    path.write_text("".join(text + "\n" for text in lines))
    with mock.patch.object(stream, "_STALE", stale):
        checked = _checked_as_whole(path, settle, None)
    assert checked is not None
    findings = check_loaded(checked).findings
    reasoning = [f for f in findings if f.code == "reasoning-without-following"]
    assert [f.message for f in reasoning] == [
        "Item 'rs_1' of type 'reasoning' was provided without its required following item."
    ]


def test_a_later_result_for_a_call_let_go_of_falls_back_to_the_whole_read(
    tmp_path: Path,
) -> None:
    path = tmp_path / "rollout.jsonl"
    path.write_bytes(_rollout(200, early=True, answered_at=150))
    with mock.patch.object(stream, "_STALE", 8):
        checked = _checked_as_whole(path, 16, None)
    assert checked is not None
    assert check_loaded(checked).valid  # the early call is answered, late
    # Read again holding the messages: the early call's answer is far after it.
    assert checked.settled is None or checked.settled.messages <= 2


def test_call_ids_used_again_are_checked_in_parts(tmp_path: Path) -> None:
    path = tmp_path / "rollout.jsonl"
    once = _rollout(100, early=False).splitlines(keepends=True)
    path.write_bytes(b"".join(once + once[1:]))  # every call id used again
    checked = _checked_as_whole(path, 16, 3)
    assert checked is not None
    assert checked.settled is not None
    assert len(checked.messages) <= 2 * 16 + 4
    counts = check_loaded(checked, keep=3).code_counts()
    assert counts == {"duplicate-call-id": 100, "duplicate-tool-result": 100}


def _repaired_as_whole(
    path: Path, settle: int, strategy: Strategy, out: Path, starts: list[int] | None = None
) -> bool:
    """Assert that the repair of ``path`` decided as a check reads it (``repair_session``,
    then ``repair_streamed`` when it hands the history back) writes the bytes and the
    report of the whole read's repair; whether the runs decided it (no fall back)."""
    try:
        whole = load_history(path.read_bytes(), source=str(path))
        expected = repair_loaded(whole, strategy=strategy)
    except AgcError as exc:
        with out.open("wb+") as sink, pytest.raises(type(exc)):
            _repair_in_runs(path, settle, strategy, sink, out)
        return False
    with out.open("wb+") as sink:
        report, planned = _repair_in_runs(path, settle, strategy, sink, out, starts)
    assert out.read_bytes() == expected.data
    assert report.to_dict() == expected.report.to_dict()
    return planned


def _repair_in_runs(
    path: Path,
    settle: int,
    strategy: Strategy,
    sink: Any,
    out: Path,
    starts: list[int] | None = None,
) -> tuple[RepairReport, bool]:
    """Repair ``path`` in runs as ``agc resume`` does, its output read back whole or
    from a line on (each line it was read from added to ``starts``)."""

    def read_back() -> History:
        sink.flush()
        return scan_session(out, source="out", format=None, settle=settle, checked=True)

    def read_tail(start: ScanStart) -> History:
        sink.flush()
        if starts is not None:
            starts.append(start.line)
        return scan_tail(out, start, source="out", format=start.format, settle=settle)

    history, report = repair_session(
        path,
        sink,
        read_back,
        read_tail=read_tail,
        source=str(path),
        strategy=strategy,
        settle=settle,
    )
    if report is not None:
        return report, True
    sink.seek(0)
    sink.truncate()
    return repair_streamed(history, sink, read_back, strategy=strategy), False


@settings(max_examples=examples(300), deadline=None)
@given(
    data=_broken_sessions(),
    settle=st.integers(min_value=1, max_value=4),
    strategy=st.sampled_from(["strip", "synthesize"]),
    stale=st.integers(min_value=0, max_value=3),
    spill_at=st.sampled_from([1, 2, 4, model.SPILL_AT]),
)
def test_property_a_repair_decided_in_runs_is_the_whole_repair(
    data: bytes,
    settle: int,
    strategy: Strategy,
    stale: int,
    spill_at: int,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    folder = tmp_path_factory.mktemp("runs")
    path = folder / "session.jsonl"
    path.write_bytes(data)
    with mock.patch.object(stream, "_STALE", stale), mock.patch.object(model, "SPILL_AT", spill_at):
        _repaired_as_whole(path, settle, strategy, folder / "out.jsonl")


_ITEMS: dict[str, list[dict[str, Any]]] = {
    "turn": [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]},
        {"type": "reasoning", "id": "rs", "summary": []},
        {"type": "function_call", "name": "r", "arguments": "{}", "call_id": "{id}"},
        {"type": "function_call_output", "call_id": "{id}", "output": "o"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "w"}]},
    ],
    # A reasoning item followed by the user's message: no item it produced.
    "reasoning": [
        {"type": "reasoning", "id": "rs", "summary": []},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]},
    ],
    "early": [
        {"type": "function_call_output", "call_id": "{id}", "output": "o"},
        {"type": "function_call", "name": "r", "arguments": "{}", "call_id": "{id}"},
    ],
    "call": [{"type": "function_call", "name": "r", "arguments": "{", "call_id": "{id}"}],
    "orphan": [{"type": "function_call_output", "call_id": "{id}", "output": "o"}],
}


@st.composite
def _raw_rollouts(draw: st.DrawFn) -> bytes:
    """A Codex rollout drawn a piece at a time: answered turns mostly, between a
    reasoning item followed by the user's message, a result before its call, a call
    never answered, a result of no call (their ids fresh or one of a few used again),
    a ``compacted`` line, a second ``session_meta``, lines that are not JSON objects;
    its lines numbered or not, its last line torn or not."""
    pieces = ["turn"] * 6 + [*_ITEMS, "compacted", "meta", "[1]", "not json"]
    lines: list[Any] = [{"timestamp": "t", "type": "session_meta", "payload": {"id": "s"}}]
    for number in range(draw(st.integers(min_value=1, max_value=24))):
        piece = draw(st.sampled_from(pieces))
        call_id = draw(st.sampled_from([f"c{number}", f"c{number}", "a", "b"]))
        if piece in _ITEMS:
            for item in _ITEMS[piece]:
                payload = json.loads(json.dumps(item).replace("{id}", call_id))
                lines.append({"timestamp": "t", "type": "response_item", "payload": payload})
        elif piece == "compacted":
            lines.append({"timestamp": "t", "type": "compacted", "payload": {"message": "m"}})
        elif piece == "meta":
            lines.append({"timestamp": "t", "type": "session_meta", "payload": {"id": "t"}})
        else:
            lines.append(piece)
    data = "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines)
    if all(isinstance(line, dict) for line in lines) and draw(st.booleans()):
        data = _numbered(data.encode()).decode()
    if draw(st.booleans()):
        data += '{"timestamp": "t", "type": "response_item", "payload": {"type": "func'
    return data.encode()


@settings(max_examples=examples(300), deadline=None)
@given(
    data=_raw_rollouts(),
    settle=st.integers(min_value=1, max_value=4),
    strategy=st.sampled_from(["strip", "synthesize"]),
    stale=st.integers(min_value=0, max_value=3),
    spill_at=st.sampled_from([1, 2, 4, model.SPILL_AT]),
)
def test_property_a_rollout_of_loose_items_is_repaired_in_runs_as_the_whole(
    data: bytes,
    settle: int,
    strategy: Strategy,
    stale: int,
    spill_at: int,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    # Items that break a rule apart from a turn: the runs write the whole read's bytes
    # and report (a read started again holding its messages among them), and the
    # output read whole as agc resume reads a file checks as the report says.
    folder = tmp_path_factory.mktemp("loose")
    path = folder / "rollout.jsonl"
    path.write_bytes(data)
    out = folder / "out.jsonl"
    with mock.patch.object(stream, "_STALE", stale), mock.patch.object(model, "SPILL_AT", spill_at):
        _repaired_as_whole(path, settle, strategy, out)
    if out.exists() and out.stat().st_size:
        expected = repair_loaded(load_history(data, source="r"), strategy=strategy).report
        again = check_loaded(load_history(out.read_bytes(), source="out"))
        assert again.valid == expected.valid


@pytest.mark.parametrize("strategy", ["strip", "synthesize"])
def test_a_rollout_interrupted_early_is_repaired_in_runs(
    strategy: Strategy, tmp_path: Path
) -> None:
    path = tmp_path / "rollout.jsonl"
    path.write_bytes(_rollout(200, early=True))
    with mock.patch.object(stream, "_STALE", 8):
        assert _repaired_as_whole(path, 16, strategy, tmp_path / "out.jsonl")


def _in_flight_at_the_end() -> list[tuple[Any, ...]]:
    """The usual crash: 200 turns, each call answered, then a call left in flight."""
    events: list[tuple[Any, ...]] = []
    for turn in range(200):
        events += [
            ("user", "go"),
            ("assistant", "", [(f"c{turn}", True)], False),
            ("result", f"c{turn}", False),
            ("assistant", "done", [], False),
        ]
    return [*events, ("user", "go"), ("assistant", "", [("last", True)], False)]


@pytest.mark.parametrize("claude", [False, True])
@pytest.mark.parametrize("strategy", ["strip", "synthesize"])
def test_a_repair_of_the_last_run_only_is_read_back_from_that_run(
    claude: bool, strategy: Strategy, tmp_path: Path
) -> None:
    # The usual crash: every turn answered but the last call. The runs before it were
    # written as they were read and broke no rule: only the rest is read back.
    events = _in_flight_at_the_end()
    path = tmp_path / "session.jsonl"
    data = _claude_lines(events, False, False) if claude else _codex_lines(events, False)
    path.write_bytes(data)
    starts: list[int] = []
    assert _repaired_as_whole(path, 16, strategy, tmp_path / "out.jsonl", starts)
    assert len(starts) == 1
    assert data.count(b"\n") - 64 < starts[0] < data.count(b"\n")


@pytest.mark.parametrize("claude", [False, True])
def test_a_run_that_breaks_no_rule_is_not_repaired_again(claude: bool, tmp_path: Path) -> None:
    # The check of a run found nothing: the repair keeps it as it is without its own
    # pass over it (only the last run, with the call in flight, is repaired).
    events = _in_flight_at_the_end()
    path = tmp_path / "session.jsonl"
    path.write_bytes(_claude_lines(events, False, False) if claude else _codex_lines(events, False))
    repaired: list[int] = []
    run_noted = repair_module._Repairer.run_noted

    def counted(self: Any) -> Any:
        repaired.append(len(self.view))
        return run_noted(self)

    with mock.patch.object(repair_module._Repairer, "run_noted", counted):
        assert _repaired_as_whole(path, 16, "synthesize", tmp_path / "out.jsonl")
    # The whole read's repair (the expected bytes) takes every message at once.
    whole = max(repaired)
    assert whole >= 800
    assert sum(repaired) - whole < 64


@pytest.mark.parametrize("strategy", ["strip", "synthesize"])
def test_a_repair_that_changes_an_early_run_is_read_back_whole(
    strategy: Strategy, tmp_path: Path
) -> None:
    path = tmp_path / "rollout.jsonl"
    path.write_bytes(_rollout(200, early=True))
    starts: list[int] = []
    with mock.patch.object(stream, "_STALE", 8):
        assert _repaired_as_whole(path, 16, strategy, tmp_path / "out.jsonl", starts)
    assert starts == []


def test_a_tool_use_outside_an_assistant_message_is_no_call_let_go_of(tmp_path: Path) -> None:
    # A user message's tool_use is no call: its id used later by the assistant is
    # no duplicate, in parts as in the whole history.
    events: list[tuple[Any, ...]] = []
    for turn in range(40):
        events += [
            ("user", "go"),
            ("assistant", "", [(f"c{turn}", True)], False),
            ("result", f"c{turn}", False),
            ("assistant", "done", [], False),
        ]
    events += [("assistant", "", [("stray", True)], False), ("result", "stray", False)]
    data = _claude_lines(events, False, False).decode()
    user = json.dumps(
        {
            "parentUuid": None,
            "isSidechain": False,
            "sessionId": "s",
            "type": "user",
            "message": {
                "role": "user",
                "content": [{"type": "tool_use", "id": "stray", "name": "r", "input": {}}],
            },
            "uuid": "stray-user",
        }
    )
    first, rest = data.split("\n", 1)
    path = tmp_path / "session.jsonl"
    path.write_text(first + "\n" + user + "\n" + rest)
    checked = _checked_as_whole(path, 4, None)
    assert checked is not None
    assert checked.settled is not None
    codes = check_loaded(checked).code_counts()
    assert "duplicate-call-id" not in codes
    assert codes.get("tool-call-unanswered") == 1


def _numbered(data: bytes) -> bytes:
    """``data`` (a rollout of :func:`_codex_lines`) as Codex 0.155+ writes it: every
    line numbered (``ordinal``), response items with ``metadata.history_sequence``."""
    lines = []
    sequence = 0
    for ordinal, line in enumerate(data.splitlines()):
        record = json.loads(line)
        numbered: dict[str, Any] = {
            "timestamp": record["timestamp"],
            "ordinal": ordinal,
            "type": record["type"],
            "payload": record["payload"],
        }
        if record["type"] == "response_item":
            sequence += 1
            numbered["metadata"] = {
                "history_sequence": sequence,
                "sampled_through_sequence": max(sequence - 1, 0),
                "client_authored": False,
            }
        lines.append(json.dumps(numbered, separators=(",", ":")) + "\n")
    return "".join(lines).encode()


def _copied_turns(
    copies: int, turns: int, share: int | None, draw: Any = None
) -> list[tuple[Any, ...]]:
    """Turns as Codex writes them (the user's message; reasoning, a call and its
    result, again; the assistant's text after reasoning), copied ``copies`` times, the
    copies' call ids shared by ``share`` copies in a row (1: each copy's own; ``None``:
    every copy's the first's). ``draw``: a Hypothesis draw that picks how many calls a
    turn has and which are led by reasoning (else 2 calls, each after reasoning)."""
    events: list[tuple[Any, ...]] = []
    for copy in range(copies):
        group = 0 if share is None else copy // share
        for turn in range(turns):
            events.append(("user", "go"))
            calls = 2 if draw is None else draw(st.integers(min_value=0, max_value=3))
            for call in range(calls):
                call_id = f"c{group}-{turn}-{call}"
                reasoning = True if draw is None else draw(st.booleans())
                events.append(("assistant", "", [(call_id, True)], reasoning))
                events.append(("result", call_id, False))
            events.append(("assistant", "text", [], True))
    return events


@st.composite
def _reused_sessions(draw: st.DrawFn) -> bytes:
    """A Codex rollout (numbered or not) or a Claude Code session (its lines split or
    not) of :func:`_copied_turns` whose copies share their call ids (two in a row, or
    all of them) or not, with a call never answered somewhere or not."""
    share = draw(st.sampled_from([1, 2, None]))
    events = _copied_turns(
        draw(st.integers(min_value=1, max_value=5)),
        draw(st.integers(min_value=1, max_value=3)),
        share,
        draw,
    )
    if draw(st.booleans()):
        at = draw(st.integers(min_value=0, max_value=len(events)))
        events.insert(at, ("assistant", "", [("never", True)], draw(st.booleans())))
    if draw(st.booleans()):
        return _claude_lines(events, draw(st.booleans()), draw(st.booleans()))
    data = _codex_lines(events, draw(st.booleans()))
    return _numbered(data) if draw(st.booleans()) else data


@settings(max_examples=examples(300), deadline=None)
@given(
    data=_reused_sessions(),
    settle=st.integers(min_value=1, max_value=4),
    strategy=st.sampled_from(["strip", "synthesize"]),
    stale=st.integers(min_value=0, max_value=3),
    spill_at=st.sampled_from([1, 2, 4, model.SPILL_AT]),
)
def test_property_a_session_reusing_ids_is_repaired_in_runs_as_the_whole(
    data: bytes,
    settle: int,
    strategy: Strategy,
    stale: int,
    spill_at: int,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    # Ids used again (twice, or in every copy), reasoning before the calls dropped as
    # reusing an id, numbered lines: the runs write the whole read's bytes and report,
    # the counts of ids used again spilled early (SPILL_AT small).
    folder = tmp_path_factory.mktemp("reused")
    path = folder / "session.jsonl"
    path.write_bytes(data)
    with mock.patch.object(stream, "_STALE", stale), mock.patch.object(model, "SPILL_AT", spill_at):
        planned = _repaired_as_whole(path, settle, strategy, folder / "out.jsonl")
        checked = scan_session(path, source="s", format=None, settle=settle, checked=True)
    if b'"never"' not in data and checked.settled is not None:
        # Nothing left unanswered, so nothing reaches back: a history a check reads in
        # runs is repaired in runs.
        assert planned


@pytest.mark.parametrize("share", [2, None])
@pytest.mark.parametrize("strategy", ["strip", "synthesize"])
def test_a_rollout_whose_ids_are_used_again_is_repaired_in_runs(
    share: int | None, strategy: Strategy, tmp_path: Path
) -> None:
    # Every id used by two calls, or by a call in each of 40 copies: the runs are
    # repaired apart (no fall back to the whole read), each reused call keyed by its
    # number among the calls with its id, its result keyed as that call.
    path = tmp_path / "rollout.jsonl"
    path.write_bytes(_codex_lines(_copied_turns(40, 2, share), False))
    with mock.patch.object(model, "SPILL_AT", 8):
        assert _repaired_as_whole(path, 16, strategy, tmp_path / "out.jsonl")
    report = repair_loaded(load_history(path.read_bytes(), source="r"), strategy=strategy).report
    counts = report.action_counts()
    # 2 turns x 2 calls a copy; every copy but the first of each group reuses its ids.
    reused = 4 * (20 if share == 2 else 39)
    assert counts["dropped-duplicate-call"] == counts["dropped-orphan-result"] == reused
    # Reasoning before a dropped call is followed by the turn's text: never dropped.
    assert "dropped-reasoning" not in counts


@pytest.mark.parametrize("strategy", ["strip", "synthesize"])
def test_a_numbered_rollout_is_repaired_in_runs_with_its_numbers_made_right(
    strategy: Strategy, tmp_path: Path
) -> None:
    # Codex 0.171 refuses a rollout whose final paginated record lacks an ordinal: a
    # numbered rollout interrupted early, its ids used again, is repaired in runs into
    # the whole read's bytes, every line numbered in order and every item's history
    # sequence in order, the new items' too.
    events = [("user", "go"), _EARLY, *_copied_turns(30, 2, 2)]
    path = tmp_path / "rollout.jsonl"
    path.write_bytes(_numbered(_codex_lines(events, True)))
    out = tmp_path / "out.jsonl"
    with mock.patch.object(stream, "_STALE", 8):
        assert _repaired_as_whole(path, 16, strategy, out)
    records = [json.loads(line) for line in out.read_bytes().splitlines()]
    assert [record["ordinal"] for record in records] == list(range(len(records)))
    sequences = [
        record["metadata"]["history_sequence"]
        for record in records
        if record["type"] == "response_item"
    ]
    assert sequences == list(range(1, len(sequences) + 1))
    # The early call is gone (strip) or answered right after it (synthesize).
    early = [r["payload"].get("call_id") == "early" for r in records]
    assert early.count(True) == (0 if strategy == "strip" else 2)


@pytest.mark.parametrize("strategy", ["strip", "synthesize"])
def test_a_claude_code_session_is_repaired_in_runs(strategy: Strategy, tmp_path: Path) -> None:
    # A Claude Code session interrupted early whose ids are each used twice is repaired
    # run by run as a Codex rollout is (memory holds a run, not the history from its
    # first problem on): the whole read's bytes and report, each line dropped with a
    # reused call re-pointed past (its children's parentUuid).
    events = [("user", "go"), _EARLY, *_copied_turns(40, 2, 2)]
    path = tmp_path / "session.jsonl"
    path.write_bytes(_claude_lines(events, True, True))
    with mock.patch.object(model, "SPILL_AT", 8):
        assert _repaired_as_whole(path, 16, strategy, tmp_path / "out.jsonl")
    report = repair_loaded(load_history(path.read_bytes(), source="s"), strategy=strategy).report
    assert report.action_counts()["dropped-duplicate-call"] == 4 * 20


_TORN_CALL = {
    "codex": '{"timestamp": "t", "type": "response_item", "payload": {"type": "function_call", '
    '"name": "r", "call_id": "X", "arguments": "{',
    "claude": '{"parentUuid": "u", "type": "assistant", "message": {"role": "assistant", '
    '"content": [{"type": "tool_use", "id": "X", "name": "r", "input": {"a',
}


@pytest.mark.parametrize("client", sorted(_TORN_CALL))
@pytest.mark.parametrize("strategy", ["strip", "synthesize"])
def test_a_torn_call_reusing_an_id_of_every_run_is_keyed_as_the_whole_repair_keys_it(
    client: str, strategy: Strategy, tmp_path: Path
) -> None:
    # The id is used by a call let go of, again by one of the last run (dropped as
    # reusing it), then by the torn last line's call: the third call with the id, keyed
    # as such (the last run's call was counted twice: the fourth, before).
    events: list[tuple[Any, ...]] = []
    for call_id in ["X", *(f"c{turn}" for turn in range(10)), "X"]:
        events += [
            ("user", "go"),
            ("assistant", "", [(call_id, True)], False),
            ("result", call_id, False),
            ("assistant", "done", [], False),
        ]
    events.pop()  # the last turn's call and result are the last messages: held
    data = _codex_lines(events, False) if client == "codex" else _claude_lines(events, False, False)
    path = tmp_path / "session.jsonl"
    path.write_bytes(data + _TORN_CALL[client].encode())
    assert _repaired_as_whole(path, 2, strategy, tmp_path / "out.jsonl")
    report = repair_loaded(load_history(path.read_bytes(), source="s"), strategy=strategy).report
    (torn,) = [change for change in report.changes if change.action == "dropped-torn-line"]
    assert torn.idempotency_key == idempotency_key("X", session="s", occurrence=3)


@pytest.mark.parametrize("strategy", ["strip", "synthesize"])
def test_a_torn_call_reusing_the_id_of_a_user_tool_use_is_keyed_as_the_whole_repair_keys_it(
    strategy: Strategy, tmp_path: Path
) -> None:
    # A tool_use in a user message is no call of the history, but the whole repair
    # numbers it among its id's calls: the torn last line's call with its id is the
    # second (keyed as the first, before: the runs never count it).
    events: list[tuple[Any, ...]] = []
    for turn in range(12):
        events += [
            ("user", "go"),
            ("assistant", "", [(f"c{turn}", True)], False),
            ("result", f"c{turn}", False),
            ("assistant", "done", [], False),
        ]
    first, rest = _claude_lines(events, False, False).decode().split("\n", 1)
    user = {
        "parentUuid": None,
        "isSidechain": False,
        "sessionId": "s",
        "type": "user",
        "message": {"role": "user", "content": [{"type": "tool_use", "id": "X", "name": "r"}]},
        "uuid": "stray-user",
    }
    path = tmp_path / "session.jsonl"
    path.write_text(f"{first}\n{json.dumps(user)}\n{rest}{_TORN_CALL['claude']}")
    _repaired_as_whole(path, 2, strategy, tmp_path / "out.jsonl")
    report = repair_loaded(load_history(path.read_bytes(), source="s"), strategy=strategy).report
    (torn,) = [change for change in report.changes if change.action == "dropped-torn-line"]
    assert torn.idempotency_key == idempotency_key("X", session="s", occurrence=2)


@pytest.mark.parametrize("client", sorted(_TORN_CALL))
@pytest.mark.parametrize("strategy", ["strip", "synthesize"])
def test_a_torn_call_of_a_session_without_an_id_is_keyed_by_its_first_line(
    client: str, strategy: Strategy, tmp_path: Path
) -> None:
    # No session_meta, no sessionId: the session's identity is the digest of its first
    # line, in runs as whole (the runs keyed the torn call by an empty identity, before).
    events: list[tuple[Any, ...]] = []
    for turn in range(12):
        events += [
            ("user", "go"),
            ("assistant", "", [(f"c{turn}", True)], False),
            ("result", f"c{turn}", False),
            ("assistant", "done", [], False),
        ]
    if client == "codex":
        data = _codex_lines(events, False).split(b"\n", 1)[1]  # without its session_meta
    else:
        data = _claude_lines(events, False, False).replace(b'"sessionId": "s", ', b"")
    path = tmp_path / "session.jsonl"
    path.write_bytes(data + _TORN_CALL[client].encode())
    assert _repaired_as_whole(path, 2, strategy, tmp_path / "out.jsonl")
    whole = load_history(path.read_bytes(), source="s")
    assert whole.session_id is None
    report = repair_loaded(whole, strategy=strategy).report
    (torn,) = [change for change in report.changes if change.action == "dropped-torn-line"]
    assert torn.idempotency_key == idempotency_key("X", session=session_identity(whole))
