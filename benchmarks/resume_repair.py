"""Repair speed, as a ratio against a baseline measured in the same run.

Baseline: parsing a session file line by line and serializing every record again (the
least any reader/writer must do). Measured: ``load_history`` + ``repair_loaded`` on the
same bytes (read, check, repair, write back, check the written records from memory). The
ratio says how many baselines a repair costs; absolute times depend on the machine.

With ``--format openai-chat`` the same turns are a JSON array of Chat Completions
messages (baseline: ``json.loads`` + ``json.dumps``).

Run: ``.venv/bin/python -m benchmarks.resume_repair [--turns N] [--repeat R] [--format F]``
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from agc.resume._formats import load_history
from agc.resume._formats.jsonl import dump_line, parse_jsonl
from agc.resume._repair import repair_loaded
from benchmarks.harness import best_of

__all__ = ["chat_bytes", "main", "session_bytes"]


def session_bytes(turns: int) -> bytes:
    """A Claude Code session: ``turns`` turns of three parallel calls, the last in flight."""
    lines: list[str] = []
    parent: str | None = None

    def add(kind: str, content: list[dict[str, Any]]) -> None:
        nonlocal parent
        uuid = f"u{len(lines)}"
        record = {
            "parentUuid": parent,
            "type": kind,
            "sessionId": "bench",
            "uuid": uuid,
            "message": {"role": kind, "content": content},
        }
        lines.append(json.dumps(record))
        parent = uuid

    for turn in range(turns):
        add("user", [{"type": "text", "text": f"step {turn} " + "x" * 200}])
        for call in range(3):
            use = {
                "type": "tool_use",
                "id": f"t{turn}-{call}",
                "name": "Bash",
                "input": {"c": "ls"},
            }
            add("assistant", [use])
        if turn < turns - 1:
            for call in range(3):
                result = {"type": "tool_result", "tool_use_id": f"t{turn}-{call}", "content": "ok"}
                add("user", [result])
    return "".join(line + "\n" for line in lines).encode()


def chat_bytes(turns: int) -> bytes:
    """A Chat Completions array: ``turns`` turns of three parallel calls, the last in flight."""
    messages: list[dict[str, Any]] = []
    for turn in range(turns):
        messages.append({"role": "user", "content": f"step {turn} " + "x" * 200})
        calls = [
            {
                "id": f"t{turn}-{call}",
                "type": "function",
                "function": {"name": "bash", "arguments": '{"c": "ls"}'},
            }
            for call in range(3)
        ]
        messages.append({"role": "assistant", "content": None, "tool_calls": calls})
        if turn < turns - 1:
            for call in range(3):
                messages.append(
                    {"role": "tool", "tool_call_id": f"t{turn}-{call}", "content": "ok"}
                )
    return json.dumps(messages).encode()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--format", choices=["claude-code", "openai-chat"], default="claude-code")
    args = parser.parse_args(argv)
    chat = args.format == "openai-chat"
    data = chat_bytes(args.turns) if chat else session_bytes(args.turns)

    def baseline() -> None:
        if chat:
            json.dumps(json.loads(data), indent=2, ensure_ascii=False)
            return
        records, _, _ = parse_jsonl(data, source="bench")
        for record in records:
            dump_line(record)

    def repair() -> None:
        for strategy in ("strip", "synthesize"):
            repair_loaded(load_history(data, source="bench"), strategy=strategy)

    base = best_of(baseline, args.repeat) * 2  # two strategies
    measured = best_of(repair, args.repeat)
    print(
        json.dumps(
            {
                "benchmark": "resume_repair",
                "format": args.format,
                "bytes": len(data),
                "turns": args.turns,
                "ratio_repair_to_parse_and_dump": round(measured / base, 2),
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
