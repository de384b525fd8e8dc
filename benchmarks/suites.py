"""The benchmarks, each against its baseline measured in the same run."""

from __future__ import annotations

import compileall
import contextlib
import gc
import hashlib
import importlib
import inspect
import json
import os
import shutil
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from tests.s3server import create_locked_bucket, s3_env, start_server

import agc
from agc._core.digest import Algorithm, Hasher, digest_fd, new_hasher
from agc._core.json import not_native, orjson_options
from agc._core.jsonl import unix_ms
from agc._core.objstore import ObjectStore
from agc._core.store import StoreLayout
from agc.integrity._chain import read_chain
from agc.integrity._chain_objects import HEAD_PATH, RemoteHead, link_bytes, link_path
from agc.integrity._parallel import default_jobs
from agc.integrity._store_verify import check_store
from agc.integrity._verify import check_run
from agc.integrity._writer import ToolEventWriter, open_run
from benchmarks.data import (
    RecordSizes,
    chat_history,
    fixed_size_records,
    real_transcript_mix,
    tool_records,
    write_random_file,
)
from benchmarks.harness import Timing, Variant, command_variant, find_tool, interleaved
from benchmarks.history_memory import memory_rows
from benchmarks.ledger_bench import bench_ledger
from benchmarks.report import Row, Section, Target

__all__ = ["SUITES", "Context"]


_WRITER_OPTIONS = orjson_options()


def _plain_line(body: dict[str, Any]) -> bytes:
    """One record as the writer's fast path serializes it (orjson, same options)."""
    return orjson.dumps(body, default=not_native, option=_WRITER_OPTIONS) + b"\n"


PLAIN_SERIALIZER = f"orjson {orjson.__version__} with the writer's options"


@dataclass
class Context:
    """What every benchmark gets.

    Attributes:
        work: a scratch folder (removed at the end of the run).
        size: bytes of the large file (digest, verify, largest close).
        rounds: timed rounds per variant.
        quick: the small smoke-test version.
        sizes: the tool call / result size distribution for generated records.
    """

    work: Path
    size: int
    rounds: int
    quick: bool
    sizes: RecordSizes

    def fresh(self, name: str) -> Path:
        path = self.work / name
        shutil.rmtree(path, ignore_errors=True)
        path.mkdir(parents=True)
        return path


def _missing(tool: str) -> str:
    return f"`{tool}` not found on PATH (Debian: apt-get install {tool}); comparison skipped"


@contextlib.contextmanager
def _no_fsync() -> Iterator[None]:
    """Skip fsync while *building* benchmark input (never while timing): same bytes."""
    real = os.fsync
    os.fsync = lambda fd: None
    try:
        yield
    finally:
        os.fsync = real


# -- 1. digest -----------------------------------------------------------------------


def _warm(path: Path) -> None:
    """Read ``path`` once so that the timed runs find it in the page cache."""
    with path.open("rb", buffering=0) as handle:
        while handle.read(8 * 1024 * 1024):
            pass


def bench_digest(ctx: Context) -> Section:
    section = Section(
        "digest",
        "1. Hashing a large file",
        "agc's digest_fd in process vs the command-line tools on the same page-cached "
        "file (tools' times include their process start); `cat > /dev/null` is the I/O "
        "ceiling.",
    )
    path = ctx.work / "digest.bin"
    write_random_file(path, ctx.size)
    _warm(path)

    def agc(algorithm: Algorithm, threads: int) -> Callable[[], None]:
        def run() -> None:
            fd = os.open(path, os.O_RDONLY)
            try:
                digest_fd(fd, algorithm, threads=threads)
            finally:
                os.close(fd)

        return run

    pairs: list[tuple[str, Callable[[], None], str, list[str], str | None]] = [
        (
            "agc blake3, 1 thread",
            agc("blake3", 1),
            "b3sum --num-threads 1",
            ["b3sum", "--num-threads", "1"],
            "digest-1-thread",
        ),
        ("agc blake3, all cores", agc("blake3", 0), "b3sum", ["b3sum"], "digest-all-cores"),
        ("agc sha256", agc("sha256", 1), "sha256sum", ["sha256sum"], None),
    ]
    variants: list[Variant] = []
    missing: dict[str, str] = {}
    for agc_name, run, tool_name, argv, _ in pairs:
        variants.append(Variant(agc_name, run))
        tool = find_tool(argv[0])
        if tool is None:
            missing[tool_name] = _missing(argv[0])
        else:
            variants.append(command_variant(tool_name, [tool, *argv[1:], str(path)]))
    cat = find_tool("cat")
    if cat is not None:
        variants.append(
            Variant("cat file > /dev/null", command_variant("cat", [cat, str(path)]).run)
        )
    timings = interleaved(variants, rounds=ctx.rounds)
    gb = ctx.size / 1e9
    for agc_name, _, tool_name, _, target_id in pairs:
        base = timings.get(tool_name)
        section.rows.append(
            Row.timed(
                agc_name,
                timings[agc_name],
                work=gb,
                unit="GB/s",
                baseline=base,
                baseline_name=tool_name if base else None,
            )
        )
        if base is None:
            section.rows.append(Row(tool_name, skipped=missing[tool_name]))
        else:
            section.rows.append(Row.timed(tool_name, base, work=gb, unit="GB/s"))
        if target_id is not None:
            ratio = section.rows[-2].ratio
            section.targets.append(
                Target.judge(
                    target_id,
                    f"digest >= 0.9x {tool_name}",
                    ratio,
                    threshold=0.9,
                    op=">=",
                    note=missing.get(tool_name, f"{gb:.2f} GB file"),
                )
            )
    if "cat file > /dev/null" in timings:
        section.rows.append(
            Row.timed("cat file > /dev/null", timings["cat file > /dev/null"], work=gb, unit="GB/s")
        )
    path.unlink()
    return section


# -- 2. verify -----------------------------------------------------------------------


def _build_sealed_run(store: Path, run_id: str, size: int, sizes: RecordSizes) -> int:
    """A sealed run whose transcript holds about ``size`` bytes; returns its bytes."""
    pool = tool_records(4096, sizes)
    with _no_fsync(), open_run(run_id, store=store, fsync="none") as run:
        writer = run.transcript
        index = 0
        while writer.bytes_written < size:
            writer.write(pool[index % len(pool)])
            index += 1
        for record in pool[:8]:
            run.tool_events.write(record)
    seal = run.transcript.seal
    assert seal is not None
    return seal.bytes


def _build_one_record_run(store: Path, run_id: str) -> None:
    """A sealed run of one transcript record (and no tool event): start-up cost only."""
    with _no_fsync(), open_run(run_id, store=store, fsync="none") as run:
        run.transcript.write({"type": "message", "role": "user", "content": "Fix the tests."})


def _agc_command(name: str) -> str | None:
    """The console script ``name`` installed beside this Python (else on ``PATH``)."""
    beside = Path(sys.executable).parent / name
    return str(beside) if beside.exists() else find_tool(name)


def _agc_verify_command() -> str | None:
    return _agc_command("agc-verify")


def _compile_agc() -> None:
    """Byte-compile agc as an installed package is (pip compiles at install time).

    An editable checkout under PYTHONDONTWRITEBYTECODE would otherwise recompile every
    module at every start of agc-verify, which no installed agc does.
    """
    compileall.compile_dir(Path(agc.__file__).parent, quiet=1)


_PYTHON_FLOOR = "python + blake3 only (floor of a Python command)"
# argv[1]: the transcript, in the current folder; exit 1 unless it matches its sidecar.
_PYTHON_FLOOR_SCRIPT = """
import hmac, mmap, os, sys
import blake3
fd = os.open(sys.argv[1], os.O_RDONLY)
with mmap.mmap(fd, 0, access=mmap.ACCESS_READ) as mapped, memoryview(mapped) as view:
    digest = blake3.blake3(view, max_threads=blake3.blake3.AUTO).hexdigest()
with open(sys.argv[1] + ".b3", encoding="ascii") as sidecar:
    expected = sidecar.read(64)
sys.exit(0 if hmac.compare_digest(digest, expected) else 1)
"""


_PYTHON_JSON_FLOOR = "python + blake3 + json (floor of a command that reads the manifest)"
# argv[1]: the transcript, in the current folder; argv[2]: the run's manifest. Exit 1
# unless the transcript matches both its sidecar and the manifest's digest and length:
# the floor row's work plus the stdlib JSON parser agc-verify reads the manifest with.
_PYTHON_JSON_FLOOR_SCRIPT = """
import hmac, json, mmap, os, sys
import blake3
fd = os.open(sys.argv[1], os.O_RDONLY)
size = os.fstat(fd).st_size
with mmap.mmap(fd, 0, access=mmap.ACCESS_READ) as mapped, memoryview(mapped) as view:
    digest = blake3.blake3(view, max_threads=blake3.blake3.AUTO).hexdigest()
with open(sys.argv[1] + ".b3", encoding="ascii") as sidecar:
    expected = sidecar.read(64)
with open(sys.argv[2], "rb") as manifest:
    sealed = json.loads(manifest.read())["artifacts"]["transcript"]
ok = hmac.compare_digest(digest, expected) and hmac.compare_digest(digest, sealed["digest"])
sys.exit(0 if ok and sealed["bytes"] == size else 1)
"""


def bench_verify(ctx: Context) -> Section:
    section = Section(
        "verify",
        "2. Verifying a large sealed transcript",
        "`agc-verify RUN` (whole command: process start, imports, both artifacts, "
        "manifest; agc byte-compiled as installed) and the library call check_run() vs "
        "`b3sum --check` on the transcript's sidecar; the 1-record rows show each "
        "command's fixed start-up cost; the floor rows are the interpreter importing only "
        "blake3 and checking the sidecar as b3sum does (the best a Python command can do), "
        "and the same plus the stdlib json parser checking the manifest's digest too.",
    )
    _compile_agc()
    store = ctx.fresh("verify-store")
    run_id = "bench-verify"
    size = _build_sealed_run(store, run_id, ctx.size, ctx.sizes)
    folder = store / "audit" / "transcripts"
    tiny = "bench-tiny"
    _build_one_record_run(store, tiny)
    variants: list[Variant] = []
    command = _agc_verify_command()
    if command is not None:
        variants.append(
            command_variant("agc-verify (command)", [command, run_id, "--store", str(store)])
        )
        # Information: the fixed cost of the command (interpreter start, imports), on a
        # run of one record, next to b3sum's on the same run.
        variants.append(
            command_variant("agc-verify, 1-record run", [command, tiny, "--store", str(store)])
        )

    def library() -> None:
        report = check_run(run_id, store)
        if not report.complete:
            raise RuntimeError(f"benchmark run is not complete: {report.missing}")

    variants.append(Variant("check_run() (library)", library))
    b3sum = find_tool("b3sum")
    if b3sum is not None:
        variants.append(
            command_variant("b3sum --check", [b3sum, "--check", f"{run_id}.jsonl.b3"], cwd=folder)
        )
        variants.append(
            command_variant(
                "b3sum --check, 1-record run", [b3sum, "--check", f"{tiny}.jsonl.b3"], cwd=folder
            )
        )
        # Information: the floor of any Python command here, the interpreter (with its
        # site set-up, as a console script has) importing only blake3 and checking the
        # transcript against its sidecar as b3sum --check does (memory map, all cores).
        variants.append(
            command_variant(
                _PYTHON_FLOOR,
                [sys.executable, "-c", _PYTHON_FLOOR_SCRIPT, f"{run_id}.jsonl"],
                cwd=folder,
            )
        )
        manifest = store / "audit" / "manifests" / f"{run_id}.json"
        variants.append(
            command_variant(
                _PYTHON_JSON_FLOOR,
                [sys.executable, "-c", _PYTHON_JSON_FLOOR_SCRIPT, f"{run_id}.jsonl", str(manifest)],
                cwd=folder,
            )
        )
    timings = interleaved(variants, rounds=ctx.rounds)
    gb = size / 1e9
    base = timings.get("b3sum --check")
    base_name = "b3sum --check" if base else None

    def against_b3sum(name: str) -> Row:
        return Row.timed(
            name, timings[name], work=gb, unit="GB/s", baseline=base, baseline_name=base_name
        )

    for name in ("agc-verify (command)", "check_run() (library)"):
        if name in timings:
            section.rows.append(against_b3sum(name))
        else:
            section.rows.append(Row(name, skipped="agc-verify not installed beside this Python"))
    if base is not None:
        section.rows.append(Row.timed("b3sum --check", base, work=gb, unit="GB/s"))
    else:
        section.rows.append(Row("b3sum --check", skipped=_missing("b3sum")))
    for floor in (_PYTHON_FLOOR, _PYTHON_JSON_FLOOR):
        if floor in timings:
            section.rows.append(against_b3sum(floor))
    for name in ("agc-verify, 1-record run", "b3sum --check, 1-record run"):
        if name in timings:
            section.rows.append(Row.timed(name, timings[name]))
    section.targets.append(
        Target.judge(
            "verify-command",
            "agc-verify >= 0.9x b3sum --check (wall time)",
            section.rows[0].ratio,
            threshold=0.9,
            op=">=",
            note=f"{size:,}-byte transcript" if base else _missing("b3sum"),
        )
    )
    tiny_time = timings.get("agc-verify, 1-record run")
    section.targets.append(
        Target.judge(
            "verify-1-record",
            "agc-verify on a 1-record run <= 45 ms (wall time, ms)",
            tiny_time.median * 1e3 if tiny_time else None,
            threshold=45.0,
            op="<=",
            note="the whole command: process start, imports, check, output"
            if tiny_time
            else "agc-verify not installed beside this Python",
        )
    )
    section.extra["transcript_bytes"] = size
    shutil.rmtree(store)
    return section


# -- 3. writer -----------------------------------------------------------------------


def _naive_seed_writer(path: Path, records: list[dict[str, Any]]) -> None:
    """The naive way: stdlib JSON, one append per record, re-read the file at close."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        for record in records:
            line = json.dumps({**record, "ts": unix_ms()}, ensure_ascii=False) + "\n"
            os.write(fd, line.encode("utf-8"))
    finally:
        os.close(fd)
    hasher = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1024 * 1024):
            hasher.update(chunk)
    path.with_name(path.name + ".sha256").write_text(hasher.hexdigest() + "\n")


def _plain_writer(path: Path, records: list[dict[str, Any]], hasher: Hasher | None = None) -> None:
    """The same records, stamped and serialized as agc does, buffered; no seal, and no
    hash unless ``hasher`` is given (then each buffer is hashed before it is written)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    buffer = bytearray()
    try:
        for seq, record in enumerate(records):
            buffer += _plain_line({"seq": seq, "ts": unix_ms(), "run_id": "w", **record})
            if len(buffer) >= 64 * 1024:
                if hasher is not None:
                    hasher.update(buffer)
                os.write(fd, buffer)
                buffer.clear()
        if buffer:
            if hasher is not None:
                hasher.update(buffer)
            os.write(fd, buffer)
    finally:
        os.close(fd)


class _NullHasher:
    """A hasher that hashes nothing (benchmark only: measures the writer without hashing)."""

    def update(self, data: bytes | bytearray | memoryview, /) -> object:
        return None

    def hexdigest(self) -> str:
        return "0" * 64

    def copy(self) -> _NullHasher:
        return self


def _writer_records(quick: int, full: int, ctx: Context) -> int:
    """Records of a writer row: ``AGC_BENCH_WRITER_RECORDS`` for every row when set (the
    harness's own test: a few hundred, the same code paths), else ``quick`` or ``full``."""
    return int(os.environ.get("AGC_BENCH_WRITER_RECORDS") or (quick if ctx.quick else full))


def bench_writer(ctx: Context) -> Section:
    count = _writer_records(5_000, 200_000, ctx)
    records = tool_records(count, ctx.sizes)
    section = Section(
        "writer",
        "3. Writing records",
        f"{count:,} tool call/result records sized like the real fixtures; agc's "
        "ToolEventWriter (hash while writing, sealed on close: sidecar + manifest) vs "
        "a naive writer (stdlib json, one write per record, re-read + SHA-256 at close) "
        f"and vs a plain unhashed buffered write ({PLAIN_SERIALIZER}; no validation, no "
        "hash, no seal); fsync off for all (policy `none`). 'hashing off' is agc's "
        "writer with a no-op hasher (for information: what hashing itself costs). The "
        "2 KiB and 150-byte rows: lines of that size by write() per record and by "
        "write_many(), ratio = agc's time ÷ the plain write's; 'plain write + BLAKE3' is "
        "the plain loop hashing each buffer and doing nothing else (for information: the "
        "floor of any hash-while-writing writer written in Python).",
    )
    folder = ctx.work / "writer"
    total_bytes: list[int] = []

    def reset() -> None:
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)

    def agc() -> None:
        with ToolEventWriter("w", store=folder, fsync="none") as writer:
            for record in records:
                writer.write(record)
        total_bytes.append(writer.bytes_written)

    def agc_unhashed() -> None:
        # Informational: the same writer with its hasher replaced by a no-op, to split
        # the cost of hashing from the writer's per-record work (validation, stamping).
        with ToolEventWriter("w", store=folder, fsync="none") as writer:
            writer._hasher = _NullHasher()
            for record in records:
                writer.write(record)

    variants = [
        Variant("agc writer (sealed)", agc, setup=reset),
        Variant(
            "naive re-reading writer",
            lambda: _naive_seed_writer(folder / "w.jsonl", records),
            setup=reset,
        ),
        Variant("agc writer, hashing off", agc_unhashed, setup=reset),
        Variant(
            "plain unhashed write", lambda: _plain_writer(folder / "w.jsonl", records), setup=reset
        ),
    ]
    timings = interleaved(variants, rounds=ctx.rounds)
    agc_t = timings["agc writer (sealed)"]
    naive = timings["naive re-reading writer"]
    plain = timings["plain unhashed write"]
    section.rows.append(
        Row.timed(
            "agc writer (sealed)",
            agc_t,
            work=count,
            unit="records/s",
            baseline=naive,
            baseline_name="naive re-reading writer",
        )
    )
    section.rows.append(Row.timed("naive re-reading writer", naive, work=count, unit="records/s"))
    plain_row = Row.timed(
        "plain unhashed write",
        plain,
        work=count,
        unit="records/s",
        baseline=agc_t,
        baseline_name="agc writer (sealed)",
    )
    section.rows.append(plain_row)
    section.rows.append(
        Row.timed(
            "agc writer, hashing off",
            timings["agc writer, hashing off"],
            work=count,
            unit="records/s",
            baseline=agc_t,
            baseline_name="agc writer (sealed)",
        )
    )
    section.targets.append(
        Target.judge(
            "writer-vs-naive",
            "writer >= 3x naive re-reading writer",
            naive.median / agc_t.median,
            threshold=3.0,
            op=">=",
            note=f"{count:,} records",
        )
    )
    hash_cost = agc_t.median / timings["agc writer, hashing off"].median - 1
    section.extra["hashing_cost"] = round(hash_cost, 3)
    _writer_fixed_sizes(ctx, section, folder, reset)
    section.extra["records"] = count
    section.extra["bytes_per_run"] = total_bytes[-1] if total_bytes else None
    shutil.rmtree(folder, ignore_errors=True)
    return section


# Line sizes of the writer's per-record targets, the record counts (quick, full) and the
# bound on agc's time ÷ the plain loop's time.
_WRITER_SIZES: tuple[tuple[int, int, int, float], ...] = (
    (2048, 2_000, 50_000, 1.2),
    (150, 10_000, 200_000, 3.0),
)


def _writer_fixed_sizes(
    ctx: Context, section: Section, folder: Path, reset: Callable[[], None]
) -> None:
    """2 KiB and 150-byte lines: write() per record and write_many() vs the plain loop."""
    for size, quick_count, full_count, bound in _WRITER_SIZES:
        count = _writer_records(quick_count, full_count, ctx)
        records = fixed_size_records(count, size)
        label = f"{size:,} B"

        def loop(records: list[dict[str, Any]] = records) -> None:
            with ToolEventWriter("w", store=folder, fsync="none") as writer:
                for record in records:
                    writer.write(record)

        def batch(records: list[dict[str, Any]] = records) -> None:
            with ToolEventWriter("w", store=folder, fsync="none") as writer:
                writer.write_many(records)

        def plain(records: list[dict[str, Any]] = records) -> None:
            _plain_writer(folder / "w.jsonl", records)

        def floor(records: list[dict[str, Any]] = records) -> None:
            _plain_writer(folder / "w.jsonl", records, hasher=new_hasher("blake3"))

        names = (f"agc write(), {label}", f"agc write_many(), {label}", f"plain write, {label}")
        # Information: the plain loop hashing its buffers as agc does and nothing else (no
        # validation, no counters, no checkpoints, no seal): what hashing alone costs.
        floor_name = f"plain write + BLAKE3 of each buffer, {label}"
        variants = [
            Variant(names[0], loop, setup=reset),
            Variant(names[1], batch, setup=reset),
            Variant(names[2], plain, setup=reset),
            Variant(floor_name, floor, setup=reset),
        ]
        timings = interleaved(variants, rounds=ctx.rounds)
        base = timings[names[2]]
        for name in (*names, floor_name):
            row = Row.timed(name, timings[name], work=count, unit="records/s")
            if name != names[2]:
                # Here the ratio is agc's time ÷ the plain loop's (the target's form).
                row.baseline = f"time ÷ {names[2]}"
                row.ratio = timings[name].median / base.median
            section.rows.append(row)
        for kind, name in (("write", names[0]), ("write-many", names[1])):
            section.targets.append(
                Target.judge(
                    f"writer-{kind}-{size}",
                    f"{name.removeprefix('agc ')} <= {bound}x a plain orjson write (time)",
                    timings[name].median / base.median,
                    threshold=bound,
                    op="<=",
                    note=f"{count:,} records, sealed; plain: no hash, no checks, no seal",
                )
            )


# -- 3b. ingest ----------------------------------------------------------------------

INGEST_TARGET_MB_S = 40.0


def _agc_cli_command() -> str | None:
    beside = Path(sys.executable).parent / "agc"
    return str(beside) if beside.exists() else find_tool("agc")


def _shell_variant(name: str, script: str, *args: str, setup: Callable[[], None]) -> Variant:
    """``sh -c script sh args…`` (output to /dev/null, exit 0 checked), after ``setup``."""
    inner = command_variant(name, ["sh", "-c", script, "sh", *args])
    return Variant(name, inner.run, setup=setup)


def bench_ingest(ctx: Context) -> Section:
    section = Section(
        "ingest",
        "3b. Recording a real-transcript mix",
        "the real transcripts under ../shared/fixtures/real end to end, repeated to the "
        "input size: `cat MIX | agc record` (from a pipe) and `agc import MIX` (whole "
        "commands: process start, parse, write, seal; agc byte-compiled as installed) vs "
        "`cat MIX | tee FILE | b3sum` (copy and hash the same bytes) in the same rounds.",
    )
    # AGC_BENCH_INGEST_BYTES sets another input size (the harness's own test: 1 MiB).
    size = int(
        os.environ.get("AGC_BENCH_INGEST_BYTES") or (4 * 1024**2 if ctx.quick else 64 * 1024**2)
    )
    folder = ctx.fresh("ingest")
    mix = folder / "mix.jsonl"
    written = real_transcript_mix(mix, size)
    if written is None:
        section.skipped = "../shared/fixtures/real is absent: no real transcripts to record"
        section.targets += [
            Target.judge(
                f"ingest-{k}",
                f"agc {k} >= {INGEST_TARGET_MB_S:g} MB/s",
                None,
                threshold=INGEST_TARGET_MB_S,
                op=">=",
                note=section.skipped,
            )
            for k in ("record", "import")
        ]
        return section
    agc_cmd = _agc_cli_command()
    b3sum = find_tool("b3sum")
    store = folder / "store"
    copy = folder / "copy.jsonl"
    _compile_agc()
    _warm(mix)

    def fresh_store() -> None:
        shutil.rmtree(store, ignore_errors=True)
        copy.unlink(missing_ok=True)

    variants: list[Variant] = []
    if agc_cmd is not None:
        variants.append(
            _shell_variant(
                "agc record (stdin pipe)",
                'cat "$1" | "$2" record --run-id bench-record --store "$3"',
                str(mix),
                agc_cmd,
                str(store),
                setup=fresh_store,
            )
        )
        variants.append(
            _shell_variant(
                "agc import FILE",
                '"$2" import "$1" --run-id bench-import --store "$3"',
                str(mix),
                agc_cmd,
                str(store),
                setup=fresh_store,
            )
        )
    if b3sum is not None:
        variants.append(
            _shell_variant(
                "tee FILE + b3sum (pipe)",
                'cat "$1" | tee "$2" | "$3"',
                str(mix),
                str(copy),
                b3sum,
                setup=fresh_store,
            )
        )
    timings = interleaved(variants, rounds=ctx.rounds) if variants else {}
    mb = written / 1e6
    base = timings.get("tee FILE + b3sum (pipe)")
    for name, kind in (("agc record (stdin pipe)", "record"), ("agc import FILE", "import")):
        if name not in timings:
            section.rows.append(Row(name, skipped="agc not installed beside this Python"))
            value = None
        else:
            section.rows.append(
                Row.timed(
                    name,
                    timings[name],
                    work=mb,
                    unit="MB/s",
                    baseline=base,
                    baseline_name="tee FILE + b3sum (pipe)" if base else None,
                )
            )
            value = mb / timings[name].median
        ratio = section.rows[-1].ratio
        section.targets.append(
            Target.judge(
                f"ingest-{kind}",
                f"agc {kind} >= {INGEST_TARGET_MB_S:g} MB/s on the real-transcript mix",
                value,
                threshold=INGEST_TARGET_MB_S,
                op=">=",
                note=(
                    f"{written:,} bytes; "
                    + (
                        f"{ratio:.2f}x the time of cat | tee FILE | b3sum"
                        if ratio
                        else _missing("b3sum")
                    )
                ),
            )
        )
    if base is not None:
        section.rows.append(Row.timed("tee FILE + b3sum (pipe)", base, work=mb, unit="MB/s"))
    else:
        section.rows.append(Row("tee FILE + b3sum (pipe)", skipped=_missing("b3sum")))
    section.extra["input_bytes"] = written
    shutil.rmtree(folder, ignore_errors=True)
    return section


# -- 4. close ------------------------------------------------------------------------


def bench_close(ctx: Context) -> Section:
    mb = 1_000_000
    sizes = [1 * mb, 4 * mb, 16 * mb] if ctx.quick else [1 * mb, 10 * mb, 100 * mb, 1000 * mb]
    sizes = sorted({min(s, max(ctx.size, mb)) for s in sizes})
    section = Section(
        "close",
        "4. Close cost against file size",
        "time of close() alone (flush, digest, sidecar, manifest; fsync policy `none`: "
        "the sidecar and manifest are still written atomically with fsync) after "
        "writing N bytes of 256 KiB records and os.sync(), both untimed. Ratio column: "
        "this close's time ÷ the 1 MB close's time (<= 2 is flat).",
    )
    chunk = {"type": "tool_result", "call_id": "call_big", "output": "x" * (256 * 1024)}
    writers: dict[int, ToolEventWriter] = {}

    def make(size: int) -> Variant:
        folder = ctx.work / f"close-{size}"

        def setup() -> None:
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)
            writer = ToolEventWriter("c", store=folder, fsync="none")
            while writer.bytes_written < size - 256 * 1024:
                writer.write(chunk)
            writer.flush()
            os.sync()  # untimed: the close must not wait for the kernel's writeback
            writers[size] = writer

        def run() -> float:
            writer = writers.pop(size)
            start = time.perf_counter()
            writer.close()
            return time.perf_counter() - start

        return Variant(
            f"close after {size / mb:,.0f} MB",
            run,
            setup=setup,
            teardown=lambda: shutil.rmtree(folder, ignore_errors=True),
        )

    variants = [make(size) for size in sizes]
    # A close is a few fsyncs of small files: milliseconds that a shared disk makes noisy,
    # so the full run takes at least 11 rounds here.
    timings = interleaved(variants, rounds=ctx.rounds if ctx.quick else max(ctx.rounds, 11))
    small = timings[variants[0].name]
    for variant in variants:
        row = Row.timed(variant.name, timings[variant.name])
        row.baseline = "time ÷ 1 MB close"
        row.ratio = timings[variant.name].median / small.median
        section.rows.append(row)
    large = timings[variants[-1].name]
    section.targets.append(
        Target.judge(
            "close-flat",
            "close of the largest file within 2x of the 1 MB close (time ratio)",
            large.median / small.median,
            threshold=2.0,
            op="<=",
            note=f"{sizes[-1] / mb:,.0f} MB vs {sizes[0] / mb:,.0f} MB",
        )
    )
    return section


# -- 5. history validation and repair -------------------------------------------------

HISTORY_FORMAT = "openai-chat"


def _resume_functions() -> tuple[dict[str, Callable[..., Any]], str | None]:
    """agc.resume's ``check_history`` and repair function, where they exist."""
    try:
        module = importlib.import_module("agc.resume")
    except ImportError as exc:
        return {}, f"agc.resume cannot be imported ({exc})"
    found: dict[str, Callable[..., Any]] = {}
    check = getattr(module, "check_history", None)
    if callable(check):
        found["check_history"] = check
    for name in ("repair_history", "repair"):
        repair = getattr(module, name, None)
        if callable(repair):
            found[name] = repair
            break
    if not found:
        return {}, (
            "agc.resume has no check_history() and no repair_history()/repair() yet "
            "(this agc build has none); benchmark skipped"
        )
    return found, None


def _history_caller(fn: Callable[..., Any]) -> Callable[[list[dict[str, Any]]], object]:
    """``fn(messages, "openai-chat")``, or ``format=`` when ``format`` is keyword-only.

    The history is passed as a fresh list each call, so that a function that edits the
    list in place cannot change what the next round gets.
    """
    try:
        param = inspect.signature(fn).parameters.get("format")
    except (TypeError, ValueError):
        param = None
    if param is not None and param.kind is inspect.Parameter.KEYWORD_ONLY:
        return lambda messages: fn(list(messages), format=HISTORY_FORMAT)
    return lambda messages: fn(list(messages), HISTORY_FORMAT)


def _bind_history(
    call: Callable[[list[dict[str, Any]]], object], messages: list[dict[str, Any]]
) -> Callable[[], None]:
    def run() -> None:
        call(messages)

    return run


def bench_history(ctx: Context) -> Section:
    # AGC_BENCH_HISTORY_MESSAGES sets the largest history, measured beside a tenth of it
    # (the harness's own test: a small one, the same code path).
    largest = int(os.environ.get("AGC_BENCH_HISTORY_MESSAGES") or 0)
    if largest:
        counts = [max(2, largest // 10), largest]
    else:
        counts = [1_000, 10_000] if ctx.quick else [10_000, 100_000, 1_000_000]
    section = Section(
        "history",
        "5. Validating and repairing a long history",
        f"agc.resume on an OpenAI Chat history of N messages ({HISTORY_FORMAT}, last tool "
        "call in flight); time is the median of the rounds, peak memory from one extra "
        "run under tracemalloc.",
    )
    functions, why = _resume_functions()
    targets = [("check_history", "validate"), ("repair", "repair")]
    if why is not None:
        section.skipped = why
        for _, label in targets:
            section.targets.append(
                Target.judge(
                    f"history-{label}-linear",
                    f"{label}: {counts[-1]:,} within 12x of {counts[-2]:,} messages",
                    None,
                    threshold=12.0,
                    op="<=",
                    note=why,
                )
            )
        return section
    rounds = min(ctx.rounds, 3)
    for key, label in targets:
        name = next((n for n in functions if n.startswith(key)), None)
        if name is None:
            note = f"agc.resume has no {key}() yet; skipped"
            section.rows.append(Row(f"{label} (all sizes)", skipped=note))
            section.targets.append(
                Target.judge(
                    f"history-{label}-linear",
                    f"{label}: {counts[-1]:,} within 12x of {counts[-2]:,} messages",
                    None,
                    threshold=12.0,
                    op="<=",
                    note=note,
                )
            )
            continue
        call = _history_caller(functions[name])
        timings: dict[int, Timing] = {}
        failed: str | None = None
        for count in counts:
            messages = chat_history(count)
            try:
                variant = Variant(f"{name} {count:,}", _bind_history(call, messages))
                timing = interleaved([variant], rounds=rounds)[variant.name]
            except Exception as exc:  # an API still in the making: report, do not crash
                failed = f"{name}(messages, {HISTORY_FORMAT!r}) raised {type(exc).__name__}: {exc}"
                break
            gc.collect()
            tracemalloc.start()
            call(messages)
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            timings[count] = timing
            row = Row.timed(f"{name}(), {count:,} messages", timing, work=count, unit="messages/s")
            row.peak_bytes = peak
            section.rows.append(row)
            del messages
        if failed is not None:
            section.rows.append(Row(f"{name}()", skipped=failed))
        ratio = (
            (timings[counts[-1]].median / timings[counts[-2]].median)
            if len(timings) == len(counts)
            else None
        )
        section.targets.append(
            Target.judge(
                f"history-{label}-linear",
                f"{label}: {counts[-1]:,} within 12x of {counts[-2]:,} messages",
                ratio,
                threshold=12.0,
                op="<=",
                note=failed or "time ratio",
            )
        )
    # Peak memory of the commands on a file of the largest size (see history_memory).
    rows, memory_targets, extra = memory_rows(ctx.fresh("history-memory"), chat_history(counts[-1]))
    section.rows.extend(rows)
    section.targets.extend(memory_targets)
    section.extra.update(extra)
    return section


# -- 6. bulk verification ------------------------------------------------------------


def _build_small_runs(store: Path, count: int, sizes: RecordSizes) -> list[str]:
    """``count`` small sealed runs (4 transcript records, 2 tool events each)."""
    records = tool_records(6, sizes)
    run_ids = [f"run-{index:06d}" for index in range(count)]
    with _no_fsync():
        for run_id in run_ids:
            with open_run(run_id, store=store, fsync="none") as run:
                for record in records[:4]:
                    run.transcript.write(record)
                for record in records[4:]:
                    run.tool_events.write(record)
    return run_ids


def bench_bulk(ctx: Context) -> Section:
    # AGC_BENCH_BULK_RUNS sets another store size (the harness's own tests: a few runs).
    count = int(os.environ.get("AGC_BENCH_BULK_RUNS") or (100 if ctx.quick else 10_000))
    # The linearity row: the library's check_store() over `count` runs vs a tenth of
    # them (AGC_BENCH_BULK_LINEAR=100000 measures 100,000 vs 10,000: ~600,000 files).
    large = int(os.environ.get("AGC_BENCH_BULK_LINEAR") or count)
    small = max(1, large // 10)
    section = Section(
        "bulk",
        "6. Bulk verification (agc-verify --all)",
        f"The command `agc-verify --all --store STORE` (process start included; agc "
        f"byte-compiled as installed; stdout to /dev/null, so plain text; its default "
        f"jobs: {default_jobs()} processes from 512 runs on, one below), with `--json`, "
        f"and with `--jobs 1` (information), over a store of {count:,} small sealed runs "
        "(4 transcript records, "
        "2 tool events each), vs `b3sum --check` over all their sidecars (one process per "
        "artifact folder: the sidecars name files relative to their folder). The target "
        "is on time: agc time / b3sum time <= 6 (the ratio column is b3sum time / agc "
        f"time, so >= {1 / 6:.3f}). Linearity: check_store() (library: start-up excluded) "
        f"over {large:,} runs vs {small:,} runs of the same kind, time ratio.",
    )
    _compile_agc()
    store = ctx.fresh("bulk-store")
    run_ids = _build_small_runs(store, count, ctx.sizes)
    command = _agc_verify_command()
    variants: list[Variant] = []
    if command is not None:
        argv = [command, "--all", "--store", str(store)]
        variants.append(command_variant("agc-verify --all", argv))
        variants.append(command_variant("agc-verify --all --json", [*argv, "--json"]))
        variants.append(command_variant("agc-verify --all --jobs 1", [*argv, "--jobs", "1"]))
    b3sum = find_tool("b3sum")
    if b3sum is not None:
        commands = [
            command_variant(
                kind,
                [b3sum, "--check", *(f"{r}.jsonl.b3" for r in run_ids)],
                cwd=store / "audit" / kind,
            )
            for kind in ("transcripts", "tool-events")
        ]

        def both() -> None:
            for each in commands:
                each.run()

        variants.append(Variant("b3sum --check, all sidecars", both))
    timings = interleaved(variants, rounds=ctx.rounds)
    base_name = "b3sum --check, all sidecars"
    base = timings.get(base_name)
    for name in ("agc-verify --all", "agc-verify --all --json", "agc-verify --all --jobs 1"):
        if name in timings:
            section.rows.append(
                Row.timed(
                    name,
                    timings[name],
                    work=count,
                    unit="runs/s",
                    baseline=base,
                    baseline_name=base_name if base else None,
                )
            )
        else:
            section.rows.append(Row(name, skipped="agc-verify not installed beside this Python"))
    if base is not None:
        section.rows.append(Row.timed(base_name, base, work=count, unit="runs/s"))
    else:
        section.rows.append(Row(base_name, skipped=_missing("b3sum")))
    for row_name, target_id in (
        ("agc-verify --all", "bulk-command"),
        ("agc-verify --all --json", "bulk-command-json"),
    ):
        ratio = next((r.ratio for r in section.rows if r.name == row_name), None)
        section.targets.append(
            Target.judge(
                target_id,
                f"`{row_name}` takes <= 6x the time of b3sum --check over all sidecars "
                "(b3sum time / agc time >= 0.167)",
                ratio,
                threshold=round(1 / 6, 3),
                op=">=",
                note=(
                    (f"{count:,} runs" + (" (quick: start-up dominates)" if ctx.quick else ""))
                    if base
                    else _missing("b3sum")
                ),
            )
        )
    if large != count:
        shutil.rmtree(store)
        store = ctx.fresh("bulk-store")
        _build_small_runs(store, large, ctx.sizes)
    small_store = ctx.fresh("bulk-store-small")
    _build_small_runs(small_store, small, ctx.sizes)

    def library(target: Path, n: int) -> Callable[[], None]:
        def run() -> None:
            report = check_store(target)
            if not report.complete or len(report.runs) != n:
                raise RuntimeError("benchmark store does not verify")

        return run

    growth = interleaved(
        [
            Variant(f"check_store(), {large:,} runs", library(store, large)),
            Variant(f"check_store(), {small:,} runs", library(small_store, small)),
        ],
        rounds=ctx.rounds,
    )
    big, little = growth[f"check_store(), {large:,} runs"], growth[f"check_store(), {small:,} runs"]
    section.rows.append(Row.timed(f"check_store(), {large:,} runs", big, work=large, unit="runs/s"))
    section.rows.append(
        Row.timed(f"check_store(), {small:,} runs", little, work=small, unit="runs/s")
    )
    section.targets.append(
        Target.judge(
            "bulk-linear",
            f"check_store() over {large:,} runs takes <= 12x its time over {small:,} "
            "(10x the runs: linear growth)",
            big.median / little.median if little.median > 0 else None,
            threshold=12.0,
            op="<=",
            note="time ratio",
        )
    )
    section.extra["runs"] = count
    section.extra["linearity_runs"] = [small, large]
    shutil.rmtree(store)
    shutil.rmtree(small_store)
    return section


# -- 7. store-wide verification, 1 vs N jobs, folder and S3 ------------------------------


def _mirror_to_s3(store: Path, remote: ObjectStore) -> None:
    """Upload a folder store as the same store in object storage (objects, link objects,
    head), with threads: the benchmark measures verifying, not writing."""
    layout = StoreLayout(store)
    uploads: list[tuple[str, bytes]] = []
    for folder in ("audit/transcripts", "audit/tool-events", "audit/manifests"):
        for path in sorted((store / folder).iterdir()):
            if not path.name.startswith("."):
                uploads.append((f"{folder}/{path.name}", path.read_bytes()))
    entries, _ = read_chain(layout)
    uploads += [(link_path(e.position), link_bytes(e)) for e in entries]
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda item: remote.put_new(item[0], item[1]), uploads))
    last = entries[-1]
    manifest = layout.manifest_path(last.run_id).read_bytes()
    head = RemoteHead(last.position, last.manifest_digest, last.run_id, last.prev, manifest)
    remote.put_swap(HEAD_PATH, head.to_bytes(), etag=None)


def bench_store_all(ctx: Context) -> Section:
    # AGC_BENCH_STORE_RUNS overrides the size. moto's server answers some 200-400
    # requests/s here and a run costs 6 of them (2 sidecars, 2 artifacts, its manifest and
    # its chain link object), and its ListObjectVersions deep-copies every key version of
    # the bucket for each page of 1,000 (time quadratic in the store: ~4 s for 1,000 runs,
    # minutes for 10,000), so above 1,000 runs the S3 variants get one round and no
    # warm-up, and the default stays at 1,000 (10,000 runs: see docs/benchmarks.md). The
    # copies also used to stay in the server's memory for good (past 23 GB at 10,000
    # runs); tests/s3server.py now lets moto track its instances weakly.
    count = int(os.environ.get("AGC_BENCH_STORE_RUNS") or (40 if ctx.quick else 1_000))
    jobs = max(2, default_jobs())
    rounds = min(ctx.rounds, 3)
    s3_rounds = rounds if count <= 1000 else 1
    section = Section(
        "store_all",
        "7. Store-wide verification (--all), 1 vs N jobs",
        f"check_store() (`agc-verify --all`) over {count:,} small sealed runs, in one process "
        f"and with jobs={jobs} processes, on a folder store and on the same store in S3 "
        "(moto's server on 127.0.0.1, Object Lock bucket); ratio = 1 job / N jobs of the "
        f"same store in the same run; folder: {rounds} rounds after a warm-up; S3: "
        + (
            f"{s3_rounds} rounds after a warm-up"
            if s3_rounds == rounds
            else "1 round, no warm-up (moto's speed bounds it; folder and S3 are timed apart)"
        )
        + "; `s3, listing alone`: the one ListObjectVersions listing of the store that "
        "each S3 check makes (paginated, 1,000 keys a page), timed by itself; no target "
        "(information).",
    )
    store = ctx.fresh("store-all")
    _build_small_runs(store, count, ctx.sizes)
    server = start_server()
    saved = {name: os.environ.get(name) for name in s3_env(server.endpoint)}
    os.environ.update(s3_env(server.endpoint))
    try:
        create_locked_bucket(server.endpoint, "bench-evidence")
        remote = ObjectStore.parse("s3://bench-evidence/store")
        _mirror_to_s3(store, remote)

        def check(target: Any, n: int) -> Callable[[], None]:
            def run() -> None:
                report = check_store(target, jobs=n)
                if not report.complete or len(report.runs) != count:
                    raise RuntimeError("benchmark store does not verify")

            return run

        folder_variants = [
            Variant("folder, 1 job", check(store, 1)),
            Variant(f"folder, {jobs} jobs", check(store, jobs)),
        ]

        def listing() -> None:
            if sum(1 for _ in remote.list_versions("audit/")) < count:
                raise RuntimeError("benchmark bucket lists fewer versions than runs")

        s3_variants = [
            Variant("s3, 1 job", check(remote.url, 1)),
            Variant(f"s3, {jobs} jobs", check(remote.url, jobs)),
            Variant("s3, listing alone", listing),
        ]
        if s3_rounds == rounds:
            timings = interleaved(folder_variants + s3_variants, rounds=rounds)
        else:
            timings = interleaved(folder_variants, rounds=rounds)
            timings |= interleaved(s3_variants, rounds=s3_rounds, warmup=False)
        peak = _peak_rss_mib(server.process.pid)
    finally:
        server.stop()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    for where in ("folder", "s3"):
        one = timings[f"{where}, 1 job"]
        section.rows.append(Row.timed(f"{where}, 1 job", one, work=count, unit="runs/s"))
        section.rows.append(
            Row.timed(
                f"{where}, {jobs} jobs",
                timings[f"{where}, {jobs} jobs"],
                work=count,
                unit="runs/s",
                baseline=one,
                baseline_name=f"{where}, 1 job",
            )
        )
    section.rows.append(
        Row.timed("s3, listing alone", timings["s3, listing alone"], work=count, unit="runs/s")
    )
    section.extra["runs"] = count
    section.extra["jobs"] = jobs
    if peak is not None:
        section.extra["moto_server_peak_rss_mib"] = peak
        section.method += f" moto's server process peaked at {peak:,} MiB resident."
    shutil.rmtree(store)
    return section


def _peak_rss_mib(pid: int) -> int | None:
    """The peak resident memory of process ``pid`` (Linux ``VmHWM``), in MiB."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) // 1024
    except OSError:
        pass
    return None


# -- start-up --------------------------------------------------------------------------

# A small history the provider accepts (exit 0): system, user, one answered tool call.
_SMALL_HISTORY: list[dict[str, Any]] = [
    {"role": "system", "content": "You are a coding agent."},
    {"role": "user", "content": "Read the README."},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "read_file", "arguments": '{"path": "README.md"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "# agc"},
    {"role": "assistant", "content": "It is agc's README."},
]
_STARTUP_LIMIT_MS = 120.0


def bench_startup(ctx: Context) -> Section:
    section = Section(
        "startup",
        "Start-up: the quick commands",
        "Whole commands (process start included; agc byte-compiled as installed) next to "
        "`python -c pass` on the same interpreter: `agc --help`, `agc resume --check` on "
        "a small valid history, `agc-verify` on a 1-record run; ratio = python's time / "
        "the command's.",
    )
    _compile_agc()
    work = ctx.fresh("startup")
    history = work / "small.json"
    history.write_text(json.dumps(_SMALL_HISTORY), encoding="utf-8")
    _build_one_record_run(work / "store", "one")
    agc_cmd, verify_cmd = _agc_command("agc"), _agc_verify_command()
    baseline = "python -c pass"
    variants = [command_variant(baseline, [sys.executable, "-c", "pass"])]
    commands: list[tuple[str, str | None, list[str], str | None]] = [
        ("agc --help", agc_cmd, ["--help"], "startup-help"),
        (
            "agc resume --check small.json",
            agc_cmd,
            ["resume", "--check", str(history)],
            "startup-resume-check",
        ),
        (
            "agc-verify, 1-record run",
            verify_cmd,
            ["one", "--store", str(work / "store")],
            "startup-verify",
        ),
    ]
    for name, command, args, _ in commands:
        if command is not None:
            variants.append(command_variant(name, [command, *args]))
    timings = interleaved(variants, rounds=ctx.rounds)
    base = timings[baseline]
    section.rows.append(Row.timed(baseline, base))
    for name, command, _, target_id in commands:
        if command is None:
            section.rows.append(Row(name, skipped="agc not installed beside this Python"))
        else:
            section.rows.append(
                Row.timed(name, timings[name], baseline=base, baseline_name=baseline)
            )
        if target_id is not None:
            timing = timings.get(name)
            section.targets.append(
                Target.judge(
                    target_id,
                    f"`{name}` <= {_STARTUP_LIMIT_MS:.0f} ms (wall time, ms)",
                    timing.median * 1e3 if timing else None,
                    threshold=_STARTUP_LIMIT_MS,
                    op="<=",
                    note=f"python -c pass: {base.median * 1e3:.1f} ms"
                    if timing
                    else "agc not installed beside this Python",
                )
            )
    shutil.rmtree(work)
    return section


from benchmarks.hook_capture import bench_hook_capture  # noqa: E402
from benchmarks.ledger_long_line import bench_ledger_long_line  # noqa: E402
from benchmarks.resume_gemini import bench_resume_gemini  # noqa: E402
from benchmarks.resume_streaming import bench_resume_streaming  # noqa: E402

SUITES: dict[str, Callable[[Context], Section]] = {
    "startup": bench_startup,
    "digest": bench_digest,
    "verify": bench_verify,
    "writer": bench_writer,
    "ingest": bench_ingest,
    "close": bench_close,
    "history": bench_history,
    "bulk": bench_bulk,
    "store_all": bench_store_all,
    "ledger": bench_ledger,
    "ledger_long_line": bench_ledger_long_line,
    "resume_streaming": bench_resume_streaming,
    "resume_gemini": bench_resume_gemini,
    "hook_capture": bench_hook_capture,
}
