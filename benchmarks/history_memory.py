"""Peak memory of ``agc resume`` on a history file, as a multiple of the file's size.

Each command runs in a process of its own; its peak resident set (``ru_maxrss`` from
``wait4``, Linux: KiB) is read when it exits. The same command on a 2-message history
gives the fixed part (interpreter, imports); the figure judged is the rest:
(peak - fixed) / input bytes. The gross peak is reported beside it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.report import Row, Target

__all__ = ["memory_rows", "peak_rss"]

_RUN_AGC = "import sys; from agc.cli.app import main; sys.exit(main())"
TARGETS = {"check": 4.0, "repair": 6.0}


def peak_rss(argv: list[str]) -> tuple[int, float]:
    """Peak resident bytes and wall seconds of the command ``argv`` (exit 0 or 1:
    findings are fine).

    Raises:
        RuntimeError: the command failed.
    """
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    start = time.perf_counter()
    process = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert process.stderr is not None
    error = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    process.stderr.close()
    if process.returncode not in (0, 1):
        raise RuntimeError(f"{argv} exited {process.returncode}: {error.decode()[-400:]}")
    return int(usage.ru_maxrss) * 1024, seconds


def memory_rows(
    work: Path, messages: list[dict[str, Any]]
) -> tuple[list[Row], list[Target], dict[str, Any]]:
    """Rows and targets for ``agc resume FILE --check`` and ``agc resume FILE --out``."""
    history = work / "history.json"
    data = json.dumps(messages).encode()
    history.write_bytes(data)
    tiny = work / "tiny.json"
    tiny.write_bytes(json.dumps(messages[:2]).encode())
    rows: list[Row] = []
    targets: list[Target] = []
    extra: dict[str, Any] = {"history_bytes": len(data)}
    for label, flags in (("check", ["--check"]), ("repair", ["--out"])):

        def argv(path: Path, flags: list[str] = flags, label: str = label) -> list[str]:
            out = [str(work / f"out-{label}-{path.stem}.json")] if flags == ["--out"] else []
            for leftover in out:
                Path(leftover).unlink(missing_ok=True)
            return [sys.executable, "-c", _RUN_AGC, "resume", str(path), *flags, *out]

        fixed, _ = peak_rss(argv(tiny))
        peak, seconds = peak_rss(argv(history))
        net = (peak - fixed) / len(data)
        row = Row(
            f"agc resume --{'check' if label == 'check' else 'out'}: peak "
            f"{peak / 2**20:,.0f} MiB = {peak / len(data):.2f}x the input gross, "
            f"{net:.2f}x beyond the {fixed / 2**20:,.0f} MiB of a 2-message run",
            median_s=seconds,
            spread=0.0,
            rounds=1,
            peak_bytes=peak,
        )
        rows.append(row)
        targets.append(
            Target.judge(
                f"history-{label}-memory",
                f"{label}: peak memory <= {TARGETS[label]:g}x the input "
                f"({len(messages):,} messages, {len(data):,} bytes)",
                net,
                threshold=TARGETS[label],
                op="<=",
                note=f"(peak RSS - a 2-message run's) / input bytes; gross {peak / len(data):.2f}x",
            )
        )
        extra[f"{label}_peak_bytes"] = peak
        extra[f"{label}_fixed_bytes"] = fixed
    return rows, targets, extra
