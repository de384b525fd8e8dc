"""Shared fixtures: a temporary store and the real transcripts in ../shared."""

from __future__ import annotations

import base64
import hashlib
import io
import itertools
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
import types
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, Final, Protocol, TypeVar

import pytest
from hypothesis import settings

from agc._core import jsonl as jsonl_writer
from agc._core import store as store_module
from agc._core.digest import Algorithm
from agc._core.memstore import MemoryStore
from agc._core.storage import BucketLock
from agc._core.store import StoreLayout
from agc.integrity import RunReport, open_run

pytest_plugins = ["tests.s3fixtures"]

# Tests stop commands with SIGINT (Ctrl-C) and check the exit. A shell without job control
# starts a background job (`make test &`) with SIGINT ignored, and every process it starts
# inherits that: Python then installs no KeyboardInterrupt handler and a Ctrl-C does
# nothing. The suite restores Python's own handler, so the children it starts get the
# default action at exec and install theirs, as under a terminal.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

T = TypeVar("T")

# Hypothesis profiles, chosen by HYPOTHESIS_PROFILE (CONTRIBUTING.md, "Tests"):
# "default" (`make test`) runs a fraction of each property's examples, "thorough"
# (`make test-thorough`) the full counts. Property tests assert behaviour, never speed:
# no per-example deadline in either, which a loaded 2-core CI machine would miss at random.
PROFILES: Final = {"default": 25, "thorough": 100}
"""Each profile's example count for a property test without its own ``max_examples``."""
HYPOTHESIS_PROFILE: Final = os.environ.get("HYPOTHESIS_PROFILE") or "default"
if HYPOTHESIS_PROFILE not in PROFILES:
    raise pytest.UsageError(
        f"HYPOTHESIS_PROFILE={HYPOTHESIS_PROFILE!r} is not one of {sorted(PROFILES)}"
    )
for _name, _count in PROFILES.items():
    settings.register_profile(_name, deadline=None, max_examples=_count)
settings.load_profile(HYPOTHESIS_PROFILE)
THOROUGH: Final = HYPOTHESIS_PROFILE == "thorough"


def examples(full: int, *, least: int = 10) -> int:
    """The example count of a property whose thorough count is ``full``: ``full`` in the
    thorough profile; a fifth of it by default (at least ``least``, never more than
    ``full``). The strategy, and so the class of inputs, is the same in both. A lower
    ``least`` is for examples that each cost seconds (a real server's round trips)."""
    return full if THOROUGH else max(min(full, least), full // 5)


def sampled(
    items: Sequence[T],
    *,
    keep: int,
    seed: object,
    cover: Sequence[Callable[[T], Hashable]] = (),
) -> list[T]:
    """Every item of an exhaustive loop in the thorough profile; by default the first
    and the last and ``keep`` more drawn with ``random.Random(seed)`` (in their order),
    so a failure names the same items on every run.

    ``cover``: functions naming an item's class (a secret's kind, its placement). By
    default every class of each function that the draw missed gains one member, drawn
    with the same generator: no class of input is left out of the sample."""
    if THOROUGH or len(items) <= keep + 2:
        return list(items)
    rng = random.Random(str(seed))
    chosen = {0, len(items) - 1, *rng.sample(range(1, len(items) - 1), keep)}
    for key in cover:
        classes: dict[Hashable, list[int]] = {}
        for index, item in enumerate(items):
            classes.setdefault(key(item), []).append(index)
        for members in classes.values():
            if chosen.isdisjoint(members):
                chosen.add(rng.choice(members))
    return [items[i] for i in sorted(chosen)]


@pytest.fixture(autouse=True)
def _fsync_off(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """``os.fsync`` checks its descriptor and returns at once, and SQLite (``agent.db``)
    does not sync either (``PRAGMA synchronous=OFF`` on every connection), unless the
    test is marked ``real_fsync`` (crash tests: kills, injected disk faults). A sync only
    matters when the machine loses power, which no test does; a killed process loses
    nothing the kernel holds (SQLite's documentation of ``synchronous``). agc's own code
    is unchanged: it calls ``os.fsync`` and opens SQLite as in production."""
    if request.node.get_closest_marker("real_fsync") is None:
        monkeypatch.setattr(os, "fsync", _checked_no_fsync)
        monkeypatch.setattr(sqlite3, "connect", _connect_without_sync)


def _checked_no_fsync(fd: int) -> None:
    os.fstat(fd)  # a closed or invalid descriptor still fails as fsync would (EBADF)


_SQLITE_CONNECT: Final = sqlite3.connect


def _connect_without_sync(*args: Any, **kwargs: Any) -> sqlite3.Connection:
    conn: sqlite3.Connection = _SQLITE_CONNECT(*args, **kwargs)
    # A file that is no database refuses the pragma: the caller's first statement then
    # fails with the same error, as without the pragma.
    with suppress(sqlite3.Error):
        conn.execute("PRAGMA synchronous=OFF")
    return conn


REPO_ROOT = Path(__file__).resolve().parent.parent
# ../shared beside the checkout; AGC_SHARED_DIR names it when the checkout is elsewhere
# (a git worktree in another folder).
SHARED = Path(os.environ.get("AGC_SHARED_DIR") or REPO_ROOT.parent / "shared")
REAL_FIXTURES = SHARED / "fixtures" / "real"
RESUME_CASES = SHARED / "cases" / "resume"


def real_fixture_files() -> list[Path]:
    """Every real transcript under ../shared/fixtures/real/ (empty when absent)."""
    if not REAL_FIXTURES.is_dir():
        return []
    return sorted(REAL_FIXTURES.rglob("*.jsonl"))


def require_shared(path: Path) -> Path:
    """Skip the calling test, with the reason, when ../shared is not beside the repo."""
    if not path.exists():
        pytest.skip(f"{path} is absent: ../shared is not beside this checkout")
    return path


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """An empty store folder."""
    folder = tmp_path / "store"
    folder.mkdir()
    return folder


@pytest.fixture(autouse=True)
def _no_user_store(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Tests never touch ~/.agc nor the host's agc state: AGC_HOME and XDG_STATE_HOME
    (object-store staging, kept capture failures) point into the test's temp folder, so
    tests in parallel workers never share a staging folder."""
    monkeypatch.setenv("AGC_HOME", str(tmp_path / "agc-home"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg-state"))


def fixed_clock(start_ms: int = 1_764_460_800_000) -> Callable[[], int]:
    """A deterministic clock for writers: start_ms, start_ms + 1, … (Unix ms)."""
    ticks = itertools.count(start_ms)
    return lambda: next(ticks)


@contextmanager
def steady_checkpoint_timer() -> Iterator[None]:
    """Stop the writers' time trigger for checkpoints while the block runs.

    A writer also checkpoints at the first write after ``checkpoint_interval_ms`` of
    wall time, and that checkpoint reads the writer's clock: on a machine that pauses
    a second inside a write (a loaded CI host), a :func:`fixed_clock` then hands
    every later record a ``ts`` one tick on, and bytes a test compares differ. Inside
    this block the writers see a monotonic clock that never advances, so their output
    depends only on their input and their ``clock``.
    """
    still = types.SimpleNamespace(monotonic_ns=lambda: 0, time_ns=time.time_ns)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(jsonl_writer, "time", still)
        yield


def write_run(
    store: Path,
    run_id: str = "r1",
    *,
    transcript: Iterable[dict[str, Any]] = ({"role": "user", "content": "hi"},),
    tool_events: Iterable[dict[str, Any]] = ({"event": "tool_call_start", "call_id": "c1"},),
    algorithm: Algorithm = "blake3",
    clock: Callable[[], int] | None = None,
) -> StoreLayout:
    """Write and seal one run through the writers; return the store layout.

    With a deterministic clock (the default) the files are the same bytes on every run
    (see :func:`steady_checkpoint_timer`)."""
    with (
        steady_checkpoint_timer(),
        open_run(run_id, store=store, algorithm=algorithm, clock=clock or fixed_clock()) as run,
    ):
        for record in transcript:
            run.transcript.write(record)
        for record in tool_events:
            run.tool_events.write(record)
    return StoreLayout(store)


def finding_codes(report: RunReport) -> set[str]:
    """The codes of a report's findings."""
    return {finding.code for finding in report.findings}


def tree(root: Path) -> list[str]:
    """Every path under root (relative, sorted), to assert that nothing was created."""
    if not root.exists():
        return []
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def feed_stdin(monkeypatch: pytest.MonkeyPatch, data: bytes) -> None:
    """Make ``sys.stdin.buffer`` read ``data`` (for ``agc record`` in process)."""
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))


def input_lines(data: bytes) -> list[tuple[bytes, Any]]:
    """Each input line (BOM removed from the first) and what json.loads makes of it.

    Computed independently of agc's parser; ``None`` when the line is not JSON.
    """
    lines = data.split(b"\n")
    if data.endswith(b"\n") or not data:
        lines.pop()
    out: list[tuple[bytes, Any]] = []
    for number, line in enumerate(lines, start=1):
        raw = line.removeprefix(b"\xef\xbb\xbf") if number == 1 else line
        try:
            value = json.loads(raw.decode("utf-8"))
        except ValueError:
            value = None
        out.append((raw, value))
    return out


def assert_keeps_every_line(data: bytes, stored: list[dict[str, Any]]) -> None:
    """Every input line is a record, in order: a JSON-object line's record payload equals
    the parsed line; any other line is an ``invalid`` record holding its exact text."""
    expected = input_lines(data)
    assert len(stored) == len(expected)
    for number, (record, (raw, value)) in enumerate(zip(stored, expected, strict=True), 1):
        assert record["line"] == number
        assert record["seq"] == number - 1
        if isinstance(value, dict):
            assert record["payload"] == value
        else:
            assert "payload" not in record
            assert record["invalid"]
            if "text_b64" in record:
                assert base64.b64decode(record["text_b64"]) == raw
            else:
                assert record["text"].encode("utf-8") == raw


def read_records(path: Path) -> list[dict[str, Any]]:
    """The JSON records of a store file, one per line."""
    return [json.loads(line) for line in path.read_bytes().split(b"\n")[:-1]]


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    """``python -c CODE`` in a fresh process that imports agc as this one does (what a
    process loads at start-up is seen there, not in pytest's); fails unless it exits 0."""
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )


def run_agc_to_a_gone_reader(
    argv: list[str], env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``agc ARGV`` in a fresh process whose stdout is a pipe with its read end already
    closed (``agc … | head -0``): every write to stdout fails with EPIPE."""
    script = f"import sys\nfrom agc.cli.app import main\nsys.exit(main({argv!r}))\n"
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run(
            [sys.executable, "-c", script],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), **(env or {})},
        )
    finally:
        os.close(write_end)


def write_legacy_run_with_shared_tool_events(store: Path, run_id: str = "r1") -> bytes:
    """A legacy run (digest-only ``.sha256`` sidecar, no manifest) whose tool events are
    only in the shared ``audit/tool-events.jsonl``: it verifies, with no tool-events file
    of its own. Returns the transcript's bytes."""
    layout = StoreLayout(store)
    path = layout.artifact_path(run_id, "transcript")
    path.parent.mkdir(parents=True)
    data = b'{"line":1,"payload":{"a":1}}\n'
    path.write_bytes(data)
    path.with_name(f"{run_id}.jsonl.sha256").write_text(hashlib.sha256(data).hexdigest())
    layout.legacy_tool_events_path.write_text(f'{{"run_id":"{run_id}","tool":"x"}}\n')
    return data


class NewBucket(Protocol):
    """What :func:`named_buckets` gives: a new in-memory bucket by name."""

    def __call__(
        self, name: str, *, prefix: str = "team/evidence", object_lock: bool = True
    ) -> MemoryStore: ...


@pytest.fixture
def named_buckets(monkeypatch: pytest.MonkeyPatch) -> NewBucket:
    """Make in-memory buckets that a ``--store`` value can name.

    ``new(name)`` is a versioned :class:`MemoryStore` with Object Lock under the prefix
    ``team/evidence`` (as the ``s3_store`` fixture's bucket; ``prefix`` and
    ``object_lock`` ask for another prefix, or a bucket without Object Lock); for the
    rest of the test, its URL (``memory://<name>/team/evidence``) given as a store to a command or a
    function opens that very bucket (``agc._core.store.remote_store`` answers it, as it
    answers an ``s3://`` URL). Commands are so tested on a store written object by object
    without a server; S3's own behaviour is held to the store contract
    (tests/_core/test_store_contract.py).
    """
    buckets: dict[str, MemoryStore] = {}
    real = store_module.remote_store

    def remote_store(store: object) -> Any:
        named = os.fspath(store) if isinstance(store, str | os.PathLike) else None
        return buckets[named] if named in buckets else real(store)

    monkeypatch.setattr(store_module, "remote_store", remote_store)

    def new(name: str, *, prefix: str = "team/evidence", object_lock: bool = True) -> MemoryStore:
        bucket = MemoryStore(name=name, prefix=prefix, lock=BucketLock(enabled=object_lock))
        buckets[bucket.url] = buckets[str(Path(bucket.url))] = bucket  # 'memory:/…' as a path
        return bucket

    return new


@pytest.fixture
def bucket(named_buckets: NewBucket) -> MemoryStore:
    """One bucket of :func:`named_buckets`, ``memory://evidence/team/evidence``."""
    return named_buckets("evidence")
