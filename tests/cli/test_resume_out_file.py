"""The file ``agc resume --out FILE`` makes: its permission bits, and what a kill leaves.

``--out`` gets the permission bits of the file it repairs, masked by the umask (as
``cp`` gives them, and as ``--in-place`` keeps the file's mode); a run or snapshot from
the store gets 0600. A child process writing ``--out`` is killed for real (``os._exit``
at each mutating system call, and a SIGKILL it sends itself at the fsync before the
commit, the content complete but not yet in place): the folder then holds the input and
either nothing else or the whole checked repair, never a temporary file. Where the
system has no unnamed files (O_TMPFILE) the writer uses a hidden temporary name, and
the next ``--out`` of that name removes what a killed one left.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import agc._core.fs as core_fs
from agc.cli.app import main
from agc.exitcodes import ExitCode
from agc.resume import SessionSnapshot, ToolCallState, save_snapshot
from tests.faults import kill_at_step

# Kills: os.fsync stays real here (tests/conftest.py, _fsync_off).
pytestmark = pytest.mark.real_fsync

PENDING = [
    {"role": "user", "content": "hi"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "run", "arguments": "{}"}}
        ],
    },
]


def _rollout() -> bytes:
    """A Codex rollout whose last call has no output (repaired as a streamed file)."""
    payloads: list[dict[str, Any]] = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]},
        {"type": "function_call", "name": "exec_command", "arguments": "{}", "call_id": "c1"},
    ]
    lines: list[dict[str, Any]] = [
        {"timestamp": "t", "type": "session_meta", "payload": {"id": "s"}}
    ]
    lines += [{"timestamp": "t", "type": "response_item", "payload": p} for p in payloads]
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


INPUTS = {
    "json-array": ("history.json", json.dumps(PENDING).encode()),
    "session-file": ("rollout.jsonl", _rollout()),
}


@contextmanager
def _umask(mask: int) -> Iterator[None]:
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


@pytest.mark.parametrize("kind", sorted(INPUTS))
def test_out_gets_the_inputs_mode_masked_by_the_umask(tmp_path: Path, kind: str) -> None:
    name, data = INPUTS[kind]
    source = tmp_path / name
    source.write_bytes(data)
    for umask in (0o022, 0o077):
        for mode in (0o644, 0o640, 0o600):
            source.chmod(mode)
            out = tmp_path / f"fixed-{umask:o}-{mode:o}-{name}"
            with _umask(umask):
                assert main(["resume", str(source), "--out", str(out)]) == ExitCode.OK
            assert out.stat().st_mode & 0o777 == mode & ~umask, (umask, oct(mode))


def test_out_of_a_snapshot_in_the_store_is_private(store: Path, tmp_path: Path) -> None:
    save_snapshot(SessionSnapshot("run-7", "s", PENDING, ToolCallState(True, "a"), {}), store)
    out = tmp_path / "fixed.json"
    with _umask(0o022):
        assert main(["resume", "run-7", "--store", str(store), "--out", str(out)]) == 0
    assert out.stat().st_mode & 0o777 == 0o600


def _in_child(argv: list[str], *, step: int | None, named: bool) -> int:
    """Fork; the child runs ``agc ARGV`` killed at its ``step``-th mutating call (or,
    ``None``, by a SIGKILL it sends itself at its first fsync), with named temporary
    files only when ``named``. Its exit status: 50 when it finished, else killed."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        try:
            if named:
                core_fs._O_TMPFILE = 0  # type: ignore[misc] # as a system without O_TMPFILE
            if step is None:

                def killed(fd: object) -> None:
                    os.kill(os.getpid(), signal.SIGKILL)

                os.fsync = killed
            else:
                kill_at_step(step)
            main(argv)
        finally:
            os._exit(50)
    _, status = os.waitpid(pid, 0)
    return status


def _source(tmp_path: Path, kind: str) -> Path:
    name, data = INPUTS[kind]
    folder = tmp_path / "work"
    folder.mkdir()
    source = folder / name
    source.write_bytes(data)
    return source


@pytest.mark.parametrize("named", [False, True], ids=["unnamed", "named"])
@pytest.mark.parametrize("kind", sorted(INPUTS))
def test_a_kill_at_any_step_of_out_leaves_no_temporary_file(
    tmp_path: Path, kind: str, named: bool
) -> None:
    """Killed at each step in turn (the last kill at the commit's link): the input and
    nothing, or the whole repair; with named temporary files a killed child's one is
    removed by the next child, and the child that finishes leaves none."""
    source = _source(tmp_path, kind)
    out = source.with_name("fixed" + source.suffix)
    argv = ["resume", str(source), "--out", str(out)]
    reference = tmp_path / ("reference" + source.suffix)
    assert main(["resume", str(source), "--out", str(reference)]) == ExitCode.OK
    step, kills = 1, 0
    while True:
        out.unlink(missing_ok=True)
        status = _in_child(argv, step=step, named=named)
        left = sorted(path.name for path in source.parent.iterdir())
        if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 50:
            assert left == sorted([source.name, out.name])
            break
        kills += 1
        if named:  # at most the one the killed child made: it removed those before it
            stale = [name for name in left if name.startswith(f".{out.name}.")]
            assert len(stale) <= 1, (step, left)
            left = [name for name in left if name not in stale]
        assert left in ([source.name], sorted([source.name, out.name])), (step, left)
        if out.exists():
            assert out.read_bytes() == reference.read_bytes()
        step += 1
    assert kills >= 1  # the commit itself is a step: the last kill is there


@pytest.mark.parametrize("kind", sorted(INPUTS))
def test_a_sigkill_before_the_commit_leaves_nothing_unnamed(tmp_path: Path, kind: str) -> None:
    """SIGKILL once the repair is written whole, at the fsync before it is put in place:
    with O_TMPFILE the folder holds only the input."""
    source = _source(tmp_path, kind)
    out = source.with_name("fixed" + source.suffix)
    status = _in_child(["resume", str(source), "--out", str(out)], step=None, named=False)
    assert os.WIFSIGNALED(status)
    assert os.WTERMSIG(status) == signal.SIGKILL
    assert sorted(path.name for path in source.parent.iterdir()) == [source.name]


@pytest.mark.parametrize("kind", sorted(INPUTS))
def test_the_next_out_removes_the_temporary_file_a_sigkill_left(tmp_path: Path, kind: str) -> None:
    """Without O_TMPFILE a SIGKILL leaves ``.FILE.<hex>.tmp``; the next ``--out FILE``
    (named temporary files too) removes it and writes FILE."""
    source = _source(tmp_path, kind)
    out = source.with_name("fixed" + source.suffix)
    argv = ["resume", str(source), "--out", str(out)]
    status = _in_child(argv, step=None, named=True)
    assert os.WIFSIGNALED(status)
    assert os.WTERMSIG(status) == signal.SIGKILL
    (stale,) = (p.name for p in source.parent.iterdir() if p.name != source.name)
    assert stale.startswith(f".{out.name}.")
    assert stale.endswith(".tmp")
    status = _in_child(argv, step=10**6, named=True)
    assert os.WIFEXITED(status)
    assert os.WEXITSTATUS(status) == 50  # finished
    assert sorted(path.name for path in source.parent.iterdir()) == sorted([source.name, out.name])
