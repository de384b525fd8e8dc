"""Tests for agc.ledger.record_turn: the decode -> record -> finish loop of one turn."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from agc.errors import FileUnreadableError, UsageError
from agc.ledger import check_turn_file, record_turn
from tests.ledger.helpers import TURN_ID, Clock, command, items, turn_end

TURN_COMPLETED = {"method": "turn/completed", "params": {"turn": {"status": "completed"}}}


def _lines(*events: object) -> list[bytes]:
    return [json.dumps(e).encode() + b"\n" for e in events]


def test_records_items_counts_the_input_and_takes_completed_from_it(project: Path) -> None:
    lines = [*_lines(command("c1", "ls"), TURN_COMPLETED), b"not json\n"]
    seen: list[int] = []
    outcome = record_turn(
        lines, project=project, client_turn_id=TURN_ID, prompt="p", on_progress=seen.append
    )
    assert outcome.completed is True
    assert outcome.item_count == 1
    assert outcome.seal is not None
    assert outcome.input is not None
    assert (outcome.input.lines, outcome.input.items, outcome.input.invalid_lines) == (3, 1, 1)
    assert outcome.to_dict()["input"]["lines"] == 3
    assert seen == [len(lines[0]), len(lines[0]) + len(lines[1]), sum(map(len, lines))]
    assert check_turn_file(outcome.turn_file).ok


def test_an_input_that_never_says_completed_is_not_completed(project: Path) -> None:
    outcome = record_turn(
        _lines(command("c1", "ls")), project=project, client_turn_id=TURN_ID, prompt="p"
    )
    assert outcome.completed is False
    assert turn_end(outcome.turn_file)["completed"] is False
    forced = record_turn(
        _lines(command("c1", "ls")),
        project=project,
        client_turn_id=TURN_ID,
        prompt="p",
        completed=True,
    )
    assert forced.completed is True


def _failing_stream(exc: BaseException) -> Iterator[bytes]:
    yield from _lines(command("c1", "ls"))
    raise exc


def test_a_failing_read_finishes_and_seals_the_attempt_then_raises(project: Path) -> None:
    with pytest.raises(FileUnreadableError, match=r"reading events from events\.jsonl failed"):
        record_turn(
            _failing_stream(OSError(5, "Input/output error")),
            project=project,
            client_turn_id=TURN_ID,
            prompt="p",
            source="events.jsonl",
            clock=Clock(),
        )
    turn_file = project / ".agent/runtime/direct-codex/turns" / f"{TURN_ID}.jsonl"
    assert [i["command"] for i in items(turn_file)] == ["ls"]
    assert turn_end(turn_file)["completed"] is False
    assert check_turn_file(turn_file).ok


def test_an_interrupt_finishes_the_attempt_and_propagates(project: Path) -> None:
    with pytest.raises(KeyboardInterrupt):
        record_turn(
            _failing_stream(KeyboardInterrupt()),
            project=project,
            client_turn_id=TURN_ID,
            prompt="p",
        )
    turn_file = project / ".agent/runtime/direct-codex/turns" / f"{TURN_ID}.jsonl"
    assert turn_end(turn_file)["completed"] is False
    assert check_turn_file(turn_file).ok


def test_a_relative_agent_root_is_a_usage_error_and_writes_nothing(project: Path) -> None:
    with pytest.raises(UsageError, match="not an absolute path"):
        record_turn([], project=project, client_turn_id=TURN_ID, prompt="p", agent_roots=["x/y"])
    assert not (project / ".agent").exists()
