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
import signal
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, wait
from typing import Any, Final, Generic, TypeVar

from agc.errors import MissingExtraError, StoreError, UsageError

__all__ = [
    "AUTO_PARALLEL_RUNS",
    "MAX_JOBS",
    "StartedChecks",
    "map_checks",
    "resolve_jobs",
    "start_checks",
]

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
        MissingExtraError: a scheduler is named and Dask is not installed (the
            ``scale`` extra).
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
    with start_checks(check, items, jobs=jobs, progress=progress) as started:
        return started.results()


def start_checks(
    check: Callable[[T], R],
    items: Sequence[T],
    *,
    jobs: int | None,
    progress: Callable[[int, int], None] | None = None,
) -> StartedChecks[T, R]:
    """:func:`map_checks` in two steps: start the worker processes on ``items`` now;
    :meth:`StartedChecks.results` completes the checks (this process can do other work
    in between). Close it in any case (``with``): that stops the workers if the results
    are never asked for.

    Raises:
        UsageError: ``jobs`` outside 1..256.
    """
    return StartedChecks(check, items, resolve_jobs(jobs, len(items)), progress)


class StartedChecks(Generic[T, R]):
    """Checks started by :func:`start_checks`.

    With ``jobs`` processes, ``jobs - 1`` are workers and this process is the last one:
    :meth:`results` checks the chunks no worker has started yet, from the last one
    backwards, while the workers go on from the first. Only the workers' share of the
    results is pickled back, and one process fewer is started. With one job nothing is
    started: :meth:`results` checks every item.
    """

    def __init__(
        self,
        check: Callable[[T], R],
        items: Sequence[T],
        jobs: int,
        progress: Callable[[int, int], None] | None,
    ) -> None:
        self._check, self._items, self._progress = check, items, progress
        self._chunks = _chunks(items, jobs) if jobs > 1 and len(items) > 1 else []
        self._pool: ProcessPoolExecutor | None = None
        self._futures: list[Future[list[R]]] = []
        if self._chunks:
            self._pool = ProcessPoolExecutor(
                max_workers=min(jobs - 1, len(self._chunks)), initializer=_worker_signals
            )
            try:
                # All submitted at once: the pool hands them to its workers in this order.
                self._futures = [self._pool.submit(_chunk, check, c) for c in self._chunks]
            except BaseException:
                self.close()
                raise

    def __enter__(self) -> StartedChecks[T, R]:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the workers (chunks not started are dropped); nothing once done."""
        pool, self._pool = self._pool, None
        if pool is None:
            return
        try:
            pool.shutdown(wait=True, cancel_futures=True)
        except BaseException:
            # Stopped again while the workers finish their chunks: they are ended, never
            # left behind (they ignore the stop signals; see _worker_signals). The pool
            # does not publish its processes: read defensively, so that a Python whose
            # pool keeps them elsewhere still re-raises the stop, not an AttributeError.
            processes = getattr(pool, "_processes", None) or {}
            for process in list(processes.values()):
                process.kill()
            raise

    def results(self) -> list[R]:
        """``[check(item) for item in items]``, in the order of the items.

        Raises:
            Whatever ``check`` raised for the earliest item that failed.
        """
        if not self._chunks:
            return map_checks(self._check, self._items, jobs=1, progress=self._progress)
        chunks, futures, progress = self._chunks, self._futures, self._progress
        total = len(self._items)
        out: list[list[R] | None] = [None] * len(chunks)
        failed: dict[int, BaseException] = {}
        collected: set[int] = set()
        done = 0

        def record(index: int, result: list[R] | None, error: BaseException | None) -> None:
            nonlocal done
            collected.add(index)
            if error is not None:
                failed[index] = error
                return
            out[index] = result
            done += len(chunks[index])
            if progress is not None:
                progress(done, total)

        def collect(index: int) -> None:
            future = futures[index]
            if index not in collected and not future.cancelled():
                error = future.exception()
                record(index, None if error is not None else future.result(), error)

        def collect_finished() -> None:
            while finished:
                collect(finished.popleft())

        # Filled by the pool's thread as futures complete (deque appends are atomic), so
        # collecting costs nothing per chunk still running: linear in the chunks.
        finished: deque[int] = deque()
        for index, future in enumerate(futures):
            future.add_done_callback(_note_done(finished, index))

        try:
            for index in reversed(range(len(chunks))):
                if not futures[index].cancel():
                    break  # a worker has it, and every chunk before it
                try:
                    result = _chunk(self._check, chunks[index])
                except Exception as exc:  # as a worker's: the earliest run's is raised
                    record(index, None, exc)
                else:
                    record(index, result, None)
                collect_finished()
            for index in range(len(chunks)):
                if index not in collected:
                    wait([futures[index]])
                    collect(index)
        finally:
            self.close()
        if failed:
            # The failure of the earliest run in run-id order, as one process would
            # raise it, whichever chunk happened to finish first.
            raise failed[min(failed)]
        return [result for chunk in out if chunk is not None for result in chunk]


def _worker_signals() -> None:
    """A worker leaves stops to this process, which ends the pool: it ignores SIGTERM and
    Ctrl-C's SIGINT (which a terminal, ``timeout`` or a CI runner send to the whole
    process group).

    Forked workers inherit this process's handlers: SIGTERM raised an exception in a
    worker too, which the pool sends back as a chunk's result while this process shuts
    the pool down; a worker left writing to a result pipe that nobody reads outlived this
    process or kept it waiting at its exit, for ever. A worker ended by the signal
    instead breaks the pool, which Python 3.11 does not survive with cancelled chunks.
    """
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _end_with_parent()


def _end_with_parent() -> None:
    """Linux: the kernel ends this worker when the process that started it ends, by
    whatever way (``agc-verify`` exits with ``os._exit``, which skips the pool's own
    shutdown at exit); a worker is never left behind blocked on a pipe."""
    import ctypes  # noqa: PLC0415 - in the workers only

    parent = os.getppid()
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: nothing more to do
        return
    if os.getppid() != parent:  # it ended before the request was made
        os._exit(0)


_PR_SET_PDEATHSIG: Final = 1  # from <linux/prctl.h>


def _note_done(finished: deque[int], index: int) -> Callable[[Future[Any]], None]:
    return lambda _future: finished.append(index)


def _on_dask(
    check: Callable[[T], R],
    items: Sequence[T],
    scheduler: str,
    progress: Callable[[int, int], None] | None,
) -> list[R]:
    with MissingExtraError.raised_for("scale", feature="--scheduler (a Dask cluster)"):
        import distributed  # noqa: PLC0415 - only with --scheduler
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
