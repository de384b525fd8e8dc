"""Timing primitives: interleaved rounds, medians, ratios against a baseline.

Method (the same for every benchmark): the variants of one comparison (agc and its
baselines) run in the same process run, one after the other inside each round, with
the order rotated every round so that drift on a shared machine (other jobs, CPU
frequency, page-cache pressure) hits every variant alike. One untimed warm-up run per
variant comes first. A variant's figure is the median of its rounds; a ratio is the
ratio of two medians. Wall time is ``time.perf_counter`` (seconds); commands run with
``subprocess`` and their whole wall time counts, process start included.
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "Timing",
    "Variant",
    "best_of",
    "command_variant",
    "find_tool",
    "interleaved",
    "time_once",
]


@dataclass(frozen=True)
class Timing:
    """The wall times of one variant, one per round, in seconds."""

    samples: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def spread(self) -> float:
        """(max - min) / median: how noisy the rounds were (0.1 = 10 %)."""
        if not self.samples or self.median == 0:
            return 0.0
        return (max(self.samples) - min(self.samples)) / self.median


@dataclass
class Variant:
    """One thing to time.

    Attributes:
        name: label in the results.
        run: does the work once; returns the seconds to count, or ``None`` to count the
            wall time of the whole call.
        setup: untimed work before each run (e.g. a fresh output folder).
        teardown: untimed work after each run.
    """

    name: str
    run: Callable[[], float | None]
    setup: Callable[[], None] | None = None
    teardown: Callable[[], None] | None = None
    samples: list[float] = field(default_factory=list)

    def once(self) -> float:
        if self.setup is not None:
            self.setup()
        try:
            start = time.perf_counter()
            counted = self.run()
            wall = time.perf_counter() - start
        finally:
            if self.teardown is not None:
                self.teardown()
        return wall if counted is None else counted


def time_once(fn: Callable[[], object]) -> float:
    """Wall time of one call to ``fn``, in seconds."""
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def best_of(fn: Callable[[], object], repeat: int) -> float:
    """The least wall time of ``repeat`` calls to ``fn``, in seconds."""
    return min(time_once(fn) for _ in range(repeat))


def interleaved(
    variants: Sequence[Variant], *, rounds: int, warmup: bool = True
) -> dict[str, Timing]:
    """Run every variant ``rounds`` times, interleaved and rotated; return their timings."""
    if warmup:
        for variant in variants:
            variant.once()
    count = len(variants)
    for round_no in range(rounds):
        for offset in range(count):
            variant = variants[(round_no + offset) % count]
            variant.samples.append(variant.once())
    return {v.name: Timing(tuple(v.samples)) for v in variants}


def find_tool(name: str) -> str | None:
    """Absolute path of a command-line tool on ``PATH``, or ``None`` when absent."""
    return shutil.which(name)


def command_variant(name: str, argv: Sequence[str], *, cwd: Path | None = None) -> Variant:
    """A variant that runs ``argv`` (stdout and stderr to /dev/null) and checks exit 0.

    Raises:
        RuntimeError: the command failed (a benchmark never times a failing command).
    """

    def run() -> None:
        done = subprocess.run(
            list(argv),
            cwd=cwd,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(
                f"{' '.join(argv)} exited {done.returncode}: {done.stderr.decode(errors='replace')}"
            )

    return Variant(name=name, run=run)
