"""Builders for Codex events and a fixed-clock recorder, shared by the ledger tests."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from agc._core.signing import SigningKey
from agc.ledger import LedgerPolicy, TurnOutcome, preset_policy
from agc.ledger import record_turn as record_stream

TURN_ID = "Abc123-def"
DIRECT_PROJECT = preset_policy("direct-project")
"""The preset whose MCP tools (``agc_tools``) these builders' events use; ``policy=None``
records with the default (``generic``) preset."""


class Clock:
    """A deterministic clock: 1_700_000_000_000, +1 ms per call."""

    def __init__(self) -> None:
        self.now = 1_700_000_000_000

    def __call__(self) -> int:
        self.now += 1
        return self.now


def completed(item: Mapping[str, Any]) -> dict[str, Any]:
    """An app-server ``item/completed`` notification."""
    return {
        "method": "item/completed",
        "params": {"threadId": "thr_1", "turnId": "turn_1", "item": dict(item)},
    }


def command(
    item_id: str, cmd: str, actions: list[dict[str, Any]] | None = None, **extra: Any
) -> dict[str, Any]:
    return completed(
        {
            "type": "commandExecution",
            "id": item_id,
            "command": cmd,
            "cwd": "/",
            "status": "completed",
            "commandActions": actions or [],
            "aggregatedOutput": "OUTPUT-SHOULD-NEVER-APPEAR",
            "exitCode": 0,
            "durationMs": 7,
            **extra,
        }
    )


def mcp(item_id: str, tool: str, arguments: Any, **extra: Any) -> dict[str, Any]:
    return completed(
        {
            "type": "mcpToolCall",
            "id": item_id,
            "server": "agc_tools",
            "tool": tool,
            "status": "completed",
            "arguments": arguments,
            "result": {"content": [{"type": "text", "text": "RESULT-SHOULD-NEVER-APPEAR"}]},
            "error": None,
            "durationMs": 3,
            **extra,
        }
    )


def record_turn(
    project: Path,
    events: Iterable[Mapping[str, Any] | str],
    *,
    prompt: str = "make the game from my GDD",
    attachments: list[Any] | None = None,
    policy: LedgerPolicy | None = DIRECT_PROJECT,
    completed_turn: bool = True,
    turn_id: str = TURN_ID,
    clock: Clock | None = None,
    signing_key: SigningKey | None = None,
) -> TurnOutcome:
    """Record one attempt from ``events`` (objects or raw lines) with the library's
    :func:`agc.ledger.record_turn`, as the CLI does."""
    return record_stream(
        # lazily: a test's generator may act between turn_start and the first line
        (e if isinstance(e, str) else json.dumps(e) for e in events),
        project=project,
        client_turn_id=turn_id,
        prompt=prompt,
        attachments=attachments or [],
        policy=policy,
        completed=completed_turn,
        clock=clock or Clock(),
        signing_key=signing_key,
    )


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_bytes().splitlines()]


def items(path: Path) -> list[dict[str, Any]]:
    return [r for r in records(path) if r["recordType"] == "direct.codex.item"]


def turn_end(path: Path) -> dict[str, Any]:
    return [r for r in records(path) if r["recordType"] == "direct.codex.turn_end"][-1]
