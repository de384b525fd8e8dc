"""Reproductions of ``agc hook`` not returning to its client at once (found by an
adversarial review; expected to fail until fixed)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

_HOOK = "import sys; from agc.cli.hook import run; sys.exit(run(sys.argv[1:]))"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_where_the_failure_file_goes_never_holds_the_hook(tmp_path: Path) -> None:
    store = tmp_path / "store"
    (store / "capture").mkdir(parents=True)
    os.mkfifo(store / "capture" / "failures.jsonl")
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")}
    try:
        done = subprocess.run(
            [sys.executable, "-c", _HOOK, "--client", "claude-code", "--store", str(store)],
            check=False,
            input=b"not json",
            capture_output=True,
            env=env,
            timeout=10,  # the client kills its hook at 10 s; agc promises 1 s
        )
    except subprocess.TimeoutExpired:
        pytest.fail("agc hook blocked on the FIFO")
    assert done.returncode == 0
    assert done.stdout == b""
