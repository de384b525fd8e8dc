"""A command asked for ``--json`` refuses in JSON too: an error of the option parser
(unknown option, bad or missing value) is ``{"error": {"code": "usage", …}}`` on stdout
with exit 2, beside typer's usage message on stderr; an agc error whose JSON document
cannot be written (a full disk) is exit 3 with both problems on stderr. A pipe whose
reader went away takes the rest of the output silently."""

from __future__ import annotations

import contextlib
import json
import os
import sys
from pathlib import Path

import pytest

from agc.cli.app import main as agc_main


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["runs", "--bogus", "--json"], "No such option: --bogus"),
        (["verify", "r1", "--json", "--jobs", "many"], "'many' is not a valid int"),
        # click's parser raises these two without the command: agc still names it.
        (["runs", "--json", "--store"], "Option '--store' requires an argument."),
        (
            ["resume", "x", "--json", "--max-findings"],
            "Option '--max-findings' requires an argument.",
        ),
        (["verify", "r1", "--json", "--store"], "Option '--store' requires an argument."),
    ],
)
def test_a_usage_error_with_json_is_a_json_refusal_and_typers_message(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert agc_main(argv) == 2
    out, err = capsys.readouterr()
    error = json.loads(out)["error"]
    assert error["code"] == "usage"
    assert message in error["message"]
    assert error["hint"] == f"Try 'agc {argv[0]} -h' for help."
    assert "Usage: agc " + argv[0] in err
    assert message in err


def test_a_usage_error_without_json_writes_nothing_to_stdout(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert agc_main(["runs", "--bogus"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert "No such option: --bogus" in err


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_an_error_whose_json_cannot_be_written_exits_3_naming_both(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "no-store"
    full = open("/dev/full", "w", encoding="utf-8")  # noqa: SIM115 - closed below
    try:
        monkeypatch.setattr(sys, "stdout", full)
        code = agc_main(["runs", "--store", str(missing), "--json"])
    finally:
        with contextlib.suppress(OSError):  # what is still buffered meets the full disk
            full.close()
    assert code == 3
    err = capsys.readouterr().err
    assert f"error: store {missing} does not exist" in err
    assert "error: stdout: " in err
    assert "no space left on device" in err.lower()
    assert "hint: free disk space or fix the permissions" in err


def test_json_to_a_reader_that_went_away_is_dropped_and_the_exit_code_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "no-store"
    read_end, write_end = os.pipe()
    os.close(read_end)
    with os.fdopen(write_end, "w") as pipe:
        monkeypatch.setattr(sys, "stdout", pipe)
        # the refusal's own exit code (2: the store named does not exist), not 1 for the pipe
        assert agc_main(["runs", "--store", str(missing), "--json"]) == 2
        assert os.path.samestat(os.fstat(pipe.fileno()), os.stat(os.devnull))
