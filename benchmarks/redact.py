"""Secret redaction speed, as a ratio against a baseline measured in the same run.

Input: the real transcripts in ``../shared/fixtures/real`` when they are beside the
checkout (``--input`` names another folder of ``*.jsonl``), else a generated session of
the same shape. Baseline: ``json.loads`` + ``json.dumps`` of every line (the least a
snapshot writer does). Measured: :func:`agc._core.redact.redact_value` of every parsed
record (what a snapshot does) and :func:`~agc._core.redact.redact_text` of every raw
line (what the ledger does to text). Times are CPU times of this process, best of
``--repeat``. Also printed: lines changed by redaction (on real transcripts: false
positives).

Run: ``.venv/bin/python -m benchmarks.redact [--input DIR] [--repeat R]``
"""

from __future__ import annotations

import argparse
import contextlib
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agc._core.redact import RedactionStats, redact_text, redact_value

__all__ = ["generated_lines", "main"]

_REAL = Path(__file__).resolve().parent.parent.parent / "shared" / "fixtures" / "real"


def generated_lines(turns: int = 400) -> list[str]:
    """A Claude Code-like session without secrets: prose, code, commands, tool output."""
    lines: list[str] = []
    for turn in range(turns):
        text = (
            f"Step {turn}: read the config, then run the tests. The token budget is "
            f"{turn * 10} and the key path is src/app/config_{turn}.py."
        )
        code = (
            f"def load_{turn}(path: str) -> dict:\n    token = os.environ.get('TOKEN')\n"
            f"    return json.loads(Path(path).read_text())  # key={turn}\n"
        )
        lines.append(json.dumps({"type": "user", "message": {"role": "user", "content": text}}))
        use: dict[str, Any] = {"type": "tool_use", "id": f"toolu_{turn:08d}", "name": "Write"}
        use["input"] = {"file_path": f"/w/src/app/m{turn}.py", "content": code * 4}
        lines.append(json.dumps({"type": "assistant", "message": {"content": [use]}}))
        result = {"type": "tool_result", "tool_use_id": f"toolu_{turn:08d}"}
        result["content"] = "ok\n" + "PASSED tests/test_m.py::test_case\n" * 8
        lines.append(json.dumps({"type": "user", "message": {"content": [result]}}))
    return lines


def _best(action: Callable[[], object], repeat: int) -> float:
    """The least CPU time (s) of ``repeat`` runs: the work is single-threaded, and the
    CPU time of this process is what other work on a shared machine disturbs least."""
    times = []
    for _ in range(repeat):
        start = time.process_time()
        action()
        times.append(time.process_time() - start)
    return min(times)


# Inputs that once made the detector quadratic (a regex retried inside a run of
# backslashes, a value read again for each secret name inside it); each is timed at
# 64 KiB and at 4 times that: linear is a ratio near 4.
PATHOLOGICAL: dict[str, Callable[[int], str]] = {
    "backslashes": lambda n: "\\" * n,
    "backslashes_then_u_escape": lambda n: "\\" * n + "\\u0041",
    "sk_dash_repeated": lambda n: "sk-" * (n // 3),
    "newlines": lambda n: "\n" * n,
    "token_assignments_chained": lambda n: "token=" * (n // 6),
}


def growth(make: Callable[[int], str], repeat: int, size: int = 64 * 1024) -> float:
    """How much longer ``redact_text`` takes on 4 times the input (linear: about 4)."""
    small, large = make(size), make(4 * size)
    return round(
        _best(lambda: redact_text(large), repeat) / _best(lambda: redact_text(small), repeat), 1
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--input", type=Path, default=_REAL)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args(argv)
    files = sorted(args.input.rglob("*.jsonl")) if args.input.is_dir() else []
    source = str(args.input) if files else "generated"
    lines = [
        line for path in files for line in path.read_text("utf-8").splitlines() if line.strip()
    ] or generated_lines()
    records: list[Any] = []
    for line in lines:
        try:
            records.append(json.loads(line))
        except ValueError:
            records.append(line)
    size = sum(len(line.encode()) for line in lines)

    def baseline() -> None:
        for line in lines:
            with contextlib.suppress(ValueError):
                json.dumps(json.loads(line))

    base = _best(baseline, args.repeat)
    values = _best(lambda: [redact_value(r) for r in records], args.repeat)
    texts = _best(lambda: [redact_text(line) for line in lines], args.repeat)
    stats = RedactionStats()
    changed = sum(redact_value(r, stats) != r for r in records)
    print(
        json.dumps(
            {
                "benchmark": "redact",
                "input": source,
                "lines": len(lines),
                "bytes": size,
                "ratio_redact_value_to_json_round_trip": round(values / base, 2),
                "ratio_redact_text_to_json_round_trip": round(texts / base, 2),
                "redact_value_ms_per_mib": round(values * 1000 / (size / 2**20), 1),
                "redact_text_ms_per_mib": round(texts * 1000 / (size / 2**20), 1),
                "lines_changed": changed,
                "lines_changed_share": round(changed / len(lines), 4),
                "redactions": stats.to_dict(),
                "growth_at_4x_input": {
                    name: growth(make, max(1, args.repeat // 5))
                    for name, make in PATHOLOGICAL.items()
                },
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
