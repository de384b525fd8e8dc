"""Peak memory and wall time of ``agc ledger record`` on an input with one very long line.

The input is a generated Codex rollout (:func:`benchmarks.ledger_events.write_rollout`,
2,000 lines) with one line of ``size`` bytes (a ``codex exec --json`` ``item.completed``
event of a shell command that long) after its first line. Each command runs in a
process of its own and reports its peak resident set itself
(:func:`benchmarks.history_memory.peak_rss`). Compared in the same run: the same
command of :data:`STREAMING_REFERENCE` (main before event lines were read in bounded
pieces: every line read and parsed whole), run from its ``git archive`` by the same
Python, and the current command on the rollout without the long line (the fixed part).
Judged: (peak - fixed) / line bytes, and the reference's peak over the current one.

A second input holds one Codex ``function_call`` line whose ``arguments`` (a JSON object
encoded in a string) is 50 MB (20 MB quick) of escaped quotes (``[\\"q\\",…]``):
the cut copy of such a line was made with a Python step per escaped quote before
:data:`QUOTES_REFERENCE`. Judged: the reference's time over today's on that input, each
less the time on the rollout alone (the fixed part, measured today).

Run: ``python -m benchmarks --only ledger_long_line --rounds 1 --name ledger-long-line``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from benchmarks.history_memory import peak_rss
from benchmarks.ledger_bench import _reference_tree
from benchmarks.ledger_events import write_rollout
from benchmarks.report import Row, Section, Target

if TYPE_CHECKING:
    from collections.abc import Callable

    from benchmarks.suites import Context

__all__ = ["QUOTES_REFERENCE", "STREAMING_REFERENCE", "bench_ledger_long_line"]

STREAMING_REFERENCE = "312aa8e623cb0f63b572be15d4c0c14e656a65c8"
"""main before ``agc ledger record`` read its input with the line reader of
``agc ledger check``: each input line was read and parsed whole."""

QUOTES_REFERENCE = "c9b0c7a539192f468067b6fd3cc5a72c15a93792"
"""main before the cut copy of an overlong line found a string's end by regular
expression: it took one Python step per escaped quote."""

_NET_TARGET = 0.05
_QUOTES_TARGET = 3.0


def _with_long_line(rollout: Path, out: Path, size: int) -> int:
    """``rollout`` with one ``size``-byte line after its first line; returns the bytes."""
    head = (
        b'{"type":"item.completed","item":{"id":"x","type":"command_execution",'
        b'"status":"completed","exit_code":0,"command":"bash -lc \'echo '
    )
    tail = b"'\"}}\n"
    with rollout.open("rb") as source, out.open("wb") as sink:
        sink.write(source.readline())
        sink.write(head)
        remaining = size - len(head) - len(tail)
        block = b"a" * (1 << 20)
        while remaining > 0:
            sink.write(block[: min(remaining, len(block))])
            remaining -= len(block)
        sink.write(tail)
        shutil.copyfileobj(source, sink)
    return out.stat().st_size


def _with_quoted_call(rollout: Path, out: Path, size: int) -> int:
    """``rollout`` with one Codex ``function_call`` line of about ``size`` bytes after its
    first line: its ``arguments`` string holds ``{"cmd": "cat README.md", "pad": ["q",
    …]}``, every inner quote escaped; returns the bytes."""
    head = (
        b'{"timestamp":"2026-01-01T00:00:00.000Z","type":"response_item","payload":'
        b'{"type":"function_call","name":"exec_command","call_id":"call_quoted",'
        b'"arguments":"{\\"cmd\\":\\"cat README.md\\",\\"pad\\":[\\"q\\"'
    )
    tail = b']}"}}\n'
    with rollout.open("rb") as source, out.open("wb") as sink:
        sink.write(source.readline())
        sink.write(head)
        item = b',\\"q\\"'
        block = item * ((1 << 20) // len(item))
        remaining = size - len(head) - len(tail)
        while remaining > 0:
            part = block[: max(len(item), min(remaining, len(block)) // len(item) * len(item))]
            sink.write(part)
            remaining -= len(part)
        sink.write(tail)
        shutil.copyfileobj(source, sink)
    return out.stat().st_size


def bench_ledger_long_line(ctx: Context) -> Section:
    """Peak memory of ``agc ledger record`` with one long input line, now and before."""
    size = _line_size(ctx)
    section = Section(
        "ledger_long_line",
        "Recording a turn ledger from an input with one very long line",
        f"`agc ledger record` on a 2,000-line generated rollout holding one {size:,}-byte "
        "line, each run in a process of its own reporting its peak resident set; the same "
        f"command of {STREAMING_REFERENCE[:12]} (main before the bounded line reader, run "
        "from its `git archive` by the same Python), and the current command on the "
        "rollout alone (the fixed part). Then a rollout holding one "
        f"{_quoted_size(ctx):,}-byte function call whose arguments are escaped "
        f"quotes, today and at {QUOTES_REFERENCE[:12]} (main before the cut copy found a "
        "string's end by regular expression).",
    )
    work = ctx.fresh("ledger_long_line")
    rollout = work / "rollout.jsonl"
    write_rollout(rollout, 2_000)
    events = work / "events.jsonl"
    total = _with_long_line(rollout, events, size)
    prompt = work / "prompt.txt"
    prompt.write_text("make the game\n")
    report = work / "peak.txt"

    def argv(source: Path, project: str) -> list[str]:
        folder = work / project
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()
        return [
            *("ledger", "record", "--project", str(folder), "--turn-id", "bench-long-1"),
            *("--prompt-file", str(prompt), "--input", str(source)),
        ]

    fixed, fixed_s = peak_rss(argv(rollout, "fixed"), report)
    peak, seconds = peak_rss(argv(events, "now"), report)
    reference, why = _reference_tree(work, STREAMING_REFERENCE)
    old: tuple[int, float] | None = None
    if reference is not None:
        old = peak_rss(argv(events, "before"), report, pythonpath=reference)
    mib = 2**20
    section.rows.append(
        Row(
            f"agc ledger record, one {size / 1e6:,.0f} MB line: peak {peak / mib:,.0f} MiB",
            median_s=seconds,
            spread=0.0,
            rounds=1,
            baseline="reference commit" if old else None,
            ratio=None if old is None else old[1] / seconds,
            peak_bytes=peak,
        )
    )
    if old is not None:
        section.rows.append(
            Row(
                f"reference commit {STREAMING_REFERENCE[:12]}: peak {old[0] / mib:,.0f} MiB",
                median_s=old[1],
                spread=0.0,
                rounds=1,
                peak_bytes=old[0],
            )
        )
    else:
        section.rows.append(Row("reference commit", skipped=why))
    section.rows.append(
        Row(
            f"agc ledger record, the rollout alone: peak {fixed / mib:,.0f} MiB",
            median_s=fixed_s,
            spread=0.0,
            rounds=1,
            peak_bytes=fixed,
        )
    )
    net = (peak - fixed) / size
    section.targets.append(
        Target.judge(
            "ledger-long-line-memory",
            f"peak memory beyond the rollout alone <= {_NET_TARGET:g}x the long line",
            net,
            threshold=_NET_TARGET,
            op="<=",
            note=f"(peak - fixed) / {size:,} line bytes; input {total:,} bytes",
        )
    )
    section.targets.append(
        Target.judge(
            "ledger-long-line-vs-reference",
            f"the reference commit's peak / today's peak >= 5 (one {size:,}-byte line)",
            None if old is None else old[0] / peak,
            threshold=5.0,
            op=">=",
            note=f"reference {old[0]:,} bytes, today {peak:,} bytes" if old else why or "",
        )
    )
    _quoted_rows(ctx, section, work, rollout, argv, report, fixed_s=fixed_s)
    section.extra.update(
        {"line_bytes": size, "peak_bytes": peak, "fixed_bytes": fixed,
         "reference_peak_bytes": None if old is None else old[0],
         "reference_commit": STREAMING_REFERENCE}
    )  # fmt: skip
    shutil.rmtree(work)
    return section


def _line_size(ctx: Context) -> int:
    """Bytes of the long line: 200 MB (50 MB quick); ``AGC_BENCH_LONG_LINE_BYTES``
    overrides it (the harness's own test runs the same code path on a small line)."""
    return int(os.environ.get("AGC_BENCH_LONG_LINE_BYTES") or (50 if ctx.quick else 200) * 10**6)


def _quoted_size(ctx: Context) -> int:
    """Bytes of the call of escaped quotes: enough for it to outweigh the fixed part
    (20 MB quick, 50 MB in full; two fifths of ``AGC_BENCH_LONG_LINE_BYTES`` when set)."""
    if os.environ.get("AGC_BENCH_LONG_LINE_BYTES"):
        return _line_size(ctx) * 2 // 5
    return (20 if ctx.quick else 50) * 10**6


def _quoted_rows(
    ctx: Context,
    section: Section,
    work: Path,
    rollout: Path,
    argv: Callable[[Path, str], list[str]],
    report: Path,
    *,
    fixed_s: float,
) -> None:
    """The rows and target of the line of escaped quotes (module docstring): the times
    are judged net of ``fixed_s``, the same command's time on the rollout alone."""
    size = _quoted_size(ctx)
    quoted = work / "quoted.jsonl"
    _with_quoted_call(rollout, quoted, size)
    _, seconds = peak_rss(argv(quoted, "quoted-now"), report)
    reference, why = _reference_tree(work, QUOTES_REFERENCE)
    old: float | None = None
    if reference is not None:
        old = peak_rss(argv(quoted, "quoted-before"), report, pythonpath=reference)[1]
    section.rows.append(
        Row(
            f"agc ledger record, one {size / 1e6:,.0f} MB call of escaped quotes",
            median_s=seconds,
            spread=0.0,
            rounds=1,
            baseline="reference commit" if old else None,
            ratio=None if old is None else old / seconds,
        )
    )
    net = None if old is None else (old - fixed_s) / max(seconds - fixed_s, 1e-3)
    if old is None:
        section.rows.append(Row("reference commit (escaped quotes)", skipped=why))
    else:
        section.rows.append(
            Row(
                f"reference commit {QUOTES_REFERENCE[:12]}, the same call",
                median_s=old,
                spread=0.0,
                rounds=1,
            )
        )
    section.targets.append(
        Target.judge(
            "ledger-long-line-quotes",
            f"the reference commit's time / today's, less the rollout alone's, >= "
            f"{_QUOTES_TARGET:g} (one {size:,}-byte call of escaped quotes)",
            net,
            threshold=_QUOTES_TARGET,
            op=">=",
            note=(
                f"reference {old:.2f} s, today {seconds:.2f} s, the rollout alone {fixed_s:.2f} s"
                if old
                else why or ""
            ),
        )
    )
