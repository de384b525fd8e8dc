"""The ledger benchmark: ``agc ledger record`` on a generated rollout, in one run against
today's code (a reference commit) and an orjson read loop over the same file.

Reference: the source tree of :data:`REFERENCE_COMMIT` (the code before the fast
event-line reader), taken from this checkout's git history with ``git archive`` into
the scratch folder and run by the same Python with ``PYTHONPATH`` set to it, so that
"today" is measured in the same run, interleaved with the current code. Without git
or that commit the reference rows and the target are skipped, with the reason.
"""

from __future__ import annotations

import compileall
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from benchmarks.harness import Variant, interleaved
from benchmarks.ledger_events import write_rollout
from benchmarks.report import Row, Section, Target

if TYPE_CHECKING:
    from benchmarks.suites import Context

__all__ = ["REFERENCE_COMMIT", "bench_ledger"]

REFERENCE_COMMIT = "3f49689683a5a5485b336952b462b377337a4048"
"""main before the fast event-line reader: ``ledger record`` read each line with the
standard library's parser (agc._core.json.loads)."""

_REPO = Path(__file__).resolve().parent.parent
_RUN_AGC = "import sys; from agc.cli.app import main; sys.exit(main())"
_ORJSON_LOOP = (
    "import sys, orjson\n"
    "with open(sys.argv[1], 'rb') as f:\n"
    "    for line in f:\n"
    "        orjson.loads(line)\n"
)


def _reference_tree(work: Path, commit: str = REFERENCE_COMMIT) -> tuple[Path | None, str | None]:
    """``src`` of ``commit`` (the reference commit) under ``work``, or ``(None, why)``."""
    git = shutil.which("git")
    if git is None:
        return None, "git not found on PATH; reference (today's code) skipped"
    target = work / "reference"
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    archive = subprocess.run(
        [git, "-C", str(_REPO), "archive", commit, "src"],
        capture_output=True,
        check=False,
    )
    if archive.returncode != 0:
        why = archive.stderr.decode(errors="replace").strip()
        return None, f"git archive {commit[:12]} failed ({why}); reference skipped"
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive.stdout, check=True)
    compileall.compile_dir(target / "src", quiet=1)
    return target / "src", None


def _command(name: str, argv: list[str], env: dict[str, str], reset: Path) -> Variant:
    def setup() -> None:
        shutil.rmtree(reset / ".agent", ignore_errors=True)

    def run() -> None:
        done = subprocess.run(
            argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False
        )
        if done.returncode != 0:
            raise RuntimeError(f"{name} exited {done.returncode}: {done.stderr.decode()[-500:]}")

    return Variant(name, run, setup=setup)


def bench_ledger(ctx: Context) -> Section:
    """``agc ledger record --input ROLLOUT`` (the whole command) vs the reference commit's
    and vs ``orjson.loads`` over every line of the same file (a process of its own)."""
    from benchmarks.suites import _compile_agc  # noqa: PLC0415 - suites imports this module

    # AGC_BENCH_LEDGER_LINES sets another rollout length (the harness's own test: a few
    # thousand lines, the same code path).
    count = int(os.environ.get("AGC_BENCH_LEDGER_LINES") or (20_000 if ctx.quick else 1_000_000))
    section = Section(
        "ledger",
        "8. Recording a turn ledger from a long rollout",
        f"`agc ledger record` on a generated Codex rollout of {count:,} lines (whole "
        "command, agc byte-compiled) vs the same command of the reference commit "
        f"{REFERENCE_COMMIT[:12]} (today's code, run from its `git archive` by the same "
        "Python) and vs an orjson read loop over the same file (its own process).",
    )
    _compile_agc()
    work = ctx.fresh("ledger")
    events = work / "rollout.jsonl"
    size = write_rollout(events, count)
    prompt = work / "prompt.txt"
    prompt.write_text("make the game\n")
    project = work / "project"
    project.mkdir()
    args = [
        *("ledger", "record", "--project", str(project), "--turn-id", "bench-ledger-1"),
        *("--prompt-file", str(prompt), "--input", str(events)),
    ]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    variants = [
        _command("agc ledger record", [sys.executable, "-c", _RUN_AGC, *args], env, project)
    ]
    reference, why = _reference_tree(work)
    if reference is not None:
        old_env = {**env, "PYTHONPATH": str(reference)}
        variants.append(
            _command("reference commit", [sys.executable, "-c", _RUN_AGC, *args], old_env, project)
        )
    loop = [sys.executable, "-c", _ORJSON_LOOP, str(events)]
    variants.append(_command("orjson read loop", loop, env, project))
    # Each run fsyncs the turn file's records (256 at most): seconds of fixed cost on a
    # slow disk, so --quick times one round.
    rounds = 1 if ctx.quick else min(ctx.rounds, 3)
    timings = interleaved(variants, rounds=rounds, warmup=False)
    mb = size / 1e6
    agc_timing = timings["agc ledger record"]
    old = timings.get("reference commit")
    section.rows.append(
        Row.timed(
            "agc ledger record",
            agc_timing,
            work=mb,
            unit="MB/s",
            baseline=old,
            baseline_name="reference commit" if old else None,
        )
    )
    if old is not None:
        section.rows.append(Row.timed("reference commit (today)", old, work=mb, unit="MB/s"))
    else:
        section.rows.append(Row("reference commit (today)", skipped=why))
    loop_timing = timings["orjson read loop"]
    section.rows.append(
        Row.timed(
            "orjson read loop",
            loop_timing,
            work=mb,
            unit="MB/s",
            baseline=agc_timing,
            baseline_name="agc ledger record",
        )
    )
    section.targets.append(
        Target.judge(
            "ledger-record-2x",
            f"agc ledger record >= 2x the reference commit {REFERENCE_COMMIT[:12]} (wall time)",
            None if old is None else old.median / agc_timing.median,
            threshold=2.0,
            op=">=",
            note=why or f"{count:,} lines, {size:,} bytes",
        )
    )
    section.extra["lines"] = count
    section.extra["bytes"] = size
    section.extra["reference_commit"] = REFERENCE_COMMIT
    shutil.rmtree(work)
    return section
