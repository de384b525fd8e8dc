"""A real call line torn at every byte offset: the call's tool is named when its name
survived the cut, never guessed from a name the cut ends inside.

Each real Claude Code session and Codex rollout in ../shared/fixtures/real gives its
first line holding a tool call (a ``tool_use`` block, a ``function_call``); the file is
cut inside that line at each offset. The repair drops the torn line, and its change
carries the tool's name exactly when the fragment holds the name's whole string.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from agc.cli.app import main
from agc.resume import load_history, repair_loaded
from tests.conftest import REAL_FIXTURES
from tests.resume.helpers import need, shared_params

_CALL_TYPES = ("function_call", "custom_tool_call")


def _call_of(record: Any) -> tuple[str, str] | None:
    """The ``type`` of a record's first tool call and the call's tool name, or None
    when the record holds no named call."""
    if not isinstance(record, dict):
        return None
    message = record.get("message")
    if record.get("type") == "assistant" and isinstance(message, dict):
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_use":
                return "tool_use", str(block["name"])
    payload = record.get("payload")
    if record.get("type") == "response_item" and isinstance(payload, dict):
        kind = payload.get("type")
        if kind in _CALL_TYPES and isinstance(payload.get("name"), str):
            return kind, payload["name"]
    return None


def _first_call_line(path: Path) -> tuple[bytes, bytes, str, int]:
    """(the lines before the first call line, that line, its tool name, the offset just
    after the name's string); skips the test when the file holds no named call."""
    lines = path.read_bytes().split(b"\n")
    for index, line in enumerate(lines):
        try:
            call = _call_of(json.loads(line))
        except ValueError:
            continue
        if call is None:
            continue
        kind, name = call
        opening = re.search(rb'"type"\s*:\s*"' + kind.encode() + b'"', line)
        assert opening is not None
        start = opening.start()
        named = re.compile(rb'"name"\s*:\s*' + re.escape(json.dumps(name).encode()))
        found = named.search(line, start)
        assert found is not None, f"{path.name}: the call's name is not where Codex/Claude put it"
        return b"".join(part + b"\n" for part in lines[:index]), line, name, found.end()
    pytest.skip(f"{path.name} holds no named tool call")


_FILES = [
    *shared_params(REAL_FIXTURES / "claude-code", "*.jsonl"),
    *shared_params(REAL_FIXTURES / "codex-rollout", "*.jsonl"),
]


@pytest.mark.parametrize("path", _FILES)
def test_a_call_line_cut_at_every_offset_names_its_tool_once_the_name_is_whole(
    path: Path | None,
) -> None:
    before, line, name, name_end = _first_call_line(need(path, REAL_FIXTURES))
    named = 0
    for cut in range(1, len(line)):
        history = load_history(before + line[:cut], source="s.jsonl")
        assert history.torn is not None, cut
        changes = repair_loaded(history).report.changes
        torn = [change for change in changes if change.action == "dropped-torn-line"]
        assert len(torn) == 1, cut
        expected = name if cut >= name_end else None
        assert torn[0].tool_name == expected, (cut, line[:cut][-40:])
        named += expected is not None
    assert named == len(line) - name_end  # every cut from the name's end on


@pytest.mark.parametrize("path", _FILES)
def test_the_removed_calls_list_names_the_tool_of_a_torn_call(
    path: Path | None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`agc resume --out` names the torn call's tool in its change and among the
    removed calls (the line cut just before its end: its call id and name both whole),
    not "(unknown tool)"."""
    before, line, name, _ = _first_call_line(need(path, REAL_FIXTURES))
    source = tmp_path / "session.jsonl"
    source.write_bytes(before + line[:-2])
    assert main(["resume", str(source), "--out", str(tmp_path / "fixed.jsonl")]) == 0
    out, err = capsys.readouterr()
    (change,) = (line for line in out.splitlines() if ": dropped-torn-line " in line)
    assert f" {name}: the last line was cut off" in change  # no input: it is lost
    assert "tool call(s) removed that may have run" in err
    assert f"  {name} " in err
    assert "(unknown tool)" not in err
