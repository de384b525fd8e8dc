"""A Codex call on an input line over 1 MiB whose arguments (a JSON object in a string)
are over 64 KiB: the cut copy of the line cuts that string, and the call is still
recorded from what is whole of it: its command (marked truncated when the cut fell in
it), the reads inferred from that command, a patch's whole headers."""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path
from typing import Any

import pytest

from agc.ledger import MAX_READ_LINE_BYTES, LedgerPolicy, check_turn_file, record_turn
from tests.ledger.helpers import DIRECT_PROJECT, Clock, items

HUGE = 2 * MAX_READ_LINE_BYTES  # each generated line is over the read limit
README = b"# The project\n"


def _line(payload: dict[str, Any]) -> bytes:
    """One rollout line; ``ensure_ascii`` keeps it one line of plain JSON text."""
    record = {"timestamp": "2026-02-23T11:41:38.901Z", "type": "response_item", "payload": payload}
    return json.dumps(record, separators=(",", ":")).encode() + b"\n"


def _function_call(name: str, arguments: dict[str, Any]) -> list[bytes]:
    call = {"type": "function_call", "name": name, "arguments": json.dumps(arguments),
            "call_id": "call_big"}  # fmt: skip
    output = {"type": "function_call_output", "call_id": "call_big", "output": "ok"}
    return [_line(call), _line(output)]


def _recorded(
    project: Path, lines: list[bytes], *, policy: LedgerPolicy | None = None
) -> dict[str, Any]:
    """The one item recorded from ``lines`` read as a file (so that a line over the
    read limit is decoded from its cut copy); the line was over the limit."""
    assert max(len(line) for line in lines) > MAX_READ_LINE_BYTES
    project.mkdir(exist_ok=True)
    (project / "README.md").write_bytes(README)
    outcome = record_turn(
        io.BytesIO(b"".join(lines)),
        project=project,
        client_turn_id="Cut123-abc",
        prompt="look at the project",
        policy=policy,
        clock=Clock(),
    )
    assert outcome.input is not None
    assert outcome.input.overlong_lines == [1]
    assert check_turn_file(outcome.turn_file).ok
    (item,) = items(outcome.turn_file)
    return item


_README_READ = {
    "path": "README.md",
    "contentSha256": hashlib.sha256(README).hexdigest(),
    "hashSkipped": None,
}
_HEREDOC = "cat > notes.txt <<'EOF'\n" + 'a "quoted" line\n' * (HUGE // 16) + "EOF"


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("exec_command", {"cmd": "cat README.md", "justification": 'x"y' * HUGE}),
        ("shell", {"command": ["bash", "-lc", "cat README.md"], "note": "\\" * HUGE}),
    ],
    ids=["exec_command", "shell"],
)
def test_a_whole_command_beside_a_huge_member_is_recorded_whole(
    tmp_path: Path, name: str, arguments: dict[str, Any]
) -> None:
    item = _recorded(tmp_path / "p", _function_call(name, arguments))
    assert item["itemType"] == "commandExecution"
    assert item["command"] == "cat README.md"
    assert "commandTruncated" not in item
    assert item["inferredReads"] == [_README_READ]


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("exec_command", {"cmd": f"cat README.md && {_HEREDOC}", "workdir": "/w"}),
        ("shell", {"command": ["bash", "-lc", f"cd . && cat README.md; {_HEREDOC}"]}),
    ],
    ids=["exec_command", "shell"],
)
def test_a_huge_command_keeps_its_beginning_and_the_reads_it_holds(
    tmp_path: Path, name: str, arguments: dict[str, Any]
) -> None:
    item = _recorded(tmp_path / "p", _function_call(name, arguments))
    assert item["commandTruncated"] is True
    assert "README.md" in item["command"]
    assert item["inferredReads"] == [_README_READ]  # notes.txt is written, not read


def test_the_command_the_cut_fell_in_gives_no_read(tmp_path: Path) -> None:
    """The last simple command of a cut script may have lost its end (here a file
    name's tail): no read is inferred from it, not even of its whole operands."""
    script = "cat README.md " + "A" * HUGE
    item = _recorded(tmp_path / "p", _function_call("exec_command", {"cmd": script}))
    assert item["commandTruncated"] is True
    assert item["command"].startswith("cat README.md AAAA")
    assert "inferredReads" not in item


def test_the_read_before_a_cut_command_is_inferred(tmp_path: Path) -> None:
    """The control: the same cut, after a whole ``cat README.md;``, infers that read."""
    script = "cat README.md; cat " + "A" * HUGE
    item = _recorded(tmp_path / "p", _function_call("exec_command", {"cmd": script}))
    assert item["inferredReads"] == [_README_READ]


def test_a_local_shell_call_whose_script_was_cut(tmp_path: Path) -> None:
    argv = ["bash", "-lc", f"cat README.md; {_HEREDOC}"]
    call = {"type": "local_shell_call", "call_id": "call_big", "status": "completed",
            "action": {"type": "exec", "command": argv}}  # fmt: skip
    item = _recorded(tmp_path / "p", [_line(call)])
    assert item["commandTruncated"] is True
    assert "\u2026sha256:" not in item["command"]
    assert item["inferredReads"] == [_README_READ]


def test_a_huge_patch_keeps_its_whole_headers(tmp_path: Path) -> None:
    patch = (
        "*** Begin Patch\n*** Add File: docs/a.md\n"
        + '+a "line"\n' * (HUGE // 8)
        + "*** Add File: docs/b.md\n+b\n*** End Patch\n"
    )
    item = _recorded(tmp_path / "p", _function_call("apply_patch", {"input": patch}))
    assert item["itemType"] == "fileChange"
    assert item["changes"] == [{"path": "docs/a.md", "kind": "add"}]
    assert item["changesTruncated"] is True


def test_a_cut_member_of_other_calls_is_left_out(tmp_path: Path) -> None:
    """An MCP call whose policy keeps ``path`` and the length of ``content``: the whole
    ``path`` is kept, the ``content`` the cut fell in is not passed on as if whole (its
    length would be the cut copy's)."""
    arguments = {"path": "README.md", "content": "c" * HUGE}
    lines = _function_call("mcp__agc_tools__agc_write_file", arguments)
    item = _recorded(tmp_path / "p", lines, policy=DIRECT_PROJECT)
    assert item["itemType"] == "mcpToolCall"
    assert item["tool"] == "agc_write_file"
    assert item["arguments"] == {"path": "README.md"}


def test_a_command_member_before_a_cut_is_not_taken_for_what_exec_command_ran(
    tmp_path: Path,
) -> None:
    """exec_command runs `cmd`: a `command` member before the cut, with `cmd` after it,
    is not what ran, so it infers no read and is marked cut."""
    arguments = {"command": "cat README.md", "justification": "x" * HUGE, "cmd": "echo hi"}
    item = _recorded(tmp_path / "p", _function_call("exec_command", arguments))
    assert item["commandTruncated"] is True
    assert item.get("inferredReads", []) == []
