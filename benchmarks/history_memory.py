"""Peak memory of ``agc resume`` on a history file, as a multiple of the file's size.

Each command runs in a process of its own; its peak resident set is the ``VmHWM`` of
``/proc/self/status`` (Linux), read at the interpreter's exit. (``ru_maxrss`` would not
do: it keeps the high-water mark of the process from before ``exec``, when it still was
a fork of this large benchmark process.) The same command on a 2-message history
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

_RUN_AGC = """
import atexit, sys

def _report(path=sys.argv.pop(1)):
    with open("/proc/self/status") as status:
        peak = next(line.split()[1] for line in status if line.startswith("VmHWM:"))
    with open(path, "w") as out:
        out.write(peak)

atexit.register(_report)
from agc.cli.app import main
sys.exit(main())
"""
TARGETS = {"check": 4.0, "repair": 6.0}


def peak_rss(argv: list[str], report: Path, *, pythonpath: Path | None = None) -> tuple[int, float]:
    """Peak resident bytes and wall seconds of the agc command ``argv`` (exit 0 or 1:
    findings are fine); ``report`` receives the peak (KiB) from the process itself.
    ``pythonpath``: run the agc found there (another commit's ``src``) instead.

    Raises:
        RuntimeError: the command failed.
    """
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    report.unlink(missing_ok=True)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", _RUN_AGC, str(report), *argv],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        check=False,
    )
    seconds = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise RuntimeError(f"agc {argv} exited {done.returncode}: {done.stderr.decode()[-400:]}")
    return int(report.read_text()) * 1024, seconds


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
            return ["resume", str(path), *flags, *out]

        fixed, _ = peak_rss(argv(tiny), work / "peak.txt")
        peak, seconds = peak_rss(argv(history), work / "peak.txt")
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
