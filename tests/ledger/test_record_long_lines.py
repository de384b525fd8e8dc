"""``record_turn`` on an open file reads each line through the ledger's one line reader
(:func:`agc.ledger.event_lines`): a line longer than 1 MiB is never held whole (it is
decoded from a copy whose strings are cut), and every other line is recorded exactly as
before."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

from agc.ledger import MAX_READ_LINE_BYTES, record_turn
from tests.ledger.helpers import Clock

FIXTURE = Path(__file__).parent / "fixtures" / "codex-0.171.0" / "clean" / "exec.jsonl"


def _record(project: Path, events: object) -> tuple[bytes, object]:
    project.mkdir()
    outcome = record_turn(
        events,  # type: ignore[arg-type]
        project=project,
        client_turn_id="Abc123-def",
        prompt="make the game",
        clock=Clock(),
    )
    return outcome.turn_file.read_bytes(), outcome


def test_a_file_records_what_its_lines_record(tmp_path: Path) -> None:
    """Normal input: the turn file is byte for byte what the same lines give."""
    lines = FIXTURE.read_bytes().splitlines(keepends=True)
    from_lines, _ = _record(tmp_path / "lines", lines)
    with FIXTURE.open("rb") as handle:
        from_file, _ = _record(tmp_path / "file", handle)
    assert from_file == from_lines
    assert b"direct.codex.item" in from_file


def _peak(project: Path, events: Path) -> tuple[bytes, object, int]:
    """Record ``events`` from the open file; the peak of Python's allocations meanwhile."""
    tracemalloc.start()
    try:
        with events.open("rb") as handle:
            recorded, outcome = _record(project, handle)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return recorded, outcome, peak


def test_a_long_line_is_counted_not_held(tmp_path: Path) -> None:
    """A 48 MiB line (of a kind the ledger ignores) between the lines of a real
    recording: the peak of Python's allocations is what the recording alone takes (plus
    a few line pieces), far below the line's size; the line is counted as overlong, and
    the turn file is what the recording alone gives."""
    lines = FIXTURE.read_bytes().splitlines(keepends=True)
    plain = tmp_path / "plain.jsonl"
    plain.write_bytes(b"".join(lines))
    long_line = b'{"type": "agc.noise", "text": "' + b"a" * (48 << 20) + b'"}\n'
    events = tmp_path / "events.jsonl"
    with events.open("wb") as out:
        out.writelines([lines[0], long_line, *lines[1:]])
    expected, _, baseline = _peak(tmp_path / "plain", plain)
    recorded, outcome, peak = _peak(tmp_path / "long", events)
    assert peak <= baseline + 3 * MAX_READ_LINE_BYTES, (peak, baseline)
    assert peak < len(long_line) // 4
    assert recorded == expected
    stats = outcome.input  # type: ignore[attr-defined]
    assert stats.overlong_lines == [2]
    assert stats.lines == len(lines) + 1
    assert json.loads(json.dumps(stats.to_dict()))["overlongLines"] == [2]
