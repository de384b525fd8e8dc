"""Tests for agc.capture's comparison of the hooks' calls with the session file's calls:
every added, removed or replaced call is found alone, whether the client gives call ids
or not."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agc.capture import ToolEvent
from agc.capture import _crosscheck as crosscheck
from agc.capture._crosscheck import _common, compare_calls

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
    # calls were never theirs to see; a call after their last one, with no stop seen,
    # is outside their window too.
    _, recorded = _witnesses(["Read", "Bash", "Edit", "Bash"], ids=True)
    hooked = [_call("hook", "Bash", "c1"), _call("hook", "Edit", "c2")]
    assert compare_calls(hooked, recorded) == ()
    hooked.append(_mark("stop"))
    (divergence,) = compare_calls(hooked, recorded)
    assert (divergence.kind, divergence.call_id, divergence.line) == ("unseen-by-hooks", "c3", 7)


def test_a_divergence_says_which_call_and_where() -> None:
    hooked, recorded = _witnesses(["Bash", "Read"], ids=True)
    recorded.pop(0)
    recorded.append(_call("session-file", "Edit", "x9", line=12))
    texts = [d.describe() for d in compare_calls(hooked, recorded)]
    assert texts == [
        "the hooks saw the Bash call c0 (hook call 1); the transcript lacks it",
        "the transcript holds the Edit call x9 at line 12; the hooks never saw it",
    ]


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
