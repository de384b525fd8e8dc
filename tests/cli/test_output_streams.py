"""Where the command line's output goes when stdout or stderr is unusual: stdout
opened for reading only is the machine's fault (exit 3, never 4), lines to a reader
that went away are dropped quietly, and a byte progress bar appears only on a
terminal and only for known work."""

from __future__ import annotations

import contextlib
import os
import pty
import select
import sys
from pathlib import Path

import pytest

from agc.cli import common
from agc.cli.app import main as agc_main
from agc.cli.common import byte_progress, write_lines


@pytest.mark.parametrize("argv", [["readiness", "table"], ["readiness", "table", "--json"]])
def test_stdout_opened_read_only_is_exit_3_with_the_reason(
    argv: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    read_only = os.fdopen(os.open(os.devnull, os.O_RDONLY), "w")
    monkeypatch.setattr(sys, "stdout", read_only)
    try:
        code = agc_main(argv)
    finally:
        monkeypatch.undo()
        with contextlib.suppress(OSError):  # what is still buffered cannot be written
            read_only.close()
    assert code == 3
    err = capsys.readouterr().err
    assert "error: " in err
    assert "bad file descriptor" in err.lower()


def test_lines_to_a_reader_that_went_away_are_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)
    with os.fdopen(write_end, "w") as pipe:
        monkeypatch.setattr(sys, "stdout", pipe)
        write_lines(["first", "second"])  # no BrokenPipeError escapes
        write_lines(["third"])  # and later lines go nowhere, quietly
        assert os.path.samestat(os.fstat(pipe.fileno()), os.stat(os.devnull))


def test_no_progress_bar_off_a_terminal_or_for_unknown_work(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    with (tmp_path / "err").open("w") as not_a_terminal:
        monkeypatch.setattr(sys, "stderr", not_a_terminal)
        with byte_progress(1000, "hashing") as advance:
            assert advance is None


def test_a_progress_bar_is_drawn_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    primary, secondary = pty.openpty()
    monkeypatch.delenv("TTY_COMPATIBLE", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    # A console of its own, as a command's process has: the one kept in this process
    # took its width (COLUMNS) and state from whichever test made it first.
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setattr(common, "err_console", common.PlainFirstConsole("err_console"))
    drawn = b""
    try:
        with os.fdopen(secondary, "w") as terminal:
            monkeypatch.setattr(sys, "stderr", terminal)
            with byte_progress(0, "nothing") as none:
                assert none is None  # no total: nothing to show
            with byte_progress(1000, "hashing") as advance:
                assert advance is not None
                advance(500)
                advance(1000)
            terminal.flush()
            while select.select([primary], [], [], 0.5)[0]:
                chunk = os.read(primary, 65536)
                if not chunk:
                    break
                drawn += chunk
    finally:
        os.close(primary)
    assert b"0.0/1.0 kB" in drawn  # bytes done of the total, as it starts
    assert b"1.0/1.0 kB" in drawn  # and once the work is done
    assert drawn.endswith(b"\x1b[2K")  # transient: the bar is erased at the end
