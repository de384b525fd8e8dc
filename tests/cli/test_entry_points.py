"""The console-script entry points in process: which invocations ``agc`` answers
without typer (``--help`` to a pipe or file, from the help file), which it leaves to
typer, and what a help that cannot be written ends with. The same outcomes in a child
process, with the modules each loads, are in tests/cli/test_app_lazy.py."""

from __future__ import annotations

import io
import os
import pty
import sys
from pathlib import Path
from typing import Any

import pytest

import agc
import agc.cli.app
from agc.cli import _HELP_FILE, agc_main, agc_verify_main

HELP = Path(_HELP_FILE).read_text(encoding="utf-8")


@pytest.fixture
def typer_main(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """Record the argument lists handed to typer's ``agc`` (which answers 42)."""
    calls: list[list[str]] = []

    def main(argv: list[str] | None = None) -> int:
        calls.append(list(argv or []))
        return 42

    monkeypatch.setattr(agc.cli.app, "main", main)
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("_AGC_COMPLETE", raising=False)
    return calls


class Stream(io.StringIO):
    """A text stdout that is not a terminal, whose ``write`` raises ``error``."""

    def __init__(self, error: BaseException | None = None, *, tty: bool = False) -> None:
        super().__init__()
        self.error, self.tty = error, tty

    def isatty(self) -> bool:
        return self.tty

    def write(self, text: str) -> int:
        if self.error is not None:
            raise self.error
        return super().write(text)


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help_to_a_pipe_is_the_help_file_without_typer(
    flag: str, typer_main: list[list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    out = Stream()
    monkeypatch.setattr(sys, "stdout", out)
    assert agc_main([flag]) == 0
    assert out.getvalue() == HELP
    assert typer_main == []


def _closed() -> io.StringIO:
    stream = io.StringIO()
    stream.close()
    return stream


@pytest.mark.parametrize(
    ("env", "stdout"),
    [
        ({"COLUMNS": "60"}, Stream()),  # typer wraps at that width
        ({"_AGC_COMPLETE": "complete_bash"}, Stream()),  # click answers the completion
        ({}, Stream(tty=True)),  # a terminal: typer's width and colours
        ({}, None),  # no stdout at all
        ({}, _closed()),  # a closed stdout: isatty raises ValueError
        ({}, Stream(OSError(28, "No space left on device"))),  # typer meets it and reports it
        ({}, Stream(UnicodeEncodeError("ascii", "x", 0, 1, "no"))),  # took none of the text
    ],
    ids=["COLUMNS", "completion", "terminal", "no-stdout", "closed", "full-disk", "encoding"],
)
def test_help_is_left_to_typer_when_its_text_would_differ_or_cannot_be_written(
    env: dict[str, str],
    stdout: Any,
    typer_main: list[list[str]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(sys, "stdout", stdout)
    assert agc_main(["--help"]) == 42
    assert typer_main == [["--help"]]
    if isinstance(stdout, Stream) and not stdout.closed:
        assert stdout.getvalue() == ""  # nothing printed twice


def test_help_to_a_real_terminal_is_left_to_typer(
    typer_main: list[list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    primary, secondary = pty.openpty()
    with os.fdopen(secondary, "w") as terminal:
        monkeypatch.setattr(sys, "stdout", terminal)
        assert agc_main(["--help"]) == 42
    os.close(primary)
    assert typer_main == [["--help"]]


def test_help_to_a_reader_that_went_away_exits_1_and_the_rest_goes_nowhere(
    typer_main: list[list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)
    with os.fdopen(write_end, "w") as pipe:
        monkeypatch.setattr(sys, "stdout", pipe)
        assert agc_main(["--help"]) == 1
        # stdout's descriptor is /dev/null now: later output is discarded, not an error
        assert os.write(pipe.fileno(), b"more") == 4
        assert os.path.samestat(os.fstat(pipe.fileno()), os.stat(os.devnull))
    assert typer_main == []


@pytest.mark.parametrize(
    "argv",
    [
        ["hook", "--help"],  # the hook's help is typer's
        ["hook", "claude", "-h"],
        ["resume", "--help"],  # not a list the quick reader takes
        ["runs"],
        [],
        ["--help", "--version"],  # help is answered without typer only when asked alone
    ],
)
def test_other_invocations_are_typers(argv: list[str], typer_main: list[list[str]]) -> None:
    assert agc_main(argv) == 42
    assert typer_main == [argv]


def test_resume_check_of_a_missing_file_is_answered_without_typer(
    tmp_path: Path, typer_main: list[list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "none.json"
    assert agc_main(["resume", str(missing), "--check"]) == 2
    assert str(missing) in capsys.readouterr().err
    assert typer_main == []


def test_agc_verify_runs_its_own_entry_point(capsys: pytest.CaptureFixture[str]) -> None:
    assert agc_verify_main(["--version"]) == 0
    assert agc.__version__ in capsys.readouterr().out
