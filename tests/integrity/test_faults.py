"""Kill -9 fuzz: a child process writes a transcript and is killed at random moments.

After each kill the run must never verify as complete, must report the verified prefix,
and ``recover_run`` must seal it without losing a byte. No timing is asserted; the
random moments come from a seeded generator.
"""

from __future__ import annotations

import os
import random
import signal
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from agc._core.checkpoint import read_checkpoints
from agc._core.store import StoreLayout
from agc.errors import RunNotFoundError
from agc.integrity import check_run, check_store, open_run, read_manifest, recover_run
from agc.integrity._ingest import line_to_record
from tests.conftest import REAL_FIXTURES, examples, require_shared
from tests.integrity.evidence_helpers import records

REACHES_INSIDE = {
    "agc.integrity._ingest": "turns lines into transcript records as ingest does",
}

# Kills and disk faults: os.fsync stays real here (tests/conftest.py, _fsync_off).
pytestmark = pytest.mark.real_fsync

KILL_MOMENTS = examples(200)


def _generated_lines() -> list[bytes]:
    return [str(record).encode() for record in records(seed=11, count=300)]


def _real_lines() -> list[bytes]:
    folder = require_shared(REAL_FIXTURES / "codex-rollout")
    lines: list[bytes] = []
    for path in sorted(folder.glob("*.jsonl")):
        lines.extend(path.read_bytes().splitlines())
    return lines


def _child_writes_forever(store: Path, lines: list[bytes]) -> None:
    """Runs in the forked child; never returns."""
    try:
        run = open_run("fuzz", store=store)
        for writer in (run.transcript, run.tool_events):
            writer._checkpoint_records = 20
            writer._checkpoint_interval_ns = 2_000_000
            writer._schedule_checkpoint()
            writer._buffer_limit = 4096
        index = 0
        while True:
            run.transcript.write(line_to_record(lines[index % len(lines)], index + 1))
            if index % 5 == 0:
                run.tool_events.write({"event": "tool_call", "n": index})
            index += 1
    finally:
        os._exit(0)


def _kill_and_check(tmp: Path, lines: list[bytes], delay: float, stats: Counter[str]) -> None:
    store = tmp / "store"
    store.mkdir(parents=True)
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        _child_writes_forever(store, lines)
    time.sleep(delay)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)

    report = check_run("fuzz", store)
    assert not report.complete, "a killed run must never verify as complete"
    transcript = store / "audit/transcripts/fuzz.jsonl"
    before = transcript.read_bytes() if transcript.exists() else None
    # Killed before any file existed: the store holds nothing of the run (run-missing).
    finding = next(f for f in report.findings if f.artifact in {"transcript", None})
    if before is None:
        assert finding.code in {"missing", "run-missing"}
        stats["killed-before-the-file-existed"] += 1
    else:
        assert finding.code in {"unsealed", "empty", "torn-tail"}
        unsealed = next(f for f in report.findings if f.code == "unsealed")
        facts: dict[str, Any] = dict(unsealed.actual or {})
        if unsealed.artifact == "transcript":
            assert 0 <= facts["verified_bytes"] <= len(before)
            assert facts["torn_tail"] == (bool(before) and not before.endswith(b"\n"))
            stats["prefix-verified-by-checkpoint"] += facts["verified_bytes"] > 0
            stats["torn-tail"] += facts["torn_tail"]
    vouched = max((c.bytes for c in read_checkpoints(transcript)[0]), default=0)

    if before is None and not (store / "audit/tool-events/fuzz.jsonl").exists():
        # Nothing of the run reached the disk: there is nothing to recover, and no
        # empty run is made up (it would stay in the store's chain for good).
        with pytest.raises(RunNotFoundError):
            recover_run("fuzz", store)
        stats["kills"] += 1
        return
    recovery = recover_run("fuzz", store)
    if all(a.action == "removed-empty" for a in recovery.artifacts):
        # Killed before the first record: the empty files are removed, nothing sealed.
        assert not before
        assert not transcript.exists()
        with pytest.raises(RunNotFoundError):
            recover_run("fuzz", store)
        stats["killed-before-the-first-record"] += 1
        stats["kills"] += 1
        return
    # Healed: nothing is wrong but the recovery itself, which fails the gate exactly
    # when bytes no checkpoint vouched for were sealed.
    after = check_run("fuzz", store, allow_recovered=True)
    errors = {f.code for f in after.findings if f.severity == "error"}
    assert errors <= {"empty"}, after.missing
    manifest = read_manifest(StoreLayout.at(store), "fuzz")
    assert manifest is not None
    strict = {f.code for f in check_run("fuzz", store).errors}
    assert ("recovered" in strict) == manifest.recovered_unvouched
    if before:
        boundary = before.rfind(b"\n") + 1
        unvouched = manifest.artifacts["transcript"].unvouched
        assert unvouched is not None
        assert unvouched[0] == boundary - vouched, "unvouched bytes miscounted"
        assert unvouched[1] == before[vouched:boundary].count(b"\n")
        stats["recovered-with-unvouched-bytes"] += unvouched[0] > 0
        assert transcript.read_bytes() == before[:boundary], "recovery lost or changed a byte"
        quarantine = transcript.with_name("fuzz.jsonl.quarantine")
        if boundary < len(before):
            assert quarantine.read_bytes() == before[boundary:]
        else:
            assert not quarantine.exists()
        stats["records-recovered"] += before[:boundary].count(b"\n")
    assert not recover_run("fuzz", store).changed
    assert recovery.changed
    stats["kills"] += 1


@pytest.mark.parametrize("source", ["generated", "real-codex-rollouts"])
def test_kill9_at_random_moments_never_complete_and_recover_loses_nothing(
    tmp_path: Path, source: str
) -> None:
    lines = _generated_lines() if source == "generated" else _real_lines()
    rng = random.Random(2026)
    stats: Counter[str] = Counter()
    for moment in range(KILL_MOMENTS):
        _kill_and_check(tmp_path / f"m{moment}", lines, rng.uniform(0.0, 0.06), stats)
    assert stats["kills"] == KILL_MOMENTS
    assert stats["prefix-verified-by-checkpoint"] > 0
    print(f"kill -9 fuzz ({source}): {dict(stats)}")  # figures for the closing note


def _die(*_args: object, **_kwargs: object) -> None:
    os._exit(9)


CRASH_POINTS = {
    # module attribute replaced in the child, so the child dies right there
    "before-the-sidecar": ("agc.integrity._writer", "atomic_write_bytes"),
    "after-the-sidecar-before-the-manifest": ("agc.integrity._writer", "record_seal"),
    "after-the-manifest-before-the-chain-link": ("agc.integrity._chain", "append_link"),
    "after-the-chain-link-before-the-head": ("agc._core.folderstore", "atomic_write_bytes"),
}


@pytest.mark.parametrize("point", list(CRASH_POINTS))
def test_crash_while_sealing_is_never_complete_and_recovers(tmp_path: Path, point: str) -> None:
    store = tmp_path / "store"
    with open_run("earlier", store=store) as run:
        run.transcript.write({"role": "user", "content": "an earlier run keeps the chain going"})
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        try:
            module_name, attribute = CRASH_POINTS[point]
            run = open_run("r", store=store)
            for record in records(seed=5, count=30):
                run.transcript.write(record)
            run.transcript.close()
            setattr(sys.modules[module_name], attribute, _die)
            run.tool_events.close()
        finally:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 9, "the child must die at the crash point"
    transcript = store / "audit/transcripts/r.jsonl"
    before = transcript.read_bytes()

    assert not check_store(store).complete
    recover_run("r", store)
    after = check_store(store, allow_recovered=True)
    assert after.complete, [f.message for f in after.findings] + [
        m for r in after.runs for m in r.missing
    ]
    assert transcript.read_bytes() == before
    assert after.head_position == 2
