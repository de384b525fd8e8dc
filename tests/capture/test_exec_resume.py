"""A run recorded from ``codex exec --json`` resumes from the rollout of its thread.

The stream holds no history (``agc resume RUN`` refused it: "an event stream holds no
resumable history"), but its ``thread.started`` names the rollout Codex wrote. The run
keeps the thread id; ``agc resume RUN`` finds the rollout under ``$CODEX_HOME/sessions``
(or the run that captured that thread) and says which it used.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from agc.cli.app import main
from tests.conftest import REAL_FIXTURES, feed_stdin, require_shared

# This rollout ends with a call that never got its output: --check finds it (exit 1),
# which the stream alone could never show.
ROLLOUT = "rollout-2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322.jsonl"
THREAD = "019c8a70-dda7-7f33-98ea-f30553347322"


def _record_exec_run(store: Path, monkeypatch: pytest.MonkeyPatch, thread: str = THREAD) -> None:
    stream = (
        json.dumps({"type": "thread.started", "thread_id": thread}).encode()
        + b'\n{"type":"turn.started"}\n'
    )
    feed_stdin(monkeypatch, stream)
    assert main(["record", "--run-id", "ex1", "--store", str(store)]) == 0


def _codex_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "codex-home"
    (home / "sessions" / "2026" / "02" / "23").mkdir(parents=True)
    monkeypatch.setenv("CODEX_HOME", str(home))
    return home / "sessions" / "2026" / "02" / "23"


def test_resume_of_an_exec_run_reads_the_rollout_under_codex_home(
    tmp_path: Path,
    store: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    rollout = require_shared(REAL_FIXTURES / "codex-rollout" / ROLLOUT)
    day = _codex_home(tmp_path, monkeypatch)
    shutil.copy(rollout, day / ROLLOUT)
    _record_exec_run(store, monkeypatch)
    capsys.readouterr()
    assert main(["resume", "ex1", "--store", str(store), "--check"]) == 1
    out, err = capsys.readouterr()
    assert "tool-call-unanswered" in out
    assert f"thread {THREAD}" in err
    assert str(day / ROLLOUT) in err


def test_a_file_named_for_the_thread_that_is_another_session_is_not_used(
    tmp_path: Path,
    store: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    rollout = require_shared(REAL_FIXTURES / "codex-rollout" / ROLLOUT)
    day = _codex_home(tmp_path, monkeypatch)
    other = rollout.read_bytes().replace(THREAD.encode(), b"0" * 8 + THREAD[8:].encode(), 1)
    (day / ROLLOUT).write_bytes(other)
    _record_exec_run(store, monkeypatch)
    capsys.readouterr()
    assert main(["resume", "ex1", "--store", str(store), "--check"]) == 2
    err = capsys.readouterr().err
    assert f"neither the rollout of its thread {THREAD}" in err
    assert "CODEX_HOME" in err


def test_without_the_rollout_the_run_that_captured_the_thread_is_used(
    tmp_path: Path,
    store: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    rollout = require_shared(REAL_FIXTURES / "codex-rollout" / ROLLOUT)
    _codex_home(tmp_path, monkeypatch)  # empty
    assert main(["import", str(rollout), "--store", str(store)]) == 0
    _record_exec_run(store, monkeypatch)
    capsys.readouterr()
    assert main(["resume", "ex1", "--store", str(store), "--check"]) == 1
    out, err = capsys.readouterr()
    assert "tool-call-unanswered" in out
    assert f"resuming from run codex-{THREAD}" in err


def test_a_run_of_no_thread_is_resumed_as_before(
    store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    feed_stdin(monkeypatch, b'{"type":"turn.started"}\n{"type":"turn.completed"}\n')
    assert main(["record", "--run-id", "ex2", "--store", str(store)]) == 0
    capsys.readouterr()
    assert main(["resume", "ex2", "--store", str(store), "--check"]) == 2
    assert "holds no resumable history" in capsys.readouterr().err
