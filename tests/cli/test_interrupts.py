"""Ctrl-C and SIGTERM during ``agc record`` / ``agc import``: exit 130 / 143 and one line
on stderr saying what is on disk, that the run is unsealed, and ``agc recover <runId>``;
the run then verifies as unsealed and ``agc recover`` seals every record.

Each case runs the real command in a child process fed through a pipe (or a FIFO for
``import``) and signals it while it waits for more input.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agc._core.store import StoreLayout
from agc.cli.app import main
from agc.cli.verify import main as verify_main
from agc.exitcodes import ExitCode

SCRIPT = "import sys; from agc.cli.app import main; sys.exit(main(sys.argv[1:]))"
SIGNALS = [
    pytest.param(signal.SIGINT, ExitCode.INTERRUPTED, "interrupted", id="ctrl-c"),
    pytest.param(signal.SIGTERM, ExitCode.TERMINATED, "terminated", id="sigterm"),
]


def _lines(count: int) -> bytes:
    return b"".join(json.dumps({"n": n}).encode() + b"\n" for n in range(count))


def _wait_for_lines(path: Path, count: int, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_bytes().count(b"\n") >= count:
            return
        time.sleep(0.02)
    raise AssertionError(f"{path} never held {count} lines")


def _one_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    return lines[0]


def _stop_and_check(
    child: subprocess.Popen[bytes], store: Path, signum: int, code: int, word: str, records: int
) -> None:
    child.send_signal(signum)
    _, stderr = child.communicate(timeout=30)
    assert child.returncode == code, stderr
    line = _one_line(stderr.decode())
    path = StoreLayout(store).artifact_path("r1", "transcript")
    assert line.startswith(f"{word}: run r1 is NOT sealed; {records} records")
    assert str(path) in line
    assert f"`agc recover r1 --store {store}`" in line


def _recover_and_verify(store: Path, records: int, capsys: pytest.CaptureFixture[str]) -> None:
    assert verify_main(["r1", "--store", str(store)]) == ExitCode.FINDINGS
    captured = capsys.readouterr()
    assert "not sealed" in captured.out
    assert f"agc recover r1 --store {store}" in captured.err  # verify points to recover
    assert main(["recover", "r1", "--store", str(store)]) == ExitCode.OK
    assert verify_main(["r1", "--store", str(store)]) == ExitCode.OK
    data = StoreLayout(store).artifact_path("r1", "transcript").read_bytes()
    assert data.count(b"\n") == records


@pytest.mark.parametrize(("signum", "code", "word"), SIGNALS)
def test_record_stopped_mid_stream(
    store: Path, capsys: pytest.CaptureFixture[str], signum: int, code: int, word: str
) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", SCRIPT, "record", "--run-id", "r1", "--store", str(store)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert child.stdin is not None
    child.stdin.write(_lines(7))
    child.stdin.flush()
    _wait_for_lines(StoreLayout(store).artifact_path("r1", "transcript"), 7)
    _stop_and_check(child, store, signum, code, word, records=7)
    _recover_and_verify(store, 7, capsys)


@pytest.mark.parametrize(("signum", "code", "word"), SIGNALS)
def test_import_stopped_mid_file(
    tmp_path: Path,
    store: Path,
    capsys: pytest.CaptureFixture[str],
    signum: int,
    code: int,
    word: str,
) -> None:
    fifo = tmp_path / "session.jsonl"
    os.mkfifo(fifo)
    argv = ["import", str(fifo), "--run-id", "r1", "--store", str(store)]
    child = subprocess.Popen(
        [sys.executable, "-c", SCRIPT, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    writer = os.open(fifo, os.O_WRONLY)  # the importer is reading it
    try:
        os.write(writer, _lines(4))
        _wait_for_lines(StoreLayout(store).artifact_path("r1", "transcript"), 4)
        _stop_and_check(child, store, signum, code, word, records=4)
    finally:
        os.close(writer)
    _recover_and_verify(store, 4, capsys)


@pytest.mark.parametrize(("signum", "code", "word"), SIGNALS)
def test_stopped_before_the_first_line_leaves_the_run_id_free(
    store: Path, signum: int, code: int, word: str
) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", SCRIPT, "record", "--run-id", "r1", "--store", str(store)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    # Both files are open (the second is created after the first) and no line came yet.
    _wait_for_lines(StoreLayout(store).artifact_path("r1", "tool-events"), 0)
    time.sleep(0.2)
    child.send_signal(signum)
    _, stderr = child.communicate(timeout=30)
    assert child.returncode == code
    assert _one_line(stderr.decode()) == f"{word}: nothing was recorded; run id r1 stays free"
    assert not StoreLayout(store).artifact_path("r1", "transcript").exists()
    assert not StoreLayout(store).artifact_path("r1", "tool-events").exists()


@pytest.mark.parametrize(("signum", "code", "word"), SIGNALS)
def test_any_other_command_exits_with_the_signal_s_code(
    store: Path, signum: int, code: int, word: str
) -> None:
    """`agc show --follow` waits forever for a run that does not start: stop it."""
    child = subprocess.Popen(
        [sys.executable, "-c", SCRIPT, "show", "never", "--store", str(store), "--follow"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert child.stderr is not None
    assert b"waiting for run never" in child.stderr.readline()
    child.send_signal(signum)
    _, stderr = child.communicate(timeout=30)
    assert child.returncode == code
    assert stderr.decode().strip().splitlines()[-1] == word


def test_the_exit_code_table_has_130_and_143() -> None:
    assert int(ExitCode.INTERRUPTED) == 128 + signal.SIGINT
    assert int(ExitCode.TERMINATED) == 128 + signal.SIGTERM


def test_a_sigterm_whose_exception_is_swallowed_still_stops_the_command(
    store: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A library swallows the SIGTERM's exception on the way ("Exception ignored in …",
    # as an at-fork hook does when the signal lands while a worker is forked): the
    # command went on and exited 0 as if no one had asked it to stop.
    from agc.cli import runs  # noqa: PLC0415
    from agc.integrity import list_runs as listed  # noqa: PLC0415

    def swallowing(*args: object, **kwargs: object) -> object:
        try:  # noqa: SIM105 - the handler raises in this very block, not in an __exit__
            os.kill(os.getpid(), signal.SIGTERM)  # the handler raises right here
        except KeyboardInterrupt:
            pass
        return listed(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(runs, "list_runs", swallowing)
    code = main(["runs", "--store", str(store)])
    err = capsys.readouterr().err
    assert code == ExitCode.TERMINATED, err
    assert err.endswith("\nterminated\n"), err
    monkeypatch.undo()
    assert main(["runs", "--store", str(store)]) == ExitCode.OK


class _StopInDel:
    """Sends its signal as it is collected: Python cannot raise the handler's exception
    out of ``__del__`` and prints "Exception ignored in …" with a traceback instead."""

    def __init__(self, signum: int) -> None:
        self.signum = signum

    def __del__(self) -> None:
        os.kill(os.getpid(), self.signum)


@pytest.mark.parametrize(("signum", "code", "word"), SIGNALS)
def test_a_stop_python_cannot_raise_still_stops_the_command_with_one_word(
    store: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    signum: int,
    code: int,
    word: str,
) -> None:
    from agc.cli import runs  # noqa: PLC0415
    from agc.integrity import list_runs as listed  # noqa: PLC0415

    def stopped_in_a_del(*args: object, **kwargs: object) -> object:
        _StopInDel(signum)  # collected at once
        return listed(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(runs, "list_runs", stopped_in_a_del)
    exit_code = main(["runs", "--store", str(store), "--json"])
    assert (exit_code, capsys.readouterr().err) == (code, word + "\n")
