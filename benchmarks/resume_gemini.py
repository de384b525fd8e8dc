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

import re
from pathlib import Path
from typing import Any

from benchmarks.resume_streaming import (
    _TARGET_CHECK,
    _TARGET_PEAK,
    _TARGET_REPAIR,
    agc_resume,
    baseline_loads,
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
    (1 MB with ``--quick``) beside the ``json.loads`` loop over the same file."""
    from benchmarks.report import Row, Section, Target  # noqa: PLC0415 - only when run

    section = Section(
        "resume_gemini",
        "Resume of a large Gemini CLI session file (read line by line)",
        "agc resume FILE --check and --strategy synthesize --out on a real-shaped Gemini "
        "CLI session (its recorded turns repeated, ids made unique); each command and the "
        "json.loads loop in a process of their own, one round; peak is the process's "
        "maximum resident set (/usr/bin/time).",
    )
    size = 1_000_000 if ctx.quick else 100_000_000
    path = ctx.work / f"gemini-chat-{size}.jsonl"
    out = ctx.work / f"gemini-chat-{size}.out.jsonl"
    make_gemini_session(path, size)
    base_s, base_peak = baseline_loads(path)
    row = Row(f"gemini-chat {size:,} B: json.loads loop", median_s=base_s, rounds=1)
    row.peak_bytes = base_peak
    section.rows.append(row)
    for label, argv, target in (
        ("check", [str(path), "--check"], _TARGET_CHECK),
        ("repair", [str(path), "--strategy", "synthesize", "--out", str(out)], _TARGET_REPAIR),
    ):
        out.unlink(missing_ok=True)
        seconds, peak, code = agc_resume(argv)
        row = Row(
            f"gemini-chat {size:,} B: agc resume {label}",
            median_s=seconds,
            rounds=1,
            baseline="json.loads loop",
            ratio=base_s / seconds,
        )
        row.peak_bytes = peak
        if code not in (0, 1):
            row.skipped = f"exit {code}"
        section.rows.append(row)
        section.targets.append(
            Target.judge(
                f"resume-gemini-chat-{label}-{size}",
                f"gemini-chat {label}, {size:,} B: within {target:g}x of json.loads",
                seconds / base_s,
                threshold=target,
                op="<=",
                note="time ratio",
            )
        )
        section.targets.append(
            Target.judge(
                f"resume-gemini-chat-{label}-{size}-peak",
                f"gemini-chat {label}, {size:,} B: peak under 150 MB",
                peak / 1000**2,
                threshold=_TARGET_PEAK / 1000**2,
                op="<=",
                note="MB",
            )
        )
    path.unlink(missing_ok=True)
    out.unlink(missing_ok=True)
    return section
