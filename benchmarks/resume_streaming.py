"""``agc resume`` on large session files: time and peak memory against ``json.loads``.

The inputs are real-shaped: the message lines of a real Claude Code session and of a
real Codex rollout (``../shared/fixtures/real``, or a small built-in sample of the same
shapes when it is absent) repeated until the file reaches the size asked, every call
id and line uuid made unique per copy (or the call ids shared by two copies, or by all:
ids used again), the last call left in flight (no result).

Each command runs in a process of its own (see :mod:`benchmarks.history_memory` for the
peak: ``VmHWM`` read at the interpreter's exit). The baseline is a plain loop of
``json.loads`` over the same file's lines, also in a process of its own, in the same run.
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from benchmarks.report import Target

__all__ = [
    "MAKERS",
    "Rounds",
    "Run",
    "agc_resume",
    "baseline_loads",
    "interleaved_rounds",
    "make_claude_session",
    "make_claude_session_ids_twice",
    "make_codex_rollout",
    "make_codex_rollout_ids_reused",
    "make_codex_rollout_ids_twice",
    "make_codex_rollout_interrupted_early",
    "note_runs",
    "warm",
]

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


def _copies(
    lines: list[bytes], call: re.Pattern[bytes], size: int, head: int, reuse: int | None = 1
) -> Iterator[bytes]:
    """The ``head`` first lines, then the rest copied until about ``size`` bytes, each
    copy's line uuids made unique; its call ids too, shared by ``reuse`` copies in a row
    (1: every copy's own; 2: each id used twice; ``None``: every copy keeps the
    template's, so each id is used once a copy)."""
    body = b"\n".join(lines[head:]) + b"\n"
    yield b"\n".join(lines[:head]) + (b"\n" if head else b"")
    written = len(body)
    copy = 0
    while written < size:
        copy += 1
        tag = b"%08x" % copy

        def uuid(match: re.Match[bytes], tag: bytes = tag) -> bytes:
            return match.group(0)[:-8] + tag

        group = (copy - 1) // reuse if reuse else 0  # copies of one group share call ids
        call_tag = b"%08x" % group

        def call_id(match: re.Match[bytes], tag: bytes = call_tag) -> bytes:
            return match.group(0) + b"x" + tag

        chunk = _UUID.sub(uuid, body) if copy > 1 else body
        if group:
            chunk = call.sub(call_id, chunk)
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


def make_claude_session(path: Path, size: int, *, reuse: int | None = 1) -> dict[str, Any]:
    """A Claude Code session of about ``size`` bytes ending with a call in flight
    (``reuse``: see :func:`_copies`)."""
    lines = _answered(_template("claude-code"))
    call = next(line for line in reversed(lines) if b'"tool_use"' in line)
    with path.open("wb") as out:
        for chunk in _copies(lines, _CLAUDE_CALL, size, 0, reuse):
            out.write(chunk)
        out.write(_CLAUDE_CALL.sub(b"toolu_inflight", call) + b"\n")
    return {"bytes": path.stat().st_size}


def make_codex_rollout(path: Path, size: int, *, reuse: int | None = 1) -> dict[str, Any]:
    """A Codex rollout of about ``size`` bytes ending with a call in flight (``reuse``:
    see :func:`_copies`)."""
    lines = _template("codex-rollout")
    session_meta = [line for line in lines if b'"type":"session_meta"' in line]
    rest = [line for line in lines if b'"type":"session_meta"' not in line]
    call = next(line for line in reversed(rest) if b'"type":"function_call"' in line)
    with path.open("wb") as out:
        for chunk in _copies([*session_meta, *rest], _CODEX_CALL, size, len(session_meta), reuse):
            out.write(chunk)
        out.write(_CODEX_CALL.sub(b"call_inflight", call) + b"\n")
    return {"bytes": path.stat().st_size}


def make_codex_rollout_interrupted_early(path: Path, size: int) -> dict[str, Any]:
    """A Codex rollout of about ``size`` bytes whose first item is a call never answered
    (line 2, after ``session_meta``), the rest valid history: everything after the first
    problem is as long as the file."""
    lines = _template("codex-rollout")
    session_meta = [line for line in lines if b'"type":"session_meta"' in line]
    rest = [line for line in lines if b'"type":"session_meta"' not in line]
    call = next(line for line in reversed(rest) if b'"type":"function_call"' in line)
    with path.open("wb") as out:
        for number, chunk in enumerate(
            _copies([*session_meta, *rest], _CODEX_CALL, size, len(session_meta))
        ):
            out.write(chunk)
            if not number:  # after the head: the call interrupted early
                out.write(_CODEX_CALL.sub(b"call_interrupted", call) + b"\n")
    return {"bytes": path.stat().st_size}


def make_codex_rollout_ids_twice(path: Path, size: int) -> dict[str, Any]:
    """:func:`make_codex_rollout` whose call ids are each used by two calls (two copies
    in a row share them): every second call is dropped as a duplicate."""
    return make_codex_rollout(path, size, reuse=2)


def make_codex_rollout_ids_reused(path: Path, size: int) -> dict[str, Any]:
    """:func:`make_codex_rollout` whose copies all keep the template's call ids: each
    id is used once a copy, thousands of times in a large file."""
    return make_codex_rollout(path, size, reuse=None)


def make_claude_session_ids_twice(path: Path, size: int) -> dict[str, Any]:
    """:func:`make_claude_session` whose call ids are each used by two calls."""
    return make_claude_session(path, size, reuse=2)


MAKERS: dict[str, Callable[[Path, int], dict[str, Any]]] = {
    "claude-code": make_claude_session,
    "codex-rollout": make_codex_rollout,
    "codex-rollout-interrupted-early": make_codex_rollout_interrupted_early,
    "codex-rollout-ids-twice": make_codex_rollout_ids_twice,
    "codex-rollout-ids-reused": make_codex_rollout_ids_reused,
    "claude-code-ids-twice": make_claude_session_ids_twice,
}
"""The shapes of session files measured: kind -> maker of a file of about a size."""


_LOADS = """
import json, sys
with open(sys.argv[1], "rb") as handle:
    for line in handle:
        json.loads(line)
"""


class Run(NamedTuple):
    """One timed process: wall seconds, peak RSS bytes, exit code, and CPU seconds
    (user + system) with the blocks it read from the disk (``/usr/bin/time``'s ``%I``:
    0 when the file was in the page cache)."""

    seconds: float
    peak: int
    code: int
    cpu: float
    disk_reads: int


def _peak_of(argv: list[str]) -> Run:
    """A Python command (``-c`` script) run and timed in a process of its own."""
    start = time.perf_counter()
    done = subprocess.run(
        ["/usr/bin/time", "-f", "%M %U %S %I", sys.executable, *argv],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        check=False,
    )
    seconds = time.perf_counter() - start
    peak, user, system, reads = done.stderr.decode().strip().splitlines()[-1].split()
    return Run(seconds, int(peak) * 1024, done.returncode, float(user) + float(system), int(reads))


def baseline_loads(path: Path) -> Run:
    return _peak_of(["-c", _LOADS, str(path)])


def agc_resume(args: list[str]) -> Run:
    script = "import sys; from agc.cli.app import main; sys.exit(main(sys.argv[1:]))"
    return _peak_of(["-c", script, "resume", *args])


def warm(path: Path) -> None:
    """Read ``path`` once so that the timed runs find it in the page cache (a file just
    written may be partly written back and dropped by then, on a machine shared with
    other work)."""
    with path.open("rb", buffering=0) as handle:
        while handle.read(8 * 1024 * 1024):
            pass


_TARGET_CHECK = 2.0
_TARGET_REPAIR = 3.0
_TARGET_PEAK = 150 * 1000**2
_SIZE_OPTION = "AGC_BENCH_RESUME_LARGE"  # e.g. 1GB: the flat-memory case, opt-in


def cpu_median(runs: list[Run]) -> float:
    """The median CPU seconds of ``runs``."""
    return statistics.median(run.cpu for run in runs)


class Rounds(NamedTuple):
    """What :func:`interleaved_rounds` measured, by label (``base`` and each command's)."""

    runs: dict[str, list[Run]]
    times: dict[str, list[float]]  # seconds of each round
    peaks: dict[str, int]  # the largest peak of the rounds
    codes: dict[str, int]  # the first exit code other than 0 or 1, else 0


def interleaved_rounds(
    path: Path, commands: dict[str, list[str]], out: Path, rounds: int
) -> Rounds:
    """``rounds`` rounds of the ``json.loads`` loop over ``path`` and then each of
    ``commands`` (``agc resume`` arguments, ``out`` removed before each), interleaved so a
    load that comes and goes on a shared machine weighs on each alike."""
    runs: dict[str, list[Run]] = {"base": [], **{label: [] for label in commands}}
    for _ in range(rounds):
        runs["base"].append(baseline_loads(path))
        for label, argv in commands.items():
            out.unlink(missing_ok=True)
            runs[label].append(agc_resume(argv))
    return Rounds(
        runs,
        {label: [run.seconds for run in done] for label, done in runs.items()},
        {label: max(run.peak for run in done) for label, done in runs.items()},
        {
            label: next((run.code for run in done if run.code not in (0, 1)), 0)
            for label, done in runs.items()
        },
    )


def note_runs(row: Any, runs: list[Run]) -> None:
    """Note on ``row`` the largest peak, the median CPU time and the most bytes read
    from the disk (512-byte blocks) of ``runs``."""
    row.peak_bytes = max(run.peak for run in runs)
    row.cpu_s = cpu_median(runs)
    row.disk_bytes = max(run.disk_reads for run in runs) * 512


def _spread(times: list[float]) -> float | None:
    """(max - min) / median of the rounds; ``None`` for one round."""
    if len(times) < 2:
        return None
    return (max(times) - min(times)) / statistics.median(times)


def resume_targets(
    kind: str, label: str, size: int, ratio: float, peak: int, target: float
) -> list[Target]:
    """The targets of one command (``label``: check or repair) on one size of a
    ``kind`` of session file: its time ``ratio`` to the json.loads loop within
    ``target``, and its ``peak`` (bytes, the largest of the rounds) under 150 MB."""
    from benchmarks.report import Target  # noqa: PLC0415 - as the suite: only when run

    return [
        Target.judge(
            f"resume-{kind}-{label}-{size}",
            f"{kind} {label}, {size:,} B: within {target:g}x of json.loads",
            ratio,
            threshold=target,
            op="<=",
            note="time ratio",
        ),
        Target.judge(
            f"resume-{kind}-{label}-{size}-peak",
            f"{kind} {label}, {size:,} B: peak under 150 MB",
            peak / 1000**2,
            threshold=_TARGET_PEAK / 1000**2,
            op="<=",
            note="MB (the largest of the rounds)",
        ),
    ]


def linear_target(kind: str, sizes: list[int], check_by_size: dict[int, float]) -> list[Target]:
    """The large size's check within 12x the time of the small one's (none unless both
    sizes were measured)."""
    from benchmarks.report import Target  # noqa: PLC0415 - as the suite: only when run

    if len(check_by_size) != 2:
        return []
    small, big = sizes
    return [
        Target.judge(
            f"resume-{kind}-linear",
            f"{kind} check: {big:,} B within 12x of {small:,} B",
            check_by_size[big] / check_by_size[small],
            threshold=12.0,
            op="<=",
            note="time ratio",
        )
    ]


_FLAT_MB = 10.0  # the large size's peak above the small one's: flat memory


def flat_target(
    kind: str, label: str, sizes: list[int], peak_by_size: dict[int, int]
) -> list[Target]:
    """The large size's peak (bytes, the largest of its rounds) within 10 MB of the small
    one's: memory that does not grow with the file (none unless both sizes were
    measured)."""
    from benchmarks.report import Target  # noqa: PLC0415 - as the suite: only when run

    if len(peak_by_size) != 2:
        return []
    small, big = sizes
    return [
        Target.judge(
            f"resume-{kind}-{label}-flat",
            f"{kind} {label}: peak at {big:,} B within {_FLAT_MB:g} MB of {small:,} B",
            (peak_by_size[big] - peak_by_size[small]) / 1000**2,
            threshold=_FLAT_MB,
            op="<=",
            note="MB more (flat memory)",
        )
    ]


def bench_resume_streaming(ctx: Any) -> Any:
    """The suite: check and repair (synthesize, ``--out``) of a Claude Code session, a
    Codex rollout, a Codex rollout interrupted early, and a Codex rollout and a Claude
    Code session whose call ids are used again (:data:`MAKERS`) of 100 MB (1 MB
    with ``--quick``), beside the ``json.loads`` loop over the same file, ``--rounds``
    rounds (median); with ``AGC_BENCH_RESUME_LARGE=<size>`` also that size, one round
    (1 GB: 12x the time of 100 MB, its peak within 10 MB of 100 MB's)."""
    from benchmarks.report import Row, Section  # noqa: PLC0415 - only when run
    from benchmarks.run import parse_size  # noqa: PLC0415
    from benchmarks.suites import _compile_agc  # noqa: PLC0415 - suites imports this module

    section = Section(
        "resume_streaming",
        "Resume of large session files",
        "agc resume FILE --check and --strategy synthesize --out on real-shaped session "
        "files (real lines repeated, ids made unique, the last call in flight; or, "
        "interrupted early, the first call never answered; or each call id used by two "
        "copies, or by every copy); each "
        "command and the json.loads loop in a process of their own, agc "
        "byte-compiled as an installed package is; peak is the process's maximum "
        "resident set and cpu its user + system time (/usr/bin/time), with the bytes it read "
        "from the disk when the file was not all in the page cache (it is read once before "
        "the rounds). The rounds of a size are interleaved (json.loads, "
        "check, repair, again); the large size is measured in one round.",
    )
    _compile_agc()
    sizes = [1_000_000] if ctx.quick else [100_000_000]
    large = os.environ.get(_SIZE_OPTION)
    if large:
        sizes.append(parse_size(large))
    for kind, make in MAKERS.items():
        seconds_by_size: dict[int, float] = {}
        peak_by_size: dict[str, dict[int, int]] = {"check": {}, "repair": {}}
        for size in sizes:
            path = ctx.work / f"{kind}-{size}.jsonl"
            try:
                make(path, size)
            except RuntimeError as exc:
                section.rows.append(Row(f"{kind} {size:,} B", skipped=str(exc)))
                continue
            out = ctx.work / f"{kind}-{size}.out.jsonl"
            commands = {
                "check": [str(path), "--check"],
                "repair": [str(path), "--strategy", "synthesize", "--out", str(out)],
            }
            # Rounds interleaved (baseline, check, repair, then again), so a load that
            # comes and goes on a shared machine weighs on each alike; the large size
            # is measured once.
            rounds = max(ctx.rounds, 1) if size == sizes[0] else 1
            warm(path)
            runs, times, peaks, codes = interleaved_rounds(path, commands, out, rounds)
            base_s = statistics.median(times["base"])
            row = Row(
                f"{kind} {size:,} B: json.loads loop",
                median_s=base_s,
                spread=_spread(times["base"]),
                rounds=rounds,
            )
            note_runs(row, runs["base"])
            section.rows.append(row)
            for label, target in (("check", _TARGET_CHECK), ("repair", _TARGET_REPAIR)):
                seconds = statistics.median(times[label])
                peak = peaks[label]
                row = Row(
                    f"{kind} {size:,} B: agc resume {label}",
                    median_s=seconds,
                    spread=_spread(times[label]),
                    rounds=rounds,
                    baseline="json.loads loop",
                    ratio=base_s / seconds,
                )
                note_runs(row, runs[label])
                section.rows.append(row)
                if codes[label]:
                    row.skipped = f"exit {codes[label]}"
                if label == "check":
                    seconds_by_size[size] = seconds
                peak_by_size[label][size] = peak
                section.targets += resume_targets(kind, label, size, seconds / base_s, peak, target)
            path.unlink(missing_ok=True)
            out.unlink(missing_ok=True)
        section.targets += linear_target(kind, sizes, seconds_by_size)
        for label, by_size in peak_by_size.items():
            section.targets += flat_target(kind, label, sizes, by_size)
    return section
