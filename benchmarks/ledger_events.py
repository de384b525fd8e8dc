"""Generated Codex rollout files for the ledger benchmark (deterministic from a seed).

The line mix follows a real rollout (``~/.codex/sessions/…/rollout-*.jsonl``): per
step a ``function_call`` (``exec_command`` with JSON arguments, now and then
``apply_patch`` or an MCP tool) and its ``function_call_output``, a ``token_count``
event, ``reasoning`` with its ``agent_reasoning`` event, and now and then an assistant
``message`` with its ``agent_message`` event; ``session_meta`` first, ``task_complete``
last.

Run: ``.venv/bin/python -m benchmarks.ledger_events N FILE`` writes N lines to FILE.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

__all__ = ["main", "write_rollout"]

_WORDS = (
    *("build", "test", "fix", "parse", "write", "read", "check", "the", "a", "of", "module"),
    *("error", "value", "line", "file", "path", "agent", "tool", "call", "result", "seal"),
    *("ledger", "turn", "item", "record"),
)


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(words))


def _line(ts: int, kind: str, payload: dict[str, Any]) -> str:
    stamp = f"2026-02-23T11:{(ts // 60000) % 60:02d}:{(ts // 1000) % 60:02d}.{ts % 1000:03d}Z"
    return json.dumps(
        {"timestamp": stamp, "type": kind, "payload": payload},
        separators=(",", ":"),
        ensure_ascii=False,
    )


def _call(rng: random.Random, step: int) -> dict[str, Any]:
    call_id = f"call_{step:010d}"
    pick = rng.random()
    if pick < 0.08:
        patch = f"*** Begin Patch\n*** Update File: src/m{step % 97}.py\n@@\n-a\n+b\n*** End Patch"
        return {
            "type": "custom_tool_call",
            "name": "apply_patch",
            "input": patch,
            "call_id": call_id,
        }
    if pick < 0.15:
        args = {"path": f"assets/uploads/doc{step % 13}.md", "query": _text(rng, 4)}
        name = "mcp__project__read_asset"
    else:
        args = {"cmd": f"rg -n '{_text(rng, 2)}' src/", "workdir": "/home/dev/project"}
        name = "exec_command"
    return {
        "type": "function_call",
        "name": name,
        "arguments": json.dumps(args),
        "call_id": call_id,
    }


def _step(rng: random.Random, step: int, ts: int) -> list[str]:
    call = _call(rng, step)
    output_type = (
        "custom_tool_call_output" if call["type"] == "custom_tool_call" else "function_call_output"
    )
    lines = [
        _line(
            ts,
            "response_item",
            {"type": "reasoning", "summary": [], "encrypted_content": "gAAAA" + "x" * 120},
        ),
        _line(ts + 1, "event_msg", {"type": "agent_reasoning", "text": _text(rng, 12)}),
        _line(ts + 2, "response_item", call),
        _line(
            ts + 40,
            "response_item",
            {"type": output_type, "call_id": call["call_id"], "output": _text(rng, 50)},
        ),
        _line(
            ts + 41,
            "event_msg",
            {
                "type": "token_count",
                "info": None,
                "rate_limits": {
                    "primary": {
                        "used_percent": 2.0,
                        "window_minutes": 300,
                        "resets_at": 1771864834,
                    },
                    "secondary": None,
                },
            },
        ),
    ]
    if step % 4 == 3:
        text = _text(rng, 20)
        lines.append(
            _line(
                ts + 50,
                "response_item",
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": text}],
                },
            )
        )
        lines.append(_line(ts + 51, "event_msg", {"type": "agent_message", "message": text}))
    return lines


def write_rollout(path: Path, count: int, *, seed: int = 17) -> int:
    """Write a rollout of ``count`` lines (``count`` >= 2) to ``path``; return its bytes."""
    rng = random.Random(seed)
    meta = {"id": "019c8a4d-0000-7000-8000-000000000000", "cwd": "/home/dev/project"}
    lines = [_line(0, "session_meta", meta)]
    step = 0
    while len(lines) < count - 1:
        step += 1
        lines.extend(_step(rng, step, step * 100))
    del lines[count - 1 :]
    lines.append(_line(step * 100 + 99, "event_msg", {"type": "task_complete"}))
    data = ("\n".join(lines) + "\n").encode()
    path.write_bytes(data)
    return len(data)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    size = write_rollout(Path(args[1]), int(args[0]))
    print(f"{args[1]}: {int(args[0]):,} lines, {size:,} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
