"""``agc resume`` on large session files: time and peak memory against ``json.loads``.

The inputs are real-shaped: the message lines of a real Claude Code session and of a
real Codex rollout (``../shared/fixtures/real``, or a small built-in sample of the same
shapes when it is absent) repeated until the file reaches the size asked, every call
id and line uuid made unique per copy, the last call left in flight (no result).

Each command runs in a process of its own (see :mod:`benchmarks.history_memory` for the
peak: ``VmHWM`` read at the interpreter's exit). The baseline is a plain loop of
``json.loads`` over the same file's lines, also in a process of its own, in the same run.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["baseline_loads", "make_claude_session", "make_codex_rollout"]

_SHARED = Path(
    os.environ.get("AGC_SHARED_DIR") or Path(__file__).resolve().parents[1].parent / "shared"
)
_REAL = _SHARED / "fixtures" / "real"
_UUID = re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_CLAUDE_CALL = re.compile(rb'(?<=")toolu_[A-Za-z0-9]+(?=")')
_CODEX_CALL = re.compile(rb'(?<=")call_[A-Za-z0-9]{8,}(?=")')


def _template(kind: str) -> list[bytes]:
    if kind == "claude-code":
        path = _REAL / "claude-code" / "agentcmd-full-session.jsonl"
    else:
        folder = _REAL / "codex-rollout"
        path = (
            max(folder.glob("rollout-*.jsonl"), key=lambda p: p.stat().st_size)
            if folder.is_dir()
            else folder
        )
    if not path.is_file():
        raise RuntimeError(
            f"{path} is absent: the streaming benchmark needs ../shared/fixtures/real"
        )
    return [line for line in path.read_bytes().split(b"\n") if line]


def _copies(lines: list[bytes], call: re.Pattern[bytes], size: int, head: int) -> Iterator[bytes]:
    body = b"\n".join(lines[head:]) + b"\n"
    yield b"\n".join(lines[:head]) + (b"\n" if head else b"")
    written = len(body)
    copy = 0
    while written < size:
        copy += 1
        tag = b"%08x" % copy

        def uuid(match: re.Match[bytes], tag: bytes = tag) -> bytes:
            return match.group(0)[:-8] + tag

        def call_id(match: re.Match[bytes], tag: bytes = tag) -> bytes:
            return match.group(0) + b"x" + tag

        chunk = call.sub(call_id, _UUID.sub(uuid, body)) if copy > 1 else body
        written += len(chunk)
        yield chunk


def _answered(lines: list[bytes]) -> list[bytes]:
    """The template without the calls it leaves unanswered: the copies then hold one
    call without a result, the last (in flight)."""
    results = set(re.findall(rb'"tool_use_id":"(toolu_[A-Za-z0-9]+)"', b"\n".join(lines)))
    return [
        line
        for line in lines
        if not set(re.findall(rb'"type":"tool_use","id":"(toolu_[A-Za-z0-9]+)"', line)) - results
    ]


def make_claude_session(path: Path, size: int) -> dict[str, Any]:
    """A Claude Code session of about ``size`` bytes ending with a call in flight."""
    lines = _answered(_template("claude-code"))
    call = next(line for line in reversed(lines) if b'"tool_use"' in line)
    with path.open("wb") as out:
        for chunk in _copies(lines, _CLAUDE_CALL, size, 0):
            out.write(chunk)
        out.write(_CLAUDE_CALL.sub(b"toolu_inflight", call) + b"\n")
    return {"bytes": path.stat().st_size}


def make_codex_rollout(path: Path, size: int) -> dict[str, Any]:
    """A Codex rollout of about ``size`` bytes ending with a call in flight."""
    lines = _template("codex-rollout")
    session_meta = [line for line in lines if b'"type":"session_meta"' in line]
    rest = [line for line in lines if b'"type":"session_meta"' not in line]
    call = next(line for line in reversed(rest) if b'"type":"function_call"' in line)
    with path.open("wb") as out:
        for chunk in _copies([*session_meta, *rest], _CODEX_CALL, size, len(session_meta)):
            out.write(chunk)
        out.write(_CODEX_CALL.sub(b"call_inflight", call) + b"\n")
    return {"bytes": path.stat().st_size}


_LOADS = """
import json, sys
with open(sys.argv[1], "rb") as handle:
    for line in handle:
        json.loads(line)
"""


def _peak_of(argv: list[str]) -> tuple[float, int, int]:
    """Wall seconds, peak RSS bytes and exit code of a Python command (``-c`` script)."""
    start = time.perf_counter()
    done = subprocess.run(
        ["/usr/bin/time", "-f", "%M", sys.executable, *argv],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        check=False,
    )
    seconds = time.perf_counter() - start
    peak = int(done.stderr.decode().strip().splitlines()[-1]) * 1024
    return seconds, peak, done.returncode


def baseline_loads(path: Path) -> tuple[float, int]:
    seconds, peak, _ = _peak_of(["-c", _LOADS, str(path)])
    return seconds, peak


def agc_resume(args: list[str]) -> tuple[float, int, int]:
    return _peak_of(["-m", "agc.cli.app", "resume", *args])
