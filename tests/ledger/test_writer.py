"""Tests for agc.ledger._writer: attempts, sealing and re-sealing, fail-open ."""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agc._core.digest import new_hasher
from agc.errors import SidecarMismatchError, TornTailError, TurnIdInvalidError
from agc.ledger import AgentDb, TurnRecorder, check_turn_file
from agc.ledger._writer import TurnLedgerFile
from tests.conftest import examples
from tests.ledger.helpers import TURN_ID, Clock, command, completed, mcp, record_turn, records

REACHES_INSIDE = {
    "agc.ledger._writer": "opens the turn file writer directly, past the recorder",
}


def _b3(data: bytes) -> str:
    hasher = new_hasher("blake3")
    hasher.update(data)
    return hasher.hexdigest()


def test_finish_seals_the_file_with_a_b3sum_sidecar(project: Path) -> None:
    outcome = record_turn(project, [command("c1", "ls")])
    path = outcome.turn_file
    assert path == project / ".agent/runtime/direct-codex/turns" / f"{TURN_ID}.jsonl"
    sidecar = path.with_name(path.name + ".b3").read_text()
    assert sidecar == f"{_b3(path.read_bytes())}  {path.name}\n"
    assert outcome.seal is not None
    assert outcome.seal.records == 4  # turn_start, item, turn_end, seal


def test_seal_record_covers_every_byte_before_it(project: Path) -> None:
    outcome = record_turn(project, [command("c1", "ls")])
    data = outcome.turn_file.read_bytes()
    prefix, seal_line = data.rstrip(b"\n").rsplit(b"\n", 1)
    seal = json.loads(seal_line)
    assert seal["recordType"] == "direct.codex.seal"
    assert seal["prefixDigest"] == _b3(prefix + b"\n")
    assert seal["prefixBytes"] == len(prefix) + 1
    assert seal["prefixRecords"] == 3


def test_second_attempt_appends_and_reseals(project: Path) -> None:
    first = record_turn(project, [command("c1", "ls")], prompt="one")
    before = first.turn_file.read_bytes()
    second = record_turn(project, [command("c2", "ls"), command("c3", "ls")], prompt="two")
    after = second.turn_file.read_bytes()
    assert after.startswith(before)  # never truncated
    assert second.attempt == 2
    kinds = [(r["recordType"], r.get("attempt")) for r in records(second.turn_file)]
    assert kinds.count(("direct.codex.turn_start", 2)) == 1
    assert [
        r["seq"] for r in records(second.turn_file) if r["recordType"] == "direct.codex.item"
    ] == [1, 1, 2]
    sidecar = second.turn_file.with_name(second.turn_file.name + ".b3").read_text()
    assert sidecar.split()[0] == _b3(after)
    assert check_turn_file(second.turn_file).ok


def test_summaries_use_the_last_attempt(project: Path) -> None:
    record_turn(project, [mcp("m", "taonier_prepare_game_art", {"brief": "first"})])
    record_turn(project, [mcp("m", "taonier_prepare_game_art", {"brief": "second"})])
    last = AgentDb(project / ".agent/agent.db").last("direct.codex.turn", TURN_ID)
    assert last is not None
    assert last["attempt"] == 2
    assert last["firstDesign"]["briefPreview"] == "second"


def test_changed_sealed_file_is_not_appended_to_and_the_turn_goes_on(project: Path) -> None:
    first = record_turn(project, [command("c1", "ls")])
    path = first.turn_file
    path.write_bytes(path.read_bytes().replace(b'"ls"', b'"rm"'))
    tampered = path.read_bytes()
    outcome = record_turn(project, [command("c2", "ls")])  # fail-open: no exception
    assert outcome.audit_write_failed is True
    assert any("does not match its sidecar" in e for e in outcome.errors)
    assert path.read_bytes() == tampered  # nothing appended
    assert outcome.summary["auditWriteFailed"] is True


def test_ledger_file_refuses_tampered_prefix_directly(project: Path) -> None:
    path = record_turn(project, []).turn_file
    with path.open("ab") as handle:
        handle.write(b'{"recordType":"x"}\n')
    with pytest.raises(SidecarMismatchError):
        TurnLedgerFile(path)


def test_unsealed_previous_attempt_is_continued(project: Path) -> None:
    recorder = TurnRecorder.start(project, TURN_ID, prompt="crashed", clock=Clock())
    # the process dies: no finish(), the descriptor is dropped
    del recorder
    outcome = record_turn(project, [command("c1", "ls")])
    assert outcome.attempt == 2
    assert outcome.audit_write_failed is False
    report = check_turn_file(outcome.turn_file)
    assert report.ok
    assert {f.code for f in report.findings} == {"turn-end-missing", "attempt-unsealed"}


def test_a_later_attempt_that_died_before_sealing_is_continued(project: Path) -> None:
    # A second turn with the same id is a new attempt. When attempt 2 dies before
    # its seal, the sidecar still seals attempt 1; attempt 3 must continue the file
    # (as after a first attempt that died), not be refused for ever.
    first = record_turn(project, [command("c1", "ls")])
    sealed = first.turn_file.read_bytes()
    recorder = TurnRecorder.start(project, TURN_ID, prompt="crashed", clock=Clock())
    recorder.observe_notification(command("c2", "ls"))
    del recorder  # the process dies: no finish()
    third = record_turn(project, [command("c3", "ls")])
    assert third.audit_write_failed is False, third.errors
    assert third.attempt == 3
    assert third.turn_file.read_bytes().startswith(sealed)
    report = check_turn_file(third.turn_file)
    assert report.ok, report.findings
    assert {(f.code, f.attempt) for f in report.findings} == {
        ("turn-end-missing", 2),
        ("attempt-unsealed", 2),
    }


def test_records_appended_after_the_seal_without_a_new_attempt_are_refused(
    project: Path,
) -> None:
    path = record_turn(project, [command("c1", "ls")]).turn_file
    item = next(r for r in records(path) if r["recordType"] == "direct.codex.item")
    with path.open("ab") as handle:
        handle.write(json.dumps(item).encode() + b"\n")
    outcome = record_turn(project, [command("c2", "ls")])
    assert outcome.audit_write_failed is True
    assert any("does not match its sidecar" in e for e in outcome.errors)


def test_torn_tail_is_refused_fail_open(project: Path) -> None:
    path = project / ".agent/runtime/direct-codex/turns" / f"{TURN_ID}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(b'{"recordType":"direct.codex.turn_start"')
    outcome = record_turn(project, [command("c1", "ls")])
    assert outcome.audit_write_failed is True
    assert path.read_bytes() == b'{"recordType":"direct.codex.turn_start"'
    with pytest.raises(TornTailError):
        TurnLedgerFile(path)


def test_a_locked_turn_file_fails_open(project: Path) -> None:
    path = project / ".agent/runtime/direct-codex/turns" / f"{TURN_ID}.jsonl"
    path.parent.mkdir(parents=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        outcome = record_turn(project, [command("c1", "ls")])
    finally:
        os.close(fd)
    assert outcome.audit_write_failed is True
    assert any("already open" in e for e in outcome.errors)
    assert outcome.db_written is True


def test_a_refused_attempt_has_its_own_number_in_the_summary(project: Path) -> None:
    # The agent.db summary of an attempt whose turn file could not be opened (locked
    # here) must not claim to be attempt 1: readers take the last row, and
    # attempt 1 is another, real attempt in the file.
    path = record_turn(project, [command("c1", "ls")]).turn_file
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        outcome = record_turn(project, [command("c2", "ls")])
    finally:
        os.close(fd)
    assert outcome.audit_write_failed is True
    assert outcome.attempt == 2
    last = AgentDb(project / ".agent" / "agent.db").last("direct.codex.turn", TURN_ID)
    assert last is not None
    assert last["attempt"] == 2


def test_a_symlinked_turn_file_is_never_read_to_count_attempts(
    project: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.jsonl"
    outside.write_bytes(b'{"recordType":"direct.codex.turn_start"}\n' * 3)
    turns = project / ".agent/runtime/direct-codex/turns"
    turns.mkdir(parents=True)
    (turns / f"{TURN_ID}.jsonl").symlink_to(outside)
    outcome = record_turn(project, [command("c1", "ls")])
    assert outcome.audit_write_failed is True
    assert outcome.attempt == 1  # the three turn_start lines outside were not counted


_LONG_LINE_BYTES = 48 * 1024 * 1024


def _append_long_turn_start(path: Path, attempt: int) -> None:
    """Append a 48 MiB line that is a ``turn_start`` object (written in 1 MiB pieces,
    never held whole): a record only by its JSON, far over the readers' line limit."""
    head = json.dumps(
        {
            "recordType": "direct.codex.turn_start",
            "clientTurnId": TURN_ID,
            "attempt": attempt,
            "pad": "",
        }
    ).encode()[:-2]  # up to the pad's '"'
    piece = b"A" * (1024 * 1024)
    with path.open("ab") as handle:
        handle.write(head)
        for _ in range(_LONG_LINE_BYTES // len(piece)):
            handle.write(piece)
        handle.write(b'"}\n')


def _streamed_digest(path: Path, limit: int | None = None) -> str:
    hasher = new_hasher("blake3")
    with path.open("rb") as handle:
        left = path.stat().st_size if limit is None else limit
        while left and (chunk := handle.read(min(left, 1 << 20))):
            hasher.update(chunk)
            left -= len(chunk)
    return hasher.hexdigest()


def _record_traced(project: Path) -> tuple[Any, int]:
    """Record one attempt; its outcome and the peak of traced memory meanwhile (hashing
    the existing bytes alone holds two 8 MiB chunks; a line read whole adds 48 MiB)."""
    tracemalloc.start()
    try:
        outcome = record_turn(project, [command("c2", "ls")])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return outcome, peak


def test_a_huge_line_after_the_seal_is_judged_as_check_judges_it_in_bounded_memory(
    project: Path,
) -> None:
    """A project writer appends a 48 MiB line after the seal, a turn_start by its JSON.
    The recorder reads the file to decide whether a later attempt died before its seal;
    it reads no line whole and, as `check`, takes the line for no record: the file does
    not match its sidecar, nothing is appended (fail-open), and check says
    record-invalid for that line."""
    path = record_turn(project, [command("c1", "ls")]).turn_file
    _append_long_turn_start(path, attempt=2)
    size, digest = path.stat().st_size, _streamed_digest(path)
    outcome, peak = _record_traced(project)
    assert peak < _LONG_LINE_BYTES // 2, f"peak {peak} bytes for a {_LONG_LINE_BYTES} line"
    assert outcome.audit_write_failed is True
    assert any("does not match its sidecar" in e for e in outcome.errors), outcome.errors
    assert outcome.attempt == 2  # the long line is no turn_start: one attempt before
    assert (path.stat().st_size, _streamed_digest(path)) == (size, digest)  # untouched
    report = check_turn_file(path)
    invalid = [f for f in report.errors if f.code == "record-invalid"]
    assert len(invalid) == 1
    assert "longer than" in invalid[0].message


def test_a_huge_line_in_an_unsealed_file_is_counted_as_no_record_in_bounded_memory(
    project: Path,
) -> None:
    """A file without a sidecar (an attempt that died) is continued, as ever, whatever
    it holds; counting its attempts reads no line whole and counts the 48 MiB line as
    no turn_start, as `check` does. The existing bytes are kept as they were."""
    recorder = TurnRecorder.start(project, TURN_ID, prompt="crashed", clock=Clock())
    del recorder  # the process dies: no finish(), no sidecar
    path = project / ".agent/runtime/direct-codex/turns" / f"{TURN_ID}.jsonl"
    _append_long_turn_start(path, attempt=2)
    size, digest = path.stat().st_size, _streamed_digest(path)
    outcome, peak = _record_traced(project)
    assert peak < _LONG_LINE_BYTES // 2, f"peak {peak} bytes for a {_LONG_LINE_BYTES} line"
    assert outcome.audit_write_failed is False, outcome.errors
    assert outcome.attempt == 2  # one turn_start before; the long line is none
    assert path.stat().st_size > size
    assert _streamed_digest(path, limit=size) == digest  # appended after, nothing changed
    codes = [f.code for f in check_turn_file(path).errors]
    assert codes.count("record-invalid") == 1


def test_db_failure_is_reported_not_raised(project: Path) -> None:
    (project / ".agent").mkdir()
    (project / ".agent" / "agent.db").write_bytes(b"this is not sqlite" * 100)
    outcome = record_turn(project, [command("c1", "ls")])
    assert outcome.db_written is False
    assert any("agent.db" in e for e in outcome.errors)
    assert outcome.seal is not None  # the turn file itself is fine


def test_finish_twice_returns_the_same_outcome_and_observe_after_is_ignored(project: Path) -> None:
    recorder = TurnRecorder.start(project, TURN_ID, prompt="p", clock=Clock())
    first = recorder.finish(completed=False)
    recorder.observe_notification(command("late", "ls"))
    assert recorder.finish(completed=True) is first
    assert first.completed is False
    assert first.item_count == 0


def test_observe_notification_ignores_other_methods(project: Path) -> None:
    recorder = TurnRecorder.start(project, TURN_ID, prompt="p", clock=Clock())
    recorder.observe_notification(
        {"method": "item/started", "params": {"item": {"type": "commandExecution"}}}
    )
    recorder.observe_notification(command("c1", "ls"))
    assert recorder.finish(completed=True).item_count == 1


def test_invalid_turn_id_raises_before_anything_is_written(project: Path) -> None:
    with pytest.raises(TurnIdInvalidError):
        TurnRecorder.start(project, "../../x", prompt="p")
    assert not (project / ".agent").exists()


def test_sha256_sidecar_is_kept_for_later_attempts(project: Path) -> None:
    recorder = TurnRecorder.start(project, TURN_ID, prompt="p", clock=Clock(), algorithm="sha256")
    path = recorder.finish(completed=True).turn_file
    assert path.with_name(path.name + ".sha256").exists()
    second = record_turn(project, [])  # default blake3, but the file is SHA-256 sealed
    assert second.seal is not None
    assert second.seal.algorithm == "sha256"
    assert not path.with_name(path.name + ".b3").exists()
    assert check_turn_file(path).ok


def test_symlinked_turn_file_is_not_followed(project: Path, tmp_path: Path) -> None:
    folder = project / ".agent/runtime/direct-codex/turns"
    folder.mkdir(parents=True)
    target = tmp_path / "elsewhere.jsonl"
    target.write_bytes(b"")
    (folder / f"{TURN_ID}.jsonl").symlink_to(target)
    outcome = record_turn(project, [command("c1", "ls")])
    assert outcome.audit_write_failed is True
    assert target.read_bytes() == b""


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=15),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=12,
)


@settings(
    max_examples=examples(30),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    st.lists(
        st.one_of(
            _JSON,
            st.builds(
                completed,
                st.dictionaries(
                    st.sampled_from(
                        [
                            "type",
                            "id",
                            "status",
                            "command",
                            "commandActions",
                            "changes",
                            "path",
                            "tool",
                            "arguments",
                        ]
                    ),
                    _JSON,
                ),
            ),
        ),
        max_size=8,
    )
)
def test_property_any_events_are_recorded_and_check_clean(events: list[Any]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp)
        lines = [json.dumps(e) for e in events]
        outcome = record_turn(project, lines)
        assert outcome.audit_write_failed is False
        assert check_turn_file(outcome.turn_file).ok
