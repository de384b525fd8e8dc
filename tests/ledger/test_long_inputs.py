"""Hostile long inputs: a command or text of hostile shape is recorded in bounded time.

Each test runs ``agc ledger record`` in a child process with a generous time limit (the
inputs took minutes to hours before the fix); these are hang tests, not speed figures
(those are in ``benchmarks/``).
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agc.ledger._events import item as item_module
from agc.ledger._events.item import shell_script
from agc.ledger._sanitize import _REMOTE_RE
from tests.conftest import THOROUGH

REACHES_INSIDE = {
    "agc.ledger._events": (
        "lowers the item decoder's long-command threshold; the shell-script extraction"
    ),
    "agc.ledger._sanitize": "the remote-URL pattern, whose matching time must stay linear",
}

HANG_LIMIT_S = 90
_MAIN = "from agc.cli.app import main; raise SystemExit(main())"


def _exec_item(item_id: str, command: str) -> str:
    return json.dumps(
        {
            "type": "item.completed",
            "item": {
                "id": item_id,
                "type": "command_execution",
                "command": command,
                "aggregated_output": "",
                "exit_code": 0,
                "status": "completed",
            },
        }
    )


def _record(
    tmp_path: Path, lines: list[str], *, limit_s: float = HANG_LIMIT_S
) -> list[dict[str, object]]:
    events = tmp_path / "events.jsonl"
    events.write_text("\n".join(lines) + "\n", encoding="utf-8")
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("make the game", encoding="utf-8")
    project = tmp_path / "proj"
    project.mkdir()
    argv = ["ledger", "record", "--project", str(project), "--turn-id", "Abc123-def",
            "--prompt-file", str(prompt), "--input", str(events), "--strict"]  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-c", _MAIN, *argv],
        capture_output=True,
        text=True,
        timeout=limit_s,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    long_lines = [n for n, line in enumerate(lines, start=1) if len(line) + 1 > 1024 * 1024]
    if long_lines:
        assert f"line(s) longer than 1048576 bytes (line {long_lines[0]}" in done.stderr
    turn = project / ".agent/runtime/direct-codex/turns/Abc123-def.jsonl"
    records = [json.loads(line) for line in turn.read_bytes().splitlines()]
    return [r for r in records if r["recordType"] == "direct.codex.item"]


# Runs of one piece, 64 KiB long (what the sanitizer scans of a command): each was
# read once per position by a host-path pattern (user@host: or a path's body).
HOSTILE_RUNS = ["a", "a.", "-a", "见/", "/见", "a/", "ab.c@d"]


def test_long_runs_of_one_piece_are_recorded_in_bounded_time(tmp_path: Path) -> None:
    # Each piece 3 times took about 3 minutes before the fix, seconds after. By default
    # each piece runs once, against a third of the time limit: the same margin on both
    # sides of the limit, a third of the work.
    repeats = 3 if THOROUGH else 1
    pieces = HOSTILE_RUNS * repeats
    lines = [
        _exec_item(f"item_{i}", "echo " + piece * (65536 // len(piece)))
        for i, piece in enumerate(pieces)
    ]
    recorded = _record(tmp_path, lines, limit_s=HANG_LIMIT_S * repeats / 3)
    assert len(recorded) == len(pieces)
    # "见/见/…" and "/见/见…" after echo are host paths in a command: dropped whole
    assert all(r.get("commandTruncated") or r.get("commandRedacted") for r in recorded)


def test_a_long_shell_wrapped_command_is_recorded_in_bounded_time(tmp_path: Path) -> None:
    # Past the item decoder's long-command threshold (256 KiB), within the longest
    # line an event input is decoded from (1 MiB).
    script = "echo " + "a" * (900 * 1024)
    recorded = _record(tmp_path, [_exec_item("item_1", f"bash -lc '{script}'")])
    assert recorded[0]["command"] == script[:240]
    assert recorded[0]["commandTruncated"] is True


def test_a_16_mib_line_is_recorded_from_its_cut_copy_and_reported(tmp_path: Path) -> None:
    """A line over 1 MiB is never held whole: it is decoded from a copy whose strings
    are cut, so its command is still recorded (cut at 240 characters and marked so, as
    any long command), and the command says which line was cut."""
    script = "echo " + "a" * (16 * 1024 * 1024)
    lines = [
        _exec_item("item_1", "echo before"),
        _exec_item("item_2", f"bash -lc '{script}'"),
        _exec_item("item_3", "echo after"),
    ]
    recorded = _record(tmp_path, lines)
    # The copy's command is cut before its closing quote, so it is kept as written.
    assert [r["command"] for r in recorded] == [
        "echo before",
        f"bash -lc '{script}"[:240],
        "echo after",
    ]
    assert recorded[1]["commandTruncated"] is True


_OLD_REMOTE = re.compile(
    r"[A-Za-z0-9_][A-Za-z0-9_.-]*@[A-Za-z0-9][A-Za-z0-9_.-]*:(?=[^\s:])[^\s'\"`;|&<>(){}\[\],]*"
)


@given(st.text(alphabet="ab.-_@:/ x", max_size=60))
def test_the_linear_user_at_host_pattern_finds_what_the_quadratic_one_did(text: str) -> None:
    assert [m.span("r") for m in _REMOTE_RE.finditer(text)] == [
        m.span() for m in _OLD_REMOTE.finditer(text)
    ]


@given(st.text(max_size=40), st.sampled_from(["bash", "/bin/zsh", "sh", "python3"]))
def test_a_long_wrapped_command_unwraps_as_shlex_does(script: str, shell: str) -> None:
    quoted = "'" + script.replace("'", "'\\''") + "'"
    command = f"{shell} -lc {quoted}"
    try:
        argv = shlex.split(command)
    except ValueError:
        argv = []
    expected = argv[2] if len(argv) == 3 and shell != "python3" else command
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(item_module, "_LONG_COMMAND", 0)  # the long-command path, for any size
        assert shell_script(command) == expected
    assert shell_script(command) == expected  # shlex, for a short command
