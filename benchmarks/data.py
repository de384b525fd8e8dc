"""Benchmark inputs, all generated from a fixed seed.

* :func:`write_random_file`: incompressible bytes for the hashing benchmarks.
* :func:`record_sizes`: the size distribution of tool calls and tool results, sampled
  from the real transcripts in ``../shared/fixtures/real/`` (read, never copied); when
  that folder is absent a built-in log-normal fallback is used and the results say so.
* :func:`tool_records`: records of that shape and size: ``tool_call`` /
  ``tool_result`` pairs with shell-like text, quotes, escapes and some non-ASCII.
* :func:`fixed_size_records`: ``tool_result`` records of one line size (the writer's
  2 KiB and 150-byte rows).
* :func:`real_transcript_mix`: the real transcripts end to end, repeated to a size (the
  ingest benchmark's input; written to the scratch folder, never into the project).
* :func:`chat_history`: an OpenAI Chat Completions history of ``n`` messages for the
  history validation/repair benchmark, its last tool call left in flight.
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

__all__ = [
    "SEED",
    "RecordSizes",
    "chat_history",
    "fixed_size_records",
    "real_transcript_mix",
    "record_sizes",
    "tool_records",
    "write_random_file",
]

SEED: Final = 20261130
REAL_FIXTURES: Final = Path(__file__).resolve().parent.parent.parent / "shared/fixtures/real"

_CALL_TYPES: Final = frozenset(
    {"tool_use", "function_call", "custom_tool_call", "local_shell_call", "command_execution"}
)
_RESULT_TYPES: Final = frozenset({"tool_result", "function_call_output", "custom_tool_call_output"})
_TOOLS: Final = ("bash", "read_file", "apply_patch", "exec_command", "grep", "write_file")
_WORDS: Final = [
    "src/agc/integrity/writer.py",
    "def",
    "return",
    "None",
    "self",
    "import",
    "os",
    "pytest",
    "-q",
    "passed",
    "failed",
    "error:",
    "Traceback",
    "(most",
    "recent",
    "call",
    "last):",
    "File",
    "line",
    "42",
    "in",
    "assert",
    "==",
    "!=",
    "{}",
    "[]",
    "ok",
    "naïve",
    "café",
    "→",
    "✓",
    "日本",
    '"quoted"',
    "back\\slash",
    "\t",
    "tab",
    "make",
    "test",
    "ruff",
    "mypy",
    "--strict",
]


@dataclass(frozen=True)
class RecordSizes:
    """Serialized sizes (bytes, compact JSON) of real tool calls and results.

    Attributes:
        calls: one size per tool call seen.
        results: one size per tool result seen.
        source: where the sizes came from (the fixtures folder, or the fallback).
    """

    calls: tuple[int, ...]
    results: tuple[int, ...]
    source: str

    def summary(self) -> dict[str, Any]:
        def stats(values: tuple[int, ...]) -> dict[str, float]:
            ordered = sorted(values)
            return {
                "count": len(ordered),
                "median": ordered[len(ordered) // 2],
                "mean": round(sum(ordered) / len(ordered), 1),
                "max": ordered[-1],
            }

        return {"source": self.source, "calls": stats(self.calls), "results": stats(self.results)}


def _walk(value: Any, calls: list[int], results: list[int]) -> None:
    if isinstance(value, dict):
        kind = value.get("type")
        if kind in _CALL_TYPES or kind in _RESULT_TYPES:
            size = len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())
            (calls if kind in _CALL_TYPES else results).append(size)
            return
        for item in value.values():
            _walk(item, calls, results)
    elif isinstance(value, list):
        for item in value:
            _walk(item, calls, results)


def record_sizes(folder: Path = REAL_FIXTURES) -> RecordSizes:
    """Sizes of the tool calls and results in the real fixtures (fallback if absent)."""
    calls: list[int] = []
    results: list[int] = []
    if folder.is_dir():
        for path in sorted(folder.rglob("*.jsonl")):
            with path.open("rb") as handle:
                for line in handle:
                    try:
                        _walk(json.loads(line), calls, results)
                    except (ValueError, RecursionError):
                        continue
    if calls and results:
        return RecordSizes(tuple(calls), tuple(results), f"real fixtures ({folder.name}/)")
    rng = random.Random(SEED)
    return RecordSizes(
        tuple(int(rng.lognormvariate(math.log(160), 0.5)) for _ in range(200)),
        tuple(int(rng.lognormvariate(math.log(200), 1.3)) for _ in range(200)),
        "built-in log-normal fallback (../shared/fixtures/real absent)",
    )


def _text(rng: random.Random, size: int) -> str:
    parts: list[str] = []
    length = 0
    while length < size:
        word = rng.choice(_WORDS)
        if rng.random() < 0.08:
            word += "\n"
        parts.append(word)
        length += len(word) + 1
    return " ".join(parts)[: max(0, size)]


def tool_records(count: int, sizes: RecordSizes, *, seed: int = SEED) -> list[dict[str, Any]]:
    """``count`` records alternating ``tool_call`` / ``tool_result``, sizes from ``sizes``.

    A record's text is sized so that its compact JSON is close to the sampled size.
    """
    rng = random.Random(seed)
    records: list[dict[str, Any]] = []
    for index in range(count):
        call_id = f"call_{rng.getrandbits(64):016x}"
        if index % 2 == 0:
            target = rng.choice(sizes.calls)
            records.append(
                {
                    "type": "tool_call",
                    "call_id": call_id,
                    "name": rng.choice(_TOOLS),
                    "arguments": {"command": _text(rng, target - 90), "timeout_ms": 120000},
                }
            )
        else:
            target = rng.choice(sizes.results)
            records.append(
                {
                    "type": "tool_result",
                    "call_id": records[-1]["call_id"],
                    "output": _text(rng, target - 90),
                    "exit_code": rng.choice((0, 0, 0, 1)),
                    "duration_ms": rng.randint(1, 90000),
                }
            )
    return records


def write_random_file(path: Path, size: int, *, seed: int = SEED) -> None:
    """Write ``size`` incompressible bytes from a seeded generator to ``path``."""
    rng = random.Random(seed)
    block = 8 * 1024 * 1024
    with path.open("wb") as handle:
        left = size
        while left > 0:
            take = min(block, left)
            handle.write(rng.randbytes(take))
            left -= take


def chat_history(count: int, *, seed: int = SEED) -> list[dict[str, Any]]:
    """An OpenAI Chat Completions history of ``count`` messages (``count`` >= 2).

    System, user, then rounds of assistant ``tool_calls`` + ``tool`` results and
    assistant text; the last assistant tool call has no result (in flight).
    """
    rng = random.Random(seed)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Fix the failing tests."},
    ]
    turn = 0
    while len(messages) < count - 1:
        turn += 1
        call_id = f"call_{turn:08d}"
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {
                            "name": "bash",
                            "arguments": json.dumps({"command": _text(rng, 60)}),
                        },
                    }
                ],
            }
        )
        if len(messages) < count - 1:
            messages.append({"role": "tool", "tool_call_id": call_id, "content": _text(rng, 120)})
    messages.append(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_in_flight",
                    "type": "function",
                    "function": {"name": "bash", "arguments": '{"command": "pytest"}'},
                }
            ],
        }
    )
    return messages[:count]


def _compact(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def fixed_size_records(count: int, size: int, *, seed: int = SEED) -> list[dict[str, Any]]:
    """``count`` ``tool_result`` records whose stamped line (``seq``, ``ts``, ``run_id``
    as the tool-event writer adds them) is close to ``size`` bytes."""
    rng = random.Random(seed)
    stamp = {"seq": 0, "ts": 1_764_460_800_000, "run_id": "w"}
    records: list[dict[str, Any]] = []
    for _ in range(count):
        record: dict[str, Any] = {
            "type": "tool_result",
            "call_id": f"call_{rng.getrandbits(64):016x}",
            "output": "",
            "exit_code": rng.choice((0, 0, 0, 1)),
        }
        base = len(_compact({**stamp, **record}))
        text = _text(rng, max(0, size - base - 1))
        # Escapes and non-ASCII take more than one byte a character: trim until it fits.
        while text and base + len(_compact(text)) - 2 > size - 1:
            text = text[:-4]
        record["output"] = text
        records.append(record)
    return records


def real_transcript_mix(path: Path, size: int, folder: Path = REAL_FIXTURES) -> int | None:
    """Write the real transcripts (every ``*.jsonl`` under ``folder``, sorted, each ended
    by a newline) end to end, repeated until ``path`` holds at least ``size`` bytes.

    Returns the bytes written, or ``None`` when ``folder`` holds no transcript (the
    fixtures are read, never copied into the project).
    """
    files = sorted(folder.rglob("*.jsonl")) if folder.is_dir() else []
    if not files:
        return None
    parts = [p.read_bytes() for p in files]
    once = b"".join(part if part.endswith(b"\n") else part + b"\n" for part in parts)
    copies = max(1, -(-size // len(once)))
    with path.open("wb") as handle:
        for _ in range(copies):
            handle.write(once)
    return copies * len(once)
