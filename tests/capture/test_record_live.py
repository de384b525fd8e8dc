"""``agc record`` of a live session: its tool events are on disk as soon as its lines are.

A killed ``agc record`` (``kill -9``) leaves an unsealed run that ``agc recover`` seals:
the tool events read from the lines already recorded must be there too, not lost in a
buffer while the agent was quiet.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agc._core.store import StoreLayout
from agc.cli.app import main
from agc.cli.verify import main as verify_main
from agc.exitcodes import ExitCode

SCRIPT = "import sys; from agc.cli.app import main; sys.exit(main(sys.argv[1:]))"
STREAM = [
    {"type": "thread.started", "thread_id": "t-live"},
    {"type": "turn.started"},
    {"type": "item.started", "item": {"id": "i1", "type": "command_execution", "command": "ls"}},
    {
        "type": "item.completed",
        "item": {"id": "i1", "type": "command_execution", "command": "ls", "exit_code": 2},
    },
]

# Kills: os.fsync stays real here (tests/conftest.py, _fsync_off).
pytestmark = pytest.mark.real_fsync


def _wait_for_lines(path: Path, count: int, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_bytes().count(b"\n") >= count:
            return
        time.sleep(0.02)
    raise AssertionError(f"{path} never held {count} lines")


def test_a_killed_record_keeps_the_tool_events_of_the_lines_it_recorded(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", SCRIPT, "record", "--run-id", "r1", "--store", str(store)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert child.stdin is not None
    child.stdin.write(b"".join(json.dumps(line).encode() + b"\n" for line in STREAM))
    child.stdin.flush()  # the agent then goes quiet: the pipe stays open
    layout = StoreLayout(store)
    _wait_for_lines(layout.artifact_path("r1", "transcript"), len(STREAM))
    _wait_for_lines(layout.artifact_path("r1", "tool-events"), 2)
    child.send_signal(signal.SIGKILL)
    child.communicate(timeout=30)
    assert main(["recover", "r1", "--store", str(store)]) == ExitCode.OK
    # A kill leaves the last records unvouched by a crash checkpoint (as for any run).
    assert verify_main(["r1", "--store", str(store), "--allow-recovered"]) == ExitCode.OK
    capsys.readouterr()
    events = [
        json.loads(line)
        for line in layout.artifact_path("r1", "tool-events").read_bytes().splitlines()
    ]
    assert [(e["event"], e["call_id"], e["status"]) for e in events] == [
        ("call", "i1", None),
        ("result", "i1", "error"),
    ]
