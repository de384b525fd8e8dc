"""``agc-verify --all`` in parallel (--jobs), on a Dask cluster (--scheduler) and from an
S3 Inventory report (--inventory): the same report as one process listing the store."""

from __future__ import annotations

import contextlib
import csv
import datetime as dt
import gzip
import hashlib
import io
import json
import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agc._core.objstore import ObjectStore
from agc.cli.verify import main as verify
from agc.errors import InputError, UsageError
from agc.integrity import _parallel, check_store, ingest_stream
from tests.conftest import write_run
from tests.s3fixtures import new_bucket
from tests.s3server import S3Server

REACHES_INSIDE = {
    "agc.integrity._parallel": "the job-count rule, its limits and its process pool, directly",
}


def _folder_store(root: Path) -> Path:
    for n in range(9):
        write_run(root, f"run-{n}", transcript=[{"role": "user", "content": f"n{n}"}])
    path = root / "audit/transcripts/run-4.jsonl"
    data = bytearray(path.read_bytes())
    data[-3] ^= 1  # one tampered run among the good ones
    path.write_bytes(bytes(data))
    return root


def _s3_store(store: ObjectStore) -> ObjectStore:
    for n in range(6):
        ingest_stream(io.BytesIO(b'{"n":%d}\n' % n), f"run-{n}", store=store)
    key = store.key("audit/transcripts/run-2.jsonl")
    store.client.put_object(Bucket=store.bucket, Key=key, Body=b'{"n":9}\n')
    return store


@pytest.fixture(scope="module")
def dask_scheduler() -> Iterator[str]:
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
    )
    try:
        yield cluster.scheduler_address
    finally:
        cluster.close()


def test_jobs_give_the_same_report_as_one_process(store: Path) -> None:
    _folder_store(store)
    one = check_store(store).to_dict()
    assert one["summary"]["incomplete"] == 1
    assert check_store(store, jobs=3).to_dict() == one


def test_the_command_line_jobs_report_is_byte_for_byte_the_same(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _folder_store(store)
    assert verify(["--all", "--store", str(store), "--json"]) == 1
    serial = capsys.readouterr().out
    assert verify(["--all", "--store", str(store), "--json", "--jobs", "2"]) == 1
    assert capsys.readouterr().out == serial


def test_auto_jobs_use_every_core_only_from_the_threshold_on() -> None:
    cores = min(_parallel.default_jobs(), _parallel.MAX_JOBS)
    below = _parallel.AUTO_PARALLEL_RUNS - 1
    assert _parallel.resolve_jobs(None, below) == 1
    assert _parallel.resolve_jobs(None, _parallel.AUTO_PARALLEL_RUNS) == cores
    assert _parallel.resolve_jobs(3, 1) == 3  # an explicit count is kept, however small
    with pytest.raises(UsageError):
        _parallel.resolve_jobs(0, 10)


def test_without_jobs_a_large_store_is_checked_in_processes_with_the_same_report(
    store: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _folder_store(store)
    for n in range(9, 40):
        write_run(store, f"run-{n}", transcript=[{"role": "user", "content": f"n{n}"}])
    assert verify(["--all", "--store", str(store), "--json", "--jobs", "1"]) == 1
    serial = capsys.readouterr().out
    pools: list[int] = []
    real_pool = _parallel.ProcessPoolExecutor  # type: ignore[attr-defined]

    def counted(max_workers: int, **options: Any) -> Any:
        pools.append(max_workers)
        return real_pool(max_workers=max_workers, **options)

    monkeypatch.setattr(_parallel, "ProcessPoolExecutor", counted)
    monkeypatch.setattr(_parallel, "AUTO_PARALLEL_RUNS", 40)
    monkeypatch.setattr(_parallel, "default_jobs", lambda: 2)
    assert verify(["--all", "--store", str(store), "--json"]) == 1
    assert capsys.readouterr().out == serial
    assert pools == [1]  # two processes: this one and one worker


def test_jobs_go_with_all_only(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_run(store, "r1")
    assert verify(["r1", "--store", str(store), "--jobs", "1"]) == 2
    assert "--jobs" in capsys.readouterr().err


def test_a_dask_cluster_gives_the_same_report(store: Path, dask_scheduler: str) -> None:
    _folder_store(store)
    assert check_store(store, scheduler=dask_scheduler).to_dict() == check_store(store).to_dict()


def test_an_object_store_on_dask_and_in_processes_gives_the_same_report(
    s3_store: ObjectStore, dask_scheduler: str
) -> None:
    _s3_store(s3_store)
    local = check_store(s3_store).to_dict()
    assert {run["run_id"] for run in local["runs"] if not run["complete"]} == {"run-2"}
    assert check_store(s3_store, jobs=2).to_dict() == local
    assert check_store(s3_store, scheduler=dask_scheduler).to_dict() == local


def test_an_unreachable_scheduler_is_exit_3(
    store: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Dask's client retries a refused connection until its connect timeout ends (agc
    # gives it 10 s): the same refusal, given up on after 0.2 s.
    distributed = pytest.importorskip("distributed")
    real_client = distributed.Client
    asked: list[object] = []

    def sooner(address: str, **options: Any) -> Any:
        asked.append(options.pop("timeout"))
        return real_client(address, timeout="0.2s", **options)

    monkeypatch.setattr(distributed, "Client", sooner)
    write_run(store, "r1")
    code = verify(["--all", "--store", str(store), "--scheduler", "tcp://127.0.0.1:9"])
    assert code == 3
    assert "Dask scheduler" in capsys.readouterr().err
    assert len(asked) == 1
    assert asked[0] is not None  # agc bounds the wait itself


def _inventory(store: ObjectStore, destination: ObjectStore, *, corrupt: bool = False) -> str:
    """An S3 Inventory report of every version under the store, as AWS publishes one."""
    schema = ["Bucket", "Key", "VersionId", "IsLatest", "IsDeleteMarker", "Size",
              "LastModifiedDate", "ETag"]  # fmt: skip
    rows = io.StringIO()
    writer = csv.writer(rows, quoting=csv.QUOTE_ALL)
    for version in store.list_versions(""):
        modified = version.last_modified_ms / 1000
        when = dt.datetime.fromtimestamp(modified, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")
        writer.writerow([
            store.bucket, version.key.replace("/", "%2F"), version.version_id,
            str(version.is_latest).lower(), str(version.is_delete_marker).lower(),
            version.size, when, (version.etag or "").strip('"'),
        ])  # fmt: skip
    data = gzip.compress(rows.getvalue().encode())
    base = f"inv/{store.bucket}/daily/2026-11-30T00-00Z"
    destination.put_new(f"inv/{store.bucket}/daily/data/part-0.csv.gz", data)
    manifest: dict[str, Any] = {
        "sourceBucket": store.bucket,
        "destinationBucket": f"arn:aws:s3:::{destination.bucket}",
        "version": "2016-11-30",
        "creationTimestamp": "1796000000000",
        "fileFormat": "CSV",
        "fileSchema": ", ".join(schema),
        "files": [
            {
                "key": destination.key(f"inv/{store.bucket}/daily/data/part-0.csv.gz"),
                "size": len(data),
                "MD5checksum": hashlib.md5(data + (b"x" if corrupt else b"")).hexdigest(),
            }
        ],
    }
    body = json.dumps(manifest).encode()
    destination.put_new(f"{base}/manifest.json", body)
    destination.put_new(f"{base}/manifest.checksum", hashlib.md5(body).hexdigest().encode())
    return destination.url_of(f"{base}/manifest.json")


def test_an_inventory_report_gives_the_same_report_as_a_listing(
    s3_store: ObjectStore, s3_server: S3Server
) -> None:
    _s3_store(s3_store)
    destination = ObjectStore.parse(f"s3://{new_bucket(s3_server, object_lock=False)}")
    manifest = _inventory(s3_store, destination)
    listed = check_store(s3_store).to_dict()
    assert check_store(s3_store, inventory=manifest, jobs=2).to_dict() == listed


def test_an_inventory_data_file_that_does_not_match_its_md5_is_refused(
    s3_store: ObjectStore, s3_server: S3Server
) -> None:
    _s3_store(s3_store)
    destination = ObjectStore.parse(f"s3://{new_bucket(s3_server, object_lock=False)}")
    manifest = _inventory(s3_store, destination, corrupt=True)
    with pytest.raises(InputError, match="MD5"):
        check_store(s3_store, inventory=manifest)


def _fails_for_1_and_13(item: int) -> int:
    """A picklable check: item 1 fails late, item 13 fails at once."""
    if item == 1:
        time.sleep(0.5)
        raise InputError("item 1 is bad")
    if item == 13:
        raise InputError("item 13 is bad")
    return item


def test_in_processes_the_error_raised_is_the_earliest_items_as_in_one_process() -> None:
    with pytest.raises(InputError, match="item 1 is bad"):
        _parallel.map_checks(_fails_for_1_and_13, list(range(16)), jobs=1)
    # Item 13's chunk finishes long before item 1's: still item 1's error, as above.
    with pytest.raises(InputError, match="item 1 is bad"):
        _parallel.map_checks(_fails_for_1_and_13, list(range(16)), jobs=2)


def _pid_of(item: int) -> tuple[int, int]:
    """A picklable check: the item and the process that checked it."""
    return item, os.getpid()


@pytest.mark.parametrize("jobs", [2, 3])
@pytest.mark.parametrize("count", [2, 7, 64, 300])
def test_this_process_and_the_workers_share_the_items_and_keep_their_order(
    jobs: int, count: int
) -> None:
    seen: list[tuple[int, int]] = []
    results = _parallel.map_checks(
        _pid_of, list(range(count)), jobs=jobs, progress=lambda d, t: seen.append((d, t))
    )
    assert [item for item, _ in results] == list(range(count))
    if count == 300:  # more chunks than the workers' queue holds
        # This process takes chunks from the end, the workers from the start.
        assert results[-1][1] == os.getpid()
    assert len({pid for _, pid in results}) <= jobs
    assert seen[-1] == (count, count)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)


def test_started_checks_closed_unasked_stop_their_workers() -> None:
    started = _parallel.start_checks(_sleepy, list(range(40)), jobs=2)
    begun = time.monotonic()
    started.close()
    # 40 items of 0.1 s each: the chunks no worker had begun are dropped, not run.
    assert time.monotonic() - begun < 2.0
    started.close()  # twice is harmless


def _sleepy(item: int) -> int:
    time.sleep(0.1)
    return item


def _signals_of(item: int) -> tuple[int, str, str, int]:
    """A picklable check: the process, its SIGTERM and SIGINT handlers, its parent-death
    signal (Linux ``prctl(PR_GET_PDEATHSIG)``, 0 elsewhere)."""
    import ctypes  # noqa: PLC0415

    death = ctypes.c_int(0)
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).prctl(2, ctypes.byref(death), 0, 0, 0)  # PR_GET_PDEATHSIG
    handlers = [signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)]
    term, interrupt = ("ignored" if h is signal.SIG_IGN else repr(h) for h in handlers)
    return os.getpid(), term, interrupt, death.value


def _raise_stop(signum: int, frame: object) -> None:  # pragma: no cover - never sent
    raise KeyboardInterrupt


def test_workers_leave_stops_to_this_process_and_end_with_it() -> None:
    # agc-verify makes SIGTERM raise in this process; a forked worker inherited that,
    # sent the exception back as a chunk's result during the shutdown and was left
    # blocked on the result pipe after this process ended (`timeout agc-verify --all`
    # signals the whole process group).
    previous = signal.signal(signal.SIGTERM, _raise_stop)
    try:
        results = _parallel.map_checks(_signals_of, list(range(300)), jobs=2)
    finally:
        signal.signal(signal.SIGTERM, previous)
    workers = {r[1:] for r in results if r[0] != os.getpid()}
    expected_death = int(signal.SIGKILL) if sys.platform == "linux" else 0
    assert workers == {("ignored", "ignored", expected_death)}
