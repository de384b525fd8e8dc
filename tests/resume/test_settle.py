"""A session file read with ``settle`` (``scan_session``: the messages of a settled start
let go of as the file is read) checks and repairs exactly as the file read whole: the
same report, the same repaired bytes, the same changes; and it holds only the messages
from the first problem on."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agc.errors import AgcError
from agc.resume import (
    History,
    Strategy,
    check_loaded,
    idempotency_key,
    load_history,
    repair_loaded,
    repair_streamed,
    scan_session,
)
from tests.conftest import examples
from tests.resume.helpers import REAL_FIXTURES, need, shared_params
from tests.resume.test_repair import _EVENT, _claude_lines, _codex_lines

GOLDEN = Path(__file__).resolve().parent / "golden"
FIXTURES = [
    *(pytest.param(path, id=path.name) for path in sorted(GOLDEN.glob("*.jsonl"))),
    *shared_params(REAL_FIXTURES, "*/*.jsonl"),
]


def _same_as_whole(path: Path, settle: int, strategy: Strategy, out: Path) -> History | None:
    """Assert that the settled read of ``path`` checks and repairs as the whole read;
    return the settled history (``None`` when both refuse the file alike)."""
    refused: AgcError | None = None
    try:
        whole = load_history(path.read_bytes(), source=str(path))
    except AgcError as exc:
        refused = exc
    if refused is not None:
        with pytest.raises(type(refused), match=re.escape(str(refused))):
            scan_session(path, source=str(path), format=None, settle=settle)
        return None
    assert whole is not None
    settled = scan_session(path, source=str(path), format=None, settle=settle)
    kept = len(settled.messages)
    assert check_loaded(settled).to_dict() == check_loaded(whole).to_dict()
    expected = repair_loaded(whole, strategy=strategy)
    again = scan_session(path, source=str(path), format=None, settle=settle)
    with out.open("wb") as sink:
        report = repair_streamed(
            again,
            sink,
            lambda: scan_session(out, source="out", format=again.format, settle=settle),
            strategy=strategy,
        )
    assert out.read_bytes() == expected.data
    assert report.to_dict() == expected.report.to_dict()
    settled.messages = settled.messages[:kept]  # what the read held (the repair empties it)
    return settled


@pytest.mark.parametrize("strategy", ["strip", "synthesize"])
@pytest.mark.parametrize("path", FIXTURES)
def test_a_settled_read_checks_and_repairs_as_the_whole_read(
    path: Path | None, strategy: Strategy, tmp_path: Path
) -> None:
    path = need(path, REAL_FIXTURES)
    _same_as_whole(path, 1, strategy, tmp_path / "out.jsonl")


@pytest.mark.parametrize(
    "path",
    [
        *shared_params(REAL_FIXTURES / "claude-code", "*.jsonl"),
        *shared_params(REAL_FIXTURES / "codex-rollout", "*.jsonl"),
    ],
)
def test_a_real_session_is_let_go_of_up_to_its_first_problem(
    path: Path | None, tmp_path: Path
) -> None:
    path = need(path, REAL_FIXTURES)
    whole = load_history(path.read_bytes(), source=str(path))
    report = check_loaded(whole)
    settled = _same_as_whole(path, 1, "synthesize", tmp_path / "out.jsonl")
    assert settled is not None
    first = min((f.message_index or 0 for f in report.findings), default=len(whole.messages))
    if first < 2:
        pytest.skip(f"{path.name} breaks a rule in its first messages: nothing settles")
    assert settled.settled is not None
    # Held: at most the messages from the last quiet point before the first problem.
    assert settled.settled.messages + len(settled.messages) == len(whole.messages)
    assert settled.settled.messages >= 1
    assert len(settled.messages) <= len(whole.messages) - settled.settled.messages


_FRESH = st.integers(min_value=1, max_value=3)


@st.composite
def _turns(draw: st.DrawFn) -> list[tuple[Any, ...]]:
    """Events of a session: mostly well-formed turns (calls with fresh ids, then their
    results), between the breakages of ``_EVENT`` and events that reuse an id of an
    earlier turn (a call again, or a second result)."""
    events: list[tuple[Any, ...]] = []
    fresh: list[str] = []
    for turn in range(draw(st.integers(min_value=0, max_value=14))):
        kind = draw(st.sampled_from(["turn", "turn", "turn", "event", "reuse"]))
        if kind == "turn":
            ids = [f"t{turn}-{k}" for k in range(draw(_FRESH))]
            fresh += ids
            events.append(("user", "go"))
            events.append(
                ("assistant", draw(st.sampled_from(["", "text"])), [(i, True) for i in ids], False)
            )
            events += [("result", i, False) for i in ids]
        elif kind == "event":
            events.append(draw(_EVENT))
        elif fresh:
            earlier = draw(st.sampled_from(fresh))
            if draw(st.booleans()):
                events.append(("result", earlier, False))
            else:
                events.append(("assistant", "", [(earlier, True)], False))
    return events


@st.composite
def sessions(draw: st.DrawFn) -> bytes:
    """A Claude Code session or a Codex rollout of :func:`_turns` (its lines split or
    not, with noise lines or not; a rollout with a ``compacted`` line or not)."""
    events = draw(_turns())
    if draw(st.booleans()):
        return _claude_lines(events, draw(st.booleans()), draw(st.booleans()))
    data = _codex_lines(events, draw(st.booleans()))
    compacted = draw(st.integers(min_value=-1, max_value=6))
    if compacted >= 0:
        # A Codex `compacted` line: the history starts again after it.
        lines = data.splitlines(keepends=True)
        at = min(len(lines), 1 + compacted * 2)
        line = json.dumps({"timestamp": "t", "type": "compacted", "payload": {"message": "m"}})
        data = b"".join([*lines[:at], line.encode() + b"\n", *lines[at:]])
    return data


@settings(max_examples=examples(300), deadline=None)
@given(
    data=sessions(),
    settle=st.integers(min_value=1, max_value=4),
    strategy=st.sampled_from(["strip", "synthesize"]),
)
def test_property_settled_reads_check_and_repair_as_the_whole_read(
    data: bytes,
    settle: int,
    strategy: Strategy,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    folder = tmp_path_factory.mktemp("settle")
    path = folder / "session.jsonl"
    path.write_bytes(data)
    _same_as_whole(path, settle, strategy, folder / "out.jsonl")


@pytest.mark.parametrize("strategy", ["strip", "synthesize"])
def test_a_call_reusing_the_id_of_a_call_let_go_of_gets_the_same_key(
    strategy: Strategy, tmp_path: Path
) -> None:
    """A call reusing the id of a call the settled read let go of is numbered as the
    whole read numbers it (its key counts the call let go of): same report, same keys."""
    items: list[dict[str, Any]] = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]},
        {"type": "function_call", "name": "ls", "arguments": "{}", "call_id": "c"},
        {"type": "function_call_output", "call_id": "c", "output": "a"},
    ] * 3
    items.append({"type": "function_call", "name": "rm", "arguments": "{}", "call_id": "c"})
    lines = [{"timestamp": "t", "type": "session_meta", "payload": {"id": "s"}}]
    lines += [{"timestamp": "t", "type": "response_item", "payload": item} for item in items]
    path = tmp_path / "rollout.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    settled = _same_as_whole(path, 1, strategy, tmp_path / "out.jsonl")
    assert settled is not None
    assert settled.settled is not None  # the first calls were let go of
    report = repair_loaded(load_history(path.read_bytes(), source="x"), strategy=strategy).report
    keys = {c.idempotency_key for c in report.changes if c.action == "dropped-duplicate-call"}
    assert len(keys) == 3  # the 2nd, 3rd and 4th call with the id, each its own key
    assert idempotency_key("c", session="s") not in keys


def test_a_reasoning_item_without_its_following_item_is_found_in_a_settled_read(
    tmp_path: Path,
) -> None:
    # The finding names the item's id, read from its line as the read goes on (the lines
    # read so far): not only once every line is read.
    user = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]}
    items: list[dict[str, Any]] = [{"type": "reasoning", "id": "rs-1", "summary": []}, user]
    for turn in range(4):
        items += [
            {"type": "function_call", "name": "ls", "arguments": "{}", "call_id": f"c{turn}"},
            {"type": "function_call_output", "call_id": f"c{turn}", "output": "a"},
            user,
        ]
    lines = [{"timestamp": "t", "type": "session_meta", "payload": {"id": "s"}}]
    lines += [{"timestamp": "t", "type": "response_item", "payload": item} for item in items]
    path = tmp_path / "rollout.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    for strategy in ("strip", "synthesize"):
        settled = _same_as_whole(path, 1, strategy, tmp_path / "out.jsonl")
        assert settled is not None
        report = check_loaded(settled)
        assert [f.code for f in report.findings] == ["reasoning-without-following"]
        assert "'rs-1'" in report.findings[0].message
