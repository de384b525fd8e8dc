"""A kill between any two steps of sealing never breaks the store for good.

Sealing a run that closes it writes a sidecar, the manifest, the chain intent, the
chain link and the head. The child process below seals a run and is killed right
before its k-th mutating system call (``write``, ``open(O_CREAT)``, ``rename``,
``link``, ``unlink``, ``ftruncate``), for every k, and once more with that call's
write cut in half (a torn line). After each kill, the next writer must seal its own
run without error (it heals the chain first), ``agc recover`` seals the killed run and
``recover_store`` cleans what is left: then ``agc-verify --all`` must pass, with every
run linked exactly once, contiguously. A seeded loop of random SIGKILLs over a writer
that seals run after run checks the same from the outside.
"""

from __future__ import annotations

import fcntl
import os
import random
import signal
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from agc._core.fs import remove_stale_temp_files
from agc._core.store import StoreLayout
from agc.errors import StoreError
from agc.integrity import StoreReport, check_store, open_run, recover_run, recover_store
from agc.integrity._chain import read_chain
from tests.conftest import examples
from tests.faults import kill_at_step
from tests.integrity.evidence_helpers import records

REACHES_INSIDE = {
    "agc.integrity._chain": "reads the chain log's links after each injected crash (read_chain)",
}

# Kills and disk faults: os.fsync stays real here (tests/conftest.py, _fsync_off).
pytestmark = pytest.mark.real_fsync


def _seal_in_child(store: Path, run_id: str, step: int, *, torn: bool) -> int:
    """Fork; the child seals ``run_id`` with a kill at ``step``; returns its exit code.

    Exit code 0 means the seal finished before ``step`` was reached.
    """
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        try:
            run = open_run(run_id, store=store)
            for record in records(seed=3, count=12):
                run.transcript.write(record)
            run.tool_events.write({"tool": "bash", "command": "pytest -q"})
            run.transcript.close()
            kill_at_step(step, torn=torn)
            run.tool_events.close()  # closes the run: sidecar, manifest, chain
        finally:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def _seal(store: Path, run_id: str) -> None:
    with open_run(run_id, store=store) as run:
        run.transcript.write({"role": "user", "content": f"run {run_id}"})


def _problems(report: StoreReport) -> list[str]:
    return [f"{f.code}: {f.message}" for f in report.findings if f.severity == "error"] + [
        f"{r.run_id}: {m}" for r in report.runs for m in r.missing
    ]


def _assert_healed(store: Path, run_ids: set[str]) -> None:
    # A recovery that sealed bytes no checkpoint vouched for fails the gate by design
    # (``recovered``); healed is everything else.
    report = check_store(store, allow_recovered=True)
    assert report.complete, _problems(report)
    assert not [f for f in report.findings if f.code in {"temp-file", "link-pending"}]
    entries, unusable = read_chain_of(store)
    assert unusable == 0
    assert [e.position for e in entries] == list(range(1, len(entries) + 1))
    assert sorted(e.run_id for e in entries) == sorted(run_ids)


def read_chain_of(store: Path) -> tuple[list[Any], int]:
    return read_chain(StoreLayout.at(store))


def _steps_of_a_seal(tmp_path: Path) -> int:
    """How many mutating calls closing a run makes (measured, never assumed)."""
    store = tmp_path / "probe"
    _seal(store, "earlier")
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        code = 0
        try:
            run = open_run("r", store=store)
            run.transcript.write({"role": "user"})
            run.tool_events.write({"tool": "bash"})
            run.transcript.close()
            counter = kill_at_step(10**9, torn=False)
            run.tool_events.close()
            code = min(counter(), 250)
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    steps = os.waitstatus_to_exitcode(status)
    assert 8 <= steps < 250, steps
    return steps


@pytest.fixture(scope="module")
def seal_steps(tmp_path_factory: pytest.TempPathFactory) -> int:
    return _steps_of_a_seal(tmp_path_factory.mktemp("steps"))


@pytest.mark.parametrize("torn", [False, True], ids=["kill", "torn-write"])
def test_a_kill_at_every_step_heals_through_the_next_writer_and_recover(
    tmp_path: Path, seal_steps: int, torn: bool
) -> None:
    damaged = []
    for step in range(1, seal_steps + 1):
        store = tmp_path / f"s{step}"
        _seal(store, "earlier")
        code = _seal_in_child(store, "r", step, torn=torn)
        assert code == 9, f"step {step}: the child did not die there"
        _seal(store, "next")  # the next writer heals whatever the kill left first
        recover_run("r", store)
        recover_store(store)
        try:
            _assert_healed(store, {"earlier", "r", "next"})
        except AssertionError as exc:
            damaged.append((step, str(exc)))
    assert not damaged, damaged


def test_a_kill_at_every_step_heals_through_recover_alone(tmp_path: Path, seal_steps: int) -> None:
    for step in range(1, seal_steps + 1):
        store = tmp_path / f"s{step}"
        _seal(store, "earlier")
        assert _seal_in_child(store, "r", step, torn=False) == 9
        first = check_store(store)
        if first.complete:  # killed after the head was written: only clean-up was left
            assert "r" in {e.run_id for e in read_chain_of(store)[0]}, f"step {step}"
        recover_run("r", store)
        recover_store(store)
        _assert_healed(store, {"earlier", "r"})
        again = recover_store(store)
        assert not again.changed, f"step {step}: a second recovery changed {again}"


def test_a_torn_chain_line_is_quarantined_not_glued_to_the_next_link(tmp_path: Path) -> None:
    store = tmp_path / "store"
    _seal(store, "a")
    chain = store / "audit/chain.jsonl"
    whole = chain.read_bytes()
    with chain.open("ab") as handle:
        handle.write(b'{"position":2,"run_id":"ghost","manif')
    _seal(store, "b")
    assert chain.read_bytes().startswith(whole)
    lines = chain.read_bytes().splitlines()
    assert len(lines) == 2
    assert b"ghost" not in chain.read_bytes()
    assert (store / "audit/chain.jsonl.quarantine").read_bytes().startswith(b'{"position":2')
    _assert_healed(store, {"a", "b"})


def test_a_head_ahead_of_the_log_is_refused_not_healed(tmp_path: Path) -> None:
    store = tmp_path / "store"
    _seal(store, "a")
    _seal(store, "b")
    chain = store / "audit/chain.jsonl"
    chain.write_bytes(chain.read_bytes().splitlines(keepends=True)[0])  # cut link 2
    with pytest.raises(StoreError, match=r"ahead of audit/chain\.jsonl"):
        _seal(store, "c")
    assert len(chain.read_bytes().splitlines()) == 1, "nothing may be linked on a cut log"


def test_a_live_temp_file_is_never_removed(tmp_path: Path) -> None:
    live = tmp_path / ".x.json.0123456789ab.tmp"
    dead = tmp_path / ".y.json.ba9876543210.tmp"
    other = tmp_path / "y.json"
    for path in (live, dead, other):
        path.write_bytes(b"{}")
    fd = os.open(live, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        assert remove_stale_temp_files(tmp_path) == [dead.name]
    finally:
        os.close(fd)
    assert live.exists()
    assert other.exists()
    assert not dead.exists()


def _seal_forever(store: Path, start: int) -> None:  # pragma: no cover - child
    try:
        number = start
        while True:
            _seal(store, f"run-{number:05d}")
            number += 1
    finally:
        os._exit(0)


def test_random_kills_never_leave_permanent_damage(tmp_path: Path) -> None:
    """Seeded: SIGKILL a writer that seals run after run, heal, verify, repeat (40
    kills in the thorough profile, the first 16 of them by default: each heals every
    run sealed so far, so the cost grows with the square of the kills)."""
    rng = random.Random(20261201)
    store = tmp_path / "store"
    _seal(store, "run-first")
    kills = healed = damaged = 0
    started = 0
    for _ in range(examples(40, least=16)):
        pid = os.fork()
        if pid == 0:  # pragma: no cover - child
            _seal_forever(store, started)
        time.sleep(rng.uniform(0.001, 0.06))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        kills += 1
        started += 1000
        changed = recover_store(store).changed
        for name in sorted(os.listdir(store / "audit/manifests")):
            if name.endswith(".json") and "@" not in name:
                changed |= recover_run(name[: -len(".json")], store).changed
        for name in sorted(os.listdir(store / "audit/transcripts")):
            if name.endswith(".jsonl"):
                changed |= recover_run(name[: -len(".jsonl")], store).changed
        healed += changed
        report = check_store(store, allow_recovered=True)
        if not report.complete:
            damaged += 1
            pytest.fail(f"kill {kills}: {_problems(report)}")
    print(
        f"\nchain random kills: {kills} kills, {healed} states healed, "
        f"{damaged} with permanent damage",
        file=sys.stderr,
    )
    assert damaged == 0
