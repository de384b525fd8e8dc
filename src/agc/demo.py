"""A realistic agent run, generated from a seed, for ``agc demo`` and for tests.

The run mimics a coding agent fixing a failing test: a user prompt, assistant turns with
tool calls (shell, file reads, an edit), their results, and the matching tool events.
Everything is derived from ``random.Random(seed)`` and a fixed clock, so the same seed
gives the same bytes.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["DemoRecord", "demo_run"]

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
