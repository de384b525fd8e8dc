"""Per-run checks of ``agc-verify --all`` in parallel: local processes or a Dask cluster.

The runs are cut into chunks in run-id order; each chunk is checked by one task (for
``--jobs N``: this process or one of ``N - 1`` worker processes of a
:class:`~concurrent.futures.ProcessPoolExecutor`; a task of a Dask distributed cluster
for ``--scheduler tcp://HOST:PORT``), and the reports are
put back in run-id order whatever order the tasks finish in, so the report is the same
as one process would give. Only the per-run checks are distributed: the chain is read
and checked once, by the caller.

A task gets a picklable check (a store path or an object store without its client, raw
public keys, the policy) and a chunk of items; every worker makes its own S3 client from
its own environment, so no credential travels with a task.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Any, Final, TypeVar

from agc.errors import StoreError, UsageError

__all__ = ["AUTO_PARALLEL_RUNS", "MAX_JOBS", "map_checks", "resolve_jobs"]

T = TypeVar("T")
R = TypeVar("R")
MAX_JOBS: Final = 256
_CHUNK_RUNS: Final = 64
AUTO_PARALLEL_RUNS: Final = 512
"""With ``jobs=None`` (auto), stores of at least this many runs use every usable core:
below it, starting worker processes costs more than it saves."""


def resolve_jobs(jobs: int | None, total: int) -> int:
    """The worker count for ``total`` items: ``jobs`` itself, or for ``None`` (auto)
    :func:`default_jobs` from :data:`AUTO_PARALLEL_RUNS` items on, else 1.

    Raises:
        UsageError: ``jobs`` outside 1..256.
    """
    if jobs is None:
        return min(default_jobs(), MAX_JOBS) if total >= AUTO_PARALLEL_RUNS else 1
    if not 1 <= jobs <= MAX_JOBS:
        raise UsageError(f"--jobs must be 1..{MAX_JOBS}, not {jobs}")
    return jobs


def _chunk(check: Callable[[T], R], items: Sequence[T]) -> list[R]:
    return [check(item) for item in items]


def _chunks(items: Sequence[T], jobs: int) -> list[Sequence[T]]:
    # Small enough to balance the load and show progress, large enough that a task's
    # overhead (pickling, scheduling) is spread over many runs.
    size = max(1, min(_CHUNK_RUNS, -(-len(items) // (jobs * 4))))
    return [items[i : i + size] for i in range(0, len(items), size)]


def map_checks(
    check: Callable[[T], R],
    items: Sequence[T],
    *,
    jobs: int | None = 1,
    scheduler: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> list[R]:
    """``[check(item) for item in items]``, in parallel, results in the order of ``items``.

    Args:
        check: a picklable callable (a module-level function or a frozen dataclass).
        jobs: local processes, this one included (1: only this process; ``None``: see
            :func:`resolve_jobs`).
        scheduler: a Dask distributed scheduler address (``tcp://HOST:PORT``); the
            checks then run on its workers and ``jobs`` is not used.
        progress: called with ``(items done, items total)``.

    Raises:
        UsageError: ``jobs`` outside 1..256.
        StoreError: the scheduler cannot be reached.
        Whatever ``check`` raises (the first failure stops the run).
    """
    total = len(items)
    jobs = resolve_jobs(jobs, total)
    if scheduler is not None:
        return _on_dask(check, items, scheduler, progress)
    if jobs == 1 or total <= 1:
        results = []
        for done, item in enumerate(items, start=1):
            results.append(check(item))
            if progress is not None:
                progress(done, total)
        return results
    return _in_processes(check, _chunks(items, jobs), jobs, progress)


def _in_processes(
    check: Callable[[T], R],
    chunks: list[Sequence[T]],
    jobs: int,
    progress: Callable[[int, int], None] | None,
) -> list[R]:
    """The chunks checked by ``jobs`` processes: this one and ``jobs - 1`` workers.

    This process takes the next chunk whenever the workers have enough queued, so only
    the workers' share of the reports is pickled back, and one process fewer is started.
    """
    total = sum(len(chunk) for chunk in chunks)
    out: list[list[R] | None] = [None] * len(chunks)
    failed: dict[int, BaseException] = {}
    done = 0

    def finish(index: int, result: list[R] | None, error: BaseException | None) -> None:
        nonlocal done
        if error is not None:
            failed[index] = error
            return
        out[index] = result
        done += len(chunks[index])
        if progress is not None:
            progress(done, total)

    workers = min(jobs - 1, len(chunks))
    queued = 2 * workers + 1  # a worker never waits for this process to hand it more
    with ProcessPoolExecutor(max_workers=workers) as pool:
        pending: dict[Future[list[R]], int] = {}
        upcoming = 0
        while upcoming < len(chunks) or pending:
            while len(pending) < queued and upcoming < len(chunks):
                pending[pool.submit(_chunk, check, chunks[upcoming])] = upcoming
                upcoming += 1
            if upcoming < len(chunks):
                index, upcoming = upcoming, upcoming + 1
                try:
                    result = _chunk(check, chunks[index])
                except Exception as exc:  # as a worker's: the earliest run's is raised
                    finish(index, None, exc)
                else:
                    finish(index, result, None)
                finished = [future for future in pending if future.done()]
            else:
                finished = list(wait(pending, return_when=FIRST_COMPLETED).done)
            for future in finished:
                index = pending.pop(future)
                error = future.exception()
                finish(index, None if error is not None else future.result(), error)
    if failed:
        # The failure of the earliest run in run-id order, as one process would raise it,
        # whichever chunk happened to finish first.
        raise failed[min(failed)]
    return [result for chunk in out if chunk is not None for result in chunk]


def _on_dask(
    check: Callable[[T], R],
    items: Sequence[T],
    scheduler: str,
    progress: Callable[[int, int], None] | None,
) -> list[R]:
    try:
        import distributed  # noqa: PLC0415 - only with --scheduler
    except ImportError as exc:  # pragma: no cover - a dependency of agc
        raise UsageError("--scheduler needs the dask[distributed] package") from exc
    try:
        client: Any = distributed.Client(scheduler, timeout="10s", set_as_default=False)  # type: ignore[no-untyped-call]
    except (OSError, TimeoutError) as exc:
        raise StoreError(
            f"cannot reach the Dask scheduler at {scheduler}: {exc}",
            hint="Start one with `dask scheduler` (and workers with `dask worker ADDRESS`).",
        ) from exc
    try:
        workers = max(1, len(client.scheduler_info().get("workers", {})))
        chunks = _chunks(items, workers)
        # pure=False: identical chunks (never, but cheap to say) are still computed.
        futures = client.map(_chunk, [check] * len(chunks), chunks, pure=False)
        out: list[Any] = []
        done = 0
        # Gathered in order (a client of our own, never the process's default client):
        # progress moves as the earliest outstanding chunk completes.
        for future, chunk in zip(futures, chunks, strict=True):
            out.append(client.gather(future))
            done += len(chunk)
            if progress is not None:
                progress(done, len(items))
        return [result for part in out for result in part]
    finally:
        client.close()


def default_jobs() -> int:
    """The usable cores of this process."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
