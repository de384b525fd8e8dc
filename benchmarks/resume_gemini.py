"""``agc resume`` on a large Gemini CLI session file: time and peak memory against
``json.loads``.

A Gemini CLI session file is a log its client replays into a map of messages (a record
may replace an earlier one of its id, a ``$rewindTo`` drop later ones); agc reads it line
by line, holding the view of the replayed messages, and is judged by the targets of the
other session files (:mod:`benchmarks.resume_streaming`). The input is real-shaped: the turns of the
recorded Gemini CLI 0.61 session (``tests/fixtures/hooks/gemini/session-file.jsonl``:
a model message written bare and again with its ``toolCalls`` and result, the client's
copy of the result as a user message, ``$set`` updates) repeated until the file reaches
the size asked, every message id and call id made unique per copy. Each command and the
``json.loads`` loop run in a process of their own (:mod:`benchmarks.resume_streaming`).
"""

from __future__ import annotations

import os
import re
import statistics
from pathlib import Path
from typing import Any

from benchmarks.resume_streaming import (
    _SIZE_OPTION,
    _TARGET_CHECK,
    _TARGET_REPAIR,
    _spread,
    flat_target,
    interleaved_rounds,
    linear_target,
    note_runs,
    resume_targets,
    warm,
)

__all__ = ["bench_resume_gemini", "make_gemini_session"]

_FIXTURE = (
    Path(__file__).resolve().parents[1]
    / "tests"
    / "fixtures"
    / "hooks"
    / "gemini"
    / "session-file.jsonl"
)
_IDS = re.compile(
    rb'(?<=")(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|run_shell_command__[A-Za-z0-9_]+)(?=")'
)


def make_gemini_session(path: Path, size: int) -> dict[str, Any]:
    """A Gemini CLI session of about ``size`` bytes (header and first prompt once, then
    the recorded turns repeated with fresh ids)."""
    lines = [line for line in _FIXTURE.read_bytes().split(b"\n") if line]
    head, body = lines[:3], lines[3:]
    session = head[0]
    with path.open("wb") as out:
        out.write(b"\n".join(head) + b"\n")
        written = 0
        copy = 0
        while written < size:
            copy += 1
            tag = b"%08x" % copy

            def fresh(match: re.Match[bytes], tag: bytes = tag) -> bytes:
                value = match.group(0)
                return value if value in session else value + b"-" + tag

            chunk = _IDS.sub(fresh, b"\n".join(body)) + b"\n"
            out.write(chunk)
            written += len(chunk)
    return {"bytes": path.stat().st_size}


def bench_resume_gemini(ctx: Any) -> Any:
    """The suite: check and repair (synthesize, ``--out``) of a 100 MB Gemini CLI session
    (1 MB with ``--quick``) beside the ``json.loads`` loop over the same file, each
    ``ctx.rounds`` times interleaved (median; the machine may be shared); with
    ``AGC_BENCH_RESUME_LARGE=<size>`` also that size (1 GB: 12x the time of 100 MB, its
    peak within 10 MB of 100 MB's)."""
    from benchmarks.report import Row, Section  # noqa: PLC0415 - only when run
    from benchmarks.run import parse_size  # noqa: PLC0415
    from benchmarks.suites import _compile_agc  # noqa: PLC0415 - suites imports this module

    section = Section(
        "resume_gemini",
        "Resume of a large Gemini CLI session file (read line by line)",
        "agc resume FILE --check and --strategy synthesize --out on a real-shaped Gemini "
        "CLI session (its recorded turns repeated, ids made unique); each command and the "
        "json.loads loop in a process of their own, rounds interleaved, median time and "
        "the largest peak, agc byte-compiled as an installed package is; peak is the "
        "process's maximum resident set and cpu its user + system time (/usr/bin/time), with "
        "the bytes it read from the disk when the file was not all in the page cache (it "
        "is read once before the rounds).",
    )
    _compile_agc()
    sizes = [1_000_000] if ctx.quick else [100_000_000]
    large = os.environ.get(_SIZE_OPTION)
    if large:
        sizes.append(parse_size(large))
    rounds = max(1, ctx.rounds)
    check_by_size: dict[int, float] = {}
    peak_by_size: dict[str, dict[int, int]] = {"check": {}, "repair": {}}
    for size in sizes:
        path = ctx.work / f"gemini-chat-{size}.jsonl"
        out = ctx.work / f"gemini-chat-{size}.out.jsonl"
        make_gemini_session(path, size)
        commands = {
            "check": [str(path), "--check"],
            "repair": [str(path), "--strategy", "synthesize", "--out", str(out)],
        }
        warm(path)
        runs, times, peaks, codes = interleaved_rounds(
            path, commands, out, 1 if size > 100_000_000 else rounds
        )
        base_s = statistics.median(times["base"])
        row = Row(
            f"gemini-chat {size:,} B: json.loads loop",
            median_s=base_s,
            spread=_spread(times["base"]),
            rounds=len(times["base"]),
        )
        note_runs(row, runs["base"])
        section.rows.append(row)
        for label, target in (("check", _TARGET_CHECK), ("repair", _TARGET_REPAIR)):
            seconds = statistics.median(times[label])
            row = Row(
                f"gemini-chat {size:,} B: agc resume {label}",
                median_s=seconds,
                spread=_spread(times[label]),
                rounds=len(times[label]),
                baseline="json.loads loop",
                ratio=base_s / seconds,
            )
            note_runs(row, runs[label])
            if codes[label]:
                row.skipped = f"exit {codes[label]}"
            section.rows.append(row)
            if label == "check":
                check_by_size[size] = seconds
            peak_by_size[label][size] = peaks[label]
            section.targets += resume_targets(
                "gemini-chat", label, size, seconds / base_s, peaks[label], target
            )
        path.unlink(missing_ok=True)
        out.unlink(missing_ok=True)
    section.targets += linear_target("gemini-chat", sizes, check_by_size)
    for label, by_size in peak_by_size.items():
        section.targets += flat_target("gemini-chat", label, sizes, by_size)
    return section
