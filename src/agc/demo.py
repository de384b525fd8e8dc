"""A realistic agent run, generated from a seed, for ``agc demo`` and for tests.

The run mimics a coding agent fixing a failing test: a user prompt, assistant turns with
tool calls (shell, file reads, an edit), their results, and the matching tool events.
Everything is derived from ``random.Random(seed)`` and a fixed clock, so the same seed
gives the same bytes. :func:`demo_session` is the same task as a Claude Code session
file whose agent was killed while its last tool call ran.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["DEMO_SESSION_ID", "DemoRecord", "demo_run", "demo_session"]

_FILES = ("src/app/parser.py", "src/app/cli.py", "tests/test_parser.py", "README.md")
_COMMANDS = ("pytest -q", "ruff check .", "git diff --stat", "python -m app --help")


@dataclass(frozen=True)
class DemoRecord:
    """One generated record and the artifact it belongs to."""

    kind: str
    body: dict[str, Any]


def demo_run(*, seed: int = 7, tool_calls: int = 6) -> Iterator[DemoRecord]:
    """Yield the records of one agent run: transcript messages and tool events."""
    rng = random.Random(seed)
    yield DemoRecord(
        "transcript",
        {"role": "user", "content": "The parser test fails on empty input. Please fix it."},
    )
    for index in range(tool_calls):
        call_id = f"call_{seed:02d}{index:03d}"
        if rng.random() < 0.5:
            name, arguments = "shell", {"command": rng.choice(_COMMANDS)}
            output = f"exit 0\n{rng.randint(1, 40)} passed in {rng.random():.2f}s"
        else:
            name, arguments = "read_file", {"path": rng.choice(_FILES)}
            output = "def parse(text):\n    if not text:\n        return []\n"
        yield DemoRecord(
            "transcript",
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": call_id, "type": "function", "name": name, "arguments": arguments}
                ],
            },
        )
        yield DemoRecord(
            "tool-events", {"event": "tool_call_start", "call_id": call_id, "tool": name}
        )
        yield DemoRecord("transcript", {"role": "tool", "tool_call_id": call_id, "content": output})
        yield DemoRecord(
            "tool-events",
            {
                "event": "tool_call_end",
                "call_id": call_id,
                "tool": name,
                "exit_code": 0,
                "duration_ms": rng.randint(5, 900),
            },
        )
    yield DemoRecord(
        "transcript",
        {"role": "assistant", "content": "Fixed: parse() now returns [] for empty input."},
    )


DEMO_SESSION_ID = "5f0c2a9e-7d1b-4c3e-9a8f-2b6d1e4c7a30"
"""The session id of :func:`demo_session`."""


def demo_session(*, seed: int = 7, tool_calls: int = 3) -> bytes:
    """A Claude Code session file (JSON Lines, as Claude Code writes
    ``~/.claude/projects/<project>/<session id>.jsonl``) of :func:`demo_run`'s task whose
    agent was killed while its last tool call ran: ``tool_calls`` calls answered, then
    one ``tool_use`` without its ``tool_result``, which the Messages API refuses
    ("tool_use ids were found without tool_result blocks immediately after")."""
    rng = random.Random(seed)
    lines: list[dict[str, Any]] = []
    parent: str | None = None

    def line(kind: str, message: dict[str, Any], **extra: Any) -> None:
        nonlocal parent
        uuid = f"00000000-0000-4000-8000-{len(lines) + 1:012d}"
        lines.append(
            {
                "parentUuid": parent,
                "isSidechain": False,
                "userType": "external",
                "cwd": "/home/dev/app",
                "sessionId": DEMO_SESSION_ID,
                "version": "2.1.0",
                "type": kind,
                "message": message,
                "uuid": uuid,
                "timestamp": f"2026-01-05T10:{len(lines):02d}:00.000Z",
                **extra,
            }
        )
        parent = uuid

    line("user", {"role": "user", "content": "The parser test fails on empty input. Fix it."})
    for index in range(tool_calls + 1):
        call_id = f"toolu_demo{seed:02d}{index:03d}"
        command = rng.choice(_COMMANDS)
        use = {"type": "tool_use", "id": call_id, "name": "Bash", "input": {"command": command}}
        line(
            "assistant",
            {
                "id": f"msg_demo{index:03d}",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": [use],
                "stop_reason": "tool_use",
            },
        )
        if index == tool_calls:
            break  # killed while this call ran: its result never written
        output = f"exit 0\n{rng.randint(1, 40)} passed in {rng.random():.2f}s"
        result = {"type": "tool_result", "tool_use_id": call_id, "content": output}
        line("user", {"role": "user", "content": [result]}, toolUseResult={"stdout": output})
    return "".join(json.dumps(record) + "\n" for record in lines).encode()
