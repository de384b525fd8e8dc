"""agc.integrity._chain: reading the chain log strictly (a damaged line is unusable)."""

from __future__ import annotations

import os
import signal
import tracemalloc
from pathlib import Path

import pytest

from agc._core.store import StoreLayout
from agc.errors import StoreError
from agc.exitcodes import ExitCode
from agc.integrity import check_store, open_run, recover_run
from agc.integrity._chain import read_chain
from tests.conftest import THOROUGH

REACHES_INSIDE = {
    "agc.integrity._chain": "reads the store chain log's links directly (read_chain)",
}

GOOD = b'{"position":1,"run_id":"a","manifest_digest":"ab","prev":null}\n'


@pytest.mark.parametrize(
    "line",
    [
        b'{"position":1e400,"run_id":"a","manifest_digest":"ab","prev":null}',
        b'{"position":"2","run_id":"a","manifest_digest":"ab","prev":null}',
        b'{"position":2.5,"run_id":"a","manifest_digest":"ab","prev":null}',
        b'{"position":true,"run_id":"a","manifest_digest":"ab","prev":null}',
        b'{"position":2,"run_id":["a"],"manifest_digest":"ab","prev":null}',
        b'{"position":2,"run_id":"a\\nstore: complete","manifest_digest":"ab","prev":null}',
        b'{"position":2,"run_id":"../a","manifest_digest":"ab","prev":null}',
        b'{"position":2,"run_id":"a","manifest_digest":7,"prev":null}',
        b'{"position":2,"run_id":"a","manifest_digest":"ab","prev":{"x":1}}',
        b'{"position":2,"run_id":"a","manifest_digest":"ab"}',
        b"[1,2]",
        b"\xff\xfe",
    ],
    ids=[
        "position-inf",
        "position-str",
        "position-float",
        "position-bool",
        "run-id-list",
        "run-id-with-newline",
        "run-id-with-slash",
        "digest-int",
        "prev-object",
        "prev-absent",
        "array",
        "not-utf8",
    ],
)
def test_a_damaged_chain_line_is_unusable_never_a_crash(store: Path, line: bytes) -> None:
    layout = StoreLayout(store)
    layout.audit_dir.mkdir(parents=True)
    (layout.audit_dir / "chain.jsonl").write_bytes(GOOD + line + b"\n")
    entries, unusable = read_chain(layout)
    assert [entry.run_id for entry in entries] == ["a"]
    assert unusable == 1


def test_a_huge_sparse_chain_log_is_streamed_in_bounded_memory(tmp_path: Path) -> None:
    """A padded log (here 128 MiB of zero bytes, sparse; 512 MiB in the thorough
    profile) is one unusable line, read in bounded memory: never loaded whole (the
    padding is four times the bound on the peak, the bound far above the reader's
    buffers)."""
    padding = (512 if THOROUGH else 128) << 20
    store = tmp_path / "store"
    with open_run("r", store=store) as run:
        run.transcript.write({"role": "user", "content": "hi"})
    log = store / "audit" / "chain.jsonl"
    good = log.read_bytes()
    with log.open("r+b") as handle:
        handle.truncate(padding)
        handle.seek(padding)
        handle.write(b"\n" + good)
    tracemalloc.start()
    try:
        entries, unusable = read_chain(StoreLayout.at(store))
        report = check_store(store)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 32 << 20, f"peak {peak} bytes"
    assert unusable == 1
    assert [e.run_id for e in entries] == ["r", "r"]
    assert "chain-invalid" in {f.code for f in report.findings}
    assert not report.complete


def _sealed(store: Path, run_id: str) -> None:
    with open_run(run_id, store=store) as run:
        run.transcript.write({"role": "user", "content": run_id})


@pytest.mark.parametrize("what", ["fifo", "folder"])
@pytest.mark.parametrize("name", ["chain.jsonl", "chain-pending.json"])
def test_a_fifo_or_folder_in_place_of_the_chain_log_or_intent_is_refused_never_waited_on(
    store: Path, name: str, what: str
) -> None:
    """No crash leaves one there (both are written by append or rename): every seal
    refuses to link (exit 3, never a hang on the FIFO, never 'disk full'), agc recover
    too, agc-verify --all says chain-invalid; removed, recovery seals the run."""
    _sealed(store, "a")
    path = store / "audit" / name
    kept = path.read_bytes() if path.exists() else None
    if path.exists():
        path.unlink()
    os.mkfifo(path) if what == "fifo" else path.mkdir()

    def hung(signum: int, frame: object) -> None:
        raise TimeoutError(f"blocked on the {what} at audit/{name}")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(20)  # a blocked open fails the test instead of hanging it
    try:
        report = check_store(store)
        assert "chain-invalid" in {f.code for f in report.findings}
        assert not report.complete
        run = open_run("b", store=store)
        run.transcript.write({"role": "user"})
        with pytest.raises(StoreError, match="not a regular file") as caught:
            run.close()
        assert caught.value.exit_code == ExitCode.UNREADABLE
        assert "disk" not in (caught.value.hint or "")
        with pytest.raises(StoreError, match="not a regular file"):
            recover_run("b", store)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    path.unlink() if what == "fifo" else path.rmdir()
    if kept is not None:
        path.write_bytes(kept)
    recover_run("b", store)
    healed = check_store(store)
    assert healed.complete, [f.message for f in healed.findings]
    assert [r.run_id for r in healed.runs] == ["a", "b"]
