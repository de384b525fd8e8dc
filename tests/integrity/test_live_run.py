"""A run that a writer is still appending to is ``unsealed``, never ``truncated``.

The checkpoint file and the artifact file change while the verifier reads them; it must
read them in an order that cannot race (checkpoints first, then the file's size).
"""

from __future__ import annotations

import os
import signal
import time
from collections import Counter
from pathlib import Path

from agc.integrity import check_run, open_run
from tests.conftest import examples

CHECKS = examples(40)  # verifications racing the writer


def _write_fast_forever(store: Path) -> None:  # pragma: no cover - child
    try:
        run = open_run("live", store=store)
        writer = run.transcript
        # Every record is written at once and checkpointed often: many checkpoints to
        # race against, few enough that each check stays quick.
        writer._buffer_limit = 0
        writer._checkpoint_records = 10
        writer._schedule_checkpoint()
        for number in range(300_000):
            writer.write({"role": "assistant", "content": f"step {number} " + "x" * 200})
        time.sleep(3600)
    finally:
        os._exit(0)


def test_a_live_run_is_unsealed_never_truncated_or_modified(tmp_path: Path) -> None:
    store = tmp_path / "store"
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        _write_fast_forever(store)
    codes: Counter[str] = Counter()
    try:
        deadline = time.monotonic() + 10
        while not (store / "audit/transcripts/live.jsonl.ckpt").exists():
            assert time.monotonic() < deadline, "the writer never started"
            time.sleep(0.005)
        for _ in range(CHECKS):
            report = check_run("live", store)
            codes.update(f.code for f in report.findings if f.artifact == "transcript")
            assert not report.complete
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    assert codes["unsealed"] == CHECKS, codes
    assert not codes.keys() & {"truncated", "modified"}, codes
