"""Small deterministic runs for the tamper-evidence tests (seeded, fixed clock)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agc.integrity import SigningKey, open_run
from tests.conftest import steady_checkpoint_timer


def fixed_clock(start: int = 1_790_000_000_000) -> Any:
    """A clock that returns start, start+1, … (Unix ms), for byte-stable runs."""
    state = {"now": start}

    def clock() -> int:
        state["now"] += 1
        return state["now"]

    return clock


def records(seed: int, count: int) -> Iterator[dict[str, Any]]:
    """Agent-like records: user/assistant messages, tool calls and results."""
    rng = random.Random(seed)
    for index in range(count):
        role = rng.choice(["user", "assistant", "tool"])
        yield {"role": role, "content": f"message {index} " + "x" * rng.randint(0, 40)}


def write_run(
    store: Path,
    run_id: str,
    *,
    seed: int = 1,
    count: int = 3,
    signing_key: SigningKey | None = None,
) -> None:
    """Write and seal a run with ``count`` transcript records and one tool event."""
    with (
        steady_checkpoint_timer(),
        open_run(run_id, store=store, clock=fixed_clock(), signing_key=signing_key) as run,
    ):
        for record in records(seed, count):
            run.transcript.write(record)
        run.tool_events.write({"tool": "shell", "command": "pytest -q"})


def transcript_path(store: Path, run_id: str) -> Path:
    return store / "audit" / "transcripts" / f"{run_id}.jsonl"
