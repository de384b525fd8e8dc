"""Tests for agc.capture's comparison of the hooks' calls with the session file's calls:
every added, removed or replaced call is found alone, whether the client gives call ids
or not."""

from __future__ import annotations

import itertools
from typing import Any, Literal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agc.capture import ToolEvent
from agc.capture import _crosscheck as crosscheck
from agc.capture._crosscheck import Divergence, _common, compare_calls

REACHES_INSIDE = {"agc.capture._crosscheck": "the LCS alignment and its edit bound"}

_TOOLS = ("Bash", "Read", "Edit", "run_shell_command")


def _call(source: Any, tool: str, call_id: str | None, line: int | None = None) -> ToolEvent:
    return ToolEvent(
        event="call",
        source=source,
        client="claude-code",
        session_id="s",
        tool=tool,
        call_id=call_id,
        line=line,
    )


def _mark(event: Any) -> ToolEvent:
    return ToolEvent(event=event, source="hook", client="claude-code", session_id="s")


def _witnesses(tools: list[str], *, ids: bool) -> tuple[list[ToolEvent], list[ToolEvent]]:
    """A session's calls as the hooks (start ... stop) and as the session file saw them."""
    hooked = [_mark("session-start")]
    hooked += [_call("hook", t, f"c{i}" if ids else None) for i, t in enumerate(tools)]
    hooked.append(_mark("stop"))
    recorded = [_call("session-file", t, f"c{i}", line=2 * i + 1) for i, t in enumerate(tools)]
    return hooked, recorded


_SESSIONS = st.lists(st.sampled_from(_TOOLS), max_size=40)


@given(tools=_SESSIONS, ids=st.booleans())
def test_two_witnesses_of_the_same_session_agree(tools: list[str], ids: bool) -> None:
    hooked, recorded = _witnesses(tools, ids=ids)
    assert compare_calls(hooked, recorded) == ()


@given(tools=_SESSIONS.filter(bool), ids=st.booleans(), data=st.data())
def test_a_call_removed_from_the_session_file_is_found_alone(
    tools: list[str], ids: bool, data: st.DataObject
) -> None:
    hooked, recorded = _witnesses(tools, ids=ids)
    gone = data.draw(st.integers(0, len(recorded) - 1))
    removed = recorded.pop(gone)
    (divergence,) = compare_calls(hooked, recorded)
    assert divergence.kind == "missing-from-transcript"
    assert divergence.tool == removed.tool
    if ids:
        assert divergence.call_id == removed.call_id


@given(tools=_SESSIONS, ids=st.booleans(), tool=st.sampled_from(_TOOLS), data=st.data())
def test_a_call_added_to_the_session_file_is_found_alone_at_its_line(
    tools: list[str], ids: bool, tool: str, data: st.DataObject
) -> None:
    hooked, recorded = _witnesses(tools, ids=ids)
    at = data.draw(st.integers(0, len(recorded)))
    recorded.insert(at, _call("session-file", tool, "injected", line=10_000))
    (divergence,) = compare_calls(hooked, recorded)
    assert divergence.kind == "unseen-by-hooks"
    assert divergence.tool == tool
    if ids:  # without ids, an equal neighbour may be the one left over
        assert divergence.line == 10_000


@given(tools=_SESSIONS.filter(bool), data=st.data())
def test_a_call_whose_id_was_replaced_is_found_when_the_tool_changed_too(
    tools: list[str], data: st.DataObject
) -> None:
    hooked, recorded = _witnesses(tools, ids=True)
    at = data.draw(st.integers(0, len(recorded) - 1))
    other = next(t for t in _TOOLS if t != recorded[at].tool)
    recorded[at] = _call("session-file", other, "forged", line=recorded[at].line)
    kinds = sorted(d.kind for d in compare_calls(hooked, recorded))
    assert kinds == ["missing-from-transcript", "unseen-by-hooks"]


def test_calls_before_the_hooks_were_installed_are_not_held_against_the_file() -> None:
    # No session-start hook: the session began before the hooks, so the file's first
    # calls were never theirs to see. A call after their last one is theirs: unseen
    # when they saw the turn stop, "after-hooks" when they were not seen to stop.
    _, recorded = _witnesses(["Read", "Bash", "Edit", "Bash"], ids=True)
    hooked = [_call("hook", "Bash", "c1"), _call("hook", "Edit", "c2")]
    (divergence,) = compare_calls(hooked, recorded)
    assert (divergence.kind, divergence.call_id, divergence.line) == ("after-hooks", "c3", 7)
    hooked.append(_mark("stop"))
    (divergence,) = compare_calls(hooked, recorded)
    assert (divergence.kind, divergence.call_id, divergence.line) == ("unseen-by-hooks", "c3", 7)


@given(
    tools=_SESSIONS.filter(bool),
    data=st.data(),
    last=st.sampled_from(["call", "result", "prompt", "compact", "other"]),
    opened=st.booleans(),
)
def test_every_call_after_hooks_that_were_not_seen_to_stop_is_found(
    tools: list[str], data: st.DataObject, last: str, opened: bool
) -> None:
    """A session killed mid-turn (or whose hooks stopped firing): the hooks saw its
    calls up to some point and no stop or end after it; every call of the file after
    the last one they matched is ``after-hooks``, and nothing before it is held."""
    seen = data.draw(st.integers(1, len(tools)))
    hooked, recorded = _witnesses(tools, ids=True)
    hooked = hooked[: 1 + seen]  # session start and the first `seen` calls
    if not opened:
        hooked = hooked[1:]
    if last != "call":
        hooked.append(_mark(last))
    found = compare_calls(hooked, recorded)
    assert [d.kind for d in found] == ["after-hooks"] * (len(tools) - seen)
    assert [d.call_id for d in found] == [f"c{i}" for i in range(seen, len(tools))]
    assert all("after the hooks' last call" in d.describe() for d in found)
    # Seen to stop (or end) after their last call, the same calls are unseen, as before.
    closing = st.sampled_from(["stop", "session-end"])
    closed = compare_calls([*hooked, _mark(data.draw(closing))], recorded)
    assert [d.kind for d in closed] == ["unseen-by-hooks"] * (len(tools) - seen)


def _input_call(source: Any, client: Any, call_id: str, value: Any) -> ToolEvent:
    return ToolEvent(
        event="call",
        source=source,
        client=client,
        session_id="s",
        tool="Bash",
        call_id=call_id,
        input=value,
        line=None if source == "hook" else 3,
    )


_TEXT = st.text(max_size=30)
_INPUTS = st.dictionaries(
    st.sampled_from(["command", "description", "timeout", "file_path"]),
    st.one_of(_TEXT, st.integers(-(2**40), 2**40), st.booleans()),
    max_size=4,
)


@given(value=_INPUTS, data=st.data())
def test_a_claude_code_call_whose_input_was_rewritten_is_found(
    value: dict[str, Any], data: st.DataObject
) -> None:
    """Claude Code gives its hooks the input its session file holds: the same input,
    its members in any order, agrees; any other input is ``input-differs`` at the
    file's line."""
    shuffled = dict(data.draw(st.permutations(list(value.items()))))
    start = [_mark("session-start")]
    hooked = [*start, _input_call("hook", "claude-code", "c0", value), _mark("stop")]
    assert compare_calls(hooked, [_input_call("session-file", "claude-code", "c0", shuffled)]) == ()
    other = data.draw(_INPUTS.filter(lambda v: v != value))
    (divergence,) = compare_calls(hooked, [_input_call("session-file", "claude-code", "c0", other)])
    assert (divergence.kind, divergence.call_id, divergence.line) == ("input-differs", "c0", 3)
    assert "another input" in divergence.describe()


@given(command=_TEXT, other=_TEXT, extra=_INPUTS)
def test_a_codex_call_is_compared_by_its_command_text(
    command: str, other: str, extra: dict[str, Any]
) -> None:
    """A Codex hook names a shell call ``{"command"}``; its rollout keeps the model's
    ``exec_command`` arguments (``cmd`` and others): the command text is compared, the
    other arguments are not."""
    hooked = [_mark("session-start"), _input_call("hook", "codex", "c0", {"command": command})]
    same = {**extra, "cmd": command, "yield_time_ms": 1}
    assert compare_calls(hooked, [_input_call("session-file", "codex", "c0", same)]) == ()
    changed = compare_calls(hooked, [_input_call("session-file", "codex", "c0", {"cmd": other})])
    assert [d.kind for d in changed] == ([] if other == command else ["input-differs"])


def test_the_recorded_hook_inputs_equal_their_session_files_calls() -> None:
    """The rule holds for what the real clients sent (tests/fixtures/hooks): each hook
    call's input digest equals the session file's call of the same id."""
    from pathlib import Path  # noqa: PLC0415

    from agc._core.json import loads  # noqa: PLC0415
    from agc.capture import SessionParser, parse_hook_event  # noqa: PLC0415

    root = Path(__file__).parent.parent / "fixtures" / "hooks"
    for client in ("claude-code", "codex"):
        parser = SessionParser()
        file_calls = {
            e.call_id: e
            for raw in (root / client / "session-file.jsonl").read_bytes().splitlines()
            for e in parser.feed(loads(raw))
            if e.event == "call"
        }
        compared = 0
        for path in sorted((root / client).glob("PreToolUse*.json")):
            hook = parse_hook_event(client, path.read_bytes()).record
            theirs = file_calls[hook.call_id]
            ours_digest = crosscheck.input_digest(hook.client, hook.to_record()["input"])
            assert ours_digest is not None
            assert ours_digest == crosscheck.input_digest(theirs.client, theirs.input), path
            compared += 1
        assert compared == 2, client


def test_a_divergence_says_which_call_and_where() -> None:
    hooked, recorded = _witnesses(["Bash", "Read"], ids=True)
    recorded.pop(0)
    recorded.append(_call("session-file", "Edit", "x9", line=12))
    found = compare_calls(hooked, recorded)
    texts = [d.describe() for d in found]
    assert texts == [
        "the hooks saw the Bash call with id c0 (hook call 1); the transcript lacks it",
        "the transcript holds the Edit call with id x9; the hooks never saw it",
    ]
    assert [d.line for d in found] == [None, 12]  # the location: the finding's, said once


@given(
    a=st.lists(st.sampled_from("ABC"), max_size=30), b=st.lists(st.sampled_from("ABC"), max_size=30)
)
def test_the_alignment_is_a_longest_common_subsequence(a: list[str], b: list[str]) -> None:
    pairs = _common(a, b)
    assert all(a[i] == b[j] for i, j in pairs)
    assert all(p[0] < q[0] and p[1] < q[1] for p, q in itertools.pairwise(pairs))
    # the length of a longest common subsequence, by the textbook table
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) - 1, -1, -1):
        for j in range(len(b) - 1, -1, -1):
            table[i][j] = (
                table[i + 1][j + 1] + 1 if a[i] == b[j] else max(table[i + 1][j], table[i][j + 1])
            )
    assert len(pairs) == table[0][0]


def test_beyond_the_edit_bound_the_alignment_is_still_a_common_subsequence(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(crosscheck, "_MAX_EDITS", 1)
    a, b = list("ABCABCAB"), list("CBACBBAA")
    pairs = _common(a, b)
    assert pairs
    assert all(a[i] == b[j] for i, j in pairs)
    assert all(p[0] < q[0] and p[1] < q[1] for p, q in itertools.pairwise(pairs))


def _result(call_id: str) -> ToolEvent:
    return ToolEvent(
        event="result", source="hook", client="claude-code", session_id="s", call_id=call_id
    )


@st.composite
def _background_session(draw: st.DrawFn) -> tuple[list[ToolEvent], list[ToolEvent]]:
    """A session of turns whose per-tool-call hooks ran in the background (Claude Code's
    and Codex's ``async``): within a turn the call and result records come in any order,
    and any of them may come after the turn's stop, never after the next turn's prompt
    (the client waits for that hook). Returns (hook records, session file calls)."""
    turns = draw(st.lists(st.lists(st.sampled_from(_TOOLS), max_size=6), min_size=1, max_size=4))
    hooked: list[ToolEvent] = [_mark("session-start")]
    recorded: list[ToolEvent] = []
    number = itertools.count()
    for tools in turns:
        hooked.append(_mark("prompt"))
        tool_records: list[ToolEvent] = []
        for tool in tools:
            i = next(number)
            tool_records += [_call("hook", tool, f"c{i}"), _result(f"c{i}")]
            recorded.append(_call("session-file", tool, f"c{i}", line=i + 1))
        shuffled = draw(st.permutations(tool_records))
        late = draw(st.integers(0, len(shuffled)))
        hooked += [
            *shuffled[: len(shuffled) - late],
            _mark("stop"),
            *shuffled[len(shuffled) - late :],
        ]
    return hooked, recorded


@given(session=_background_session())
def test_background_hooks_out_of_order_agree_with_the_session_file(
    session: tuple[list[ToolEvent], list[ToolEvent]],
) -> None:
    hooked, recorded = session
    assert compare_calls(hooked, recorded) == ()


@given(session=_background_session(), tool=st.sampled_from(_TOOLS), data=st.data())
def test_a_call_added_among_background_hooks_records_is_unseen_not_after_the_hooks(
    session: tuple[list[ToolEvent], list[ToolEvent]], tool: str, data: st.DataObject
) -> None:
    # A call record appended after its turn's stop does not reopen the turn: a call
    # added to the session file anywhere, the end included, is one the hooks never saw
    # while active (an edit), not one after hooks that stopped.
    hooked, recorded = session
    at = data.draw(st.integers(0, len(recorded)))
    recorded.insert(at, _call("session-file", tool, "injected", line=10_000))
    (divergence,) = compare_calls(hooked, recorded)
    assert divergence.kind == "unseen-by-hooks"
    assert divergence.call_id == "injected"


@given(session=_background_session(), data=st.data())
def test_a_call_removed_among_background_hooks_records_is_found(
    session: tuple[list[ToolEvent], list[ToolEvent]], data: st.DataObject
) -> None:
    hooked, recorded = session
    if not recorded:
        return
    removed = recorded.pop(data.draw(st.integers(0, len(recorded) - 1)))
    (divergence,) = compare_calls(hooked, recorded)
    assert divergence.kind == "missing-from-transcript"
    assert divergence.call_id == removed.call_id


def test_a_turn_killed_after_a_late_record_still_leaves_its_calls_after_the_hooks() -> None:
    # Turn 1 ends (stop; one of its records late), turn 2 begins (a prompt the client
    # waits for), calls c2 and is killed: c3 in the file comes after the hooks stopped.
    hooked = [
        _mark("session-start"),
        _mark("prompt"),
        _call("hook", "Bash", "c0"),
        _mark("stop"),
        _call("hook", "Bash", "c1"),
        _mark("prompt"),
        _call("hook", "Bash", "c2"),
    ]
    recorded = [_call("session-file", "Bash", f"c{i}", line=i + 1) for i in range(4)]
    (divergence,) = compare_calls(hooked, recorded)
    assert divergence.kind == "after-hooks"
    assert divergence.call_id == "c3"


@given(session=_background_session(), data=st.data())
def test_a_hook_record_stored_twice_is_one_call(
    session: tuple[list[ToolEvent], list[ToolEvent]], data: st.DataObject
) -> None:
    """A hook that gave up waiting for the resident capture process stores its event
    itself, and the resident may store it again later, anywhere after: the same call,
    seen twice, is not a call the session file lacks (nor is a removed call hidden)."""
    hooked, recorded = session
    calls = [i for i, event in enumerate(hooked) if event.event == "call"]
    if not calls:
        return
    twice = data.draw(st.lists(st.sampled_from(calls), min_size=1, max_size=3))
    for index in twice:
        hooked.insert(data.draw(st.integers(index + 1, len(hooked))), hooked[index])
    assert compare_calls(hooked, recorded) == ()
    removed = recorded.pop(data.draw(st.integers(0, len(recorded) - 1)))
    (divergence,) = compare_calls(hooked, recorded)
    assert divergence.kind == "missing-from-transcript"
    assert divergence.call_id == removed.call_id


def test_a_repeated_id_with_another_tool_is_still_a_missing_call() -> None:
    hooked, recorded = _witnesses(["Bash", "Read"], ids=True)
    hooked.insert(3, _call("hook", "Edit", "c0"))  # c0 again, but another tool
    (divergence,) = compare_calls(hooked, recorded)
    assert (divergence.kind, divergence.call_id, divergence.tool) == (
        "missing-from-transcript",
        "c0",
        "Edit",
    )


def _answer(call_id: str, status: Literal["ok", "error"], line: int) -> ToolEvent:
    return ToolEvent(
        event="result",
        source="session-file",
        client="claude-code",
        session_id="s",
        call_id=call_id,
        status=status,
        line=line,
    )


@pytest.mark.parametrize(
    ("answers", "refused"),
    [
        (["error"], True),
        (["error", "ok"], False),
        (["ok", "error"], False),
        (["ok"], False),
    ],
)
def test_only_a_call_answered_in_error_alone_counts_as_refused_before_the_hooks(
    answers: list[Literal["ok", "error"]], refused: bool
) -> None:
    hooked, recorded = _witnesses(["Bash"], ids=True)
    recorded.append(_call("session-file", "Write", "added", line=50))
    recorded += [_answer("added", status, 51 + n) for n, status in enumerate(answers)]
    (divergence,) = compare_calls(hooked, recorded)
    assert divergence.kind == "unseen-by-hooks"
    assert divergence.refused is refused


@pytest.mark.parametrize(
    "kind", ["missing-from-transcript", "unseen-by-hooks", "after-hooks", "input-differs"]
)
@pytest.mark.parametrize("refused", [False, True])
def test_a_divergence_names_its_call_without_a_doubled_word_or_its_line(
    kind: str, refused: bool
) -> None:
    """Codex names its calls `call_…`: the text never reads "call call_2"; the line is the
    finding's location (shown once by the finding), not repeated in its message."""
    divergence = Divergence(kind, "Bash", "call_2", 29, 0, refused)  # type: ignore[arg-type]
    text = divergence.describe()
    assert "call call" not in text
    assert "Bash call with id call_2" in text
    assert "29" not in text
