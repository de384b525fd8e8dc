"""Every command's ``--help`` ends with the exit-code table (130/143 included) and shows
examples; both programs answer ``--version``."""

from __future__ import annotations

from typing import Any

import pytest
import typer

from agc.cli import verify as verify_cli
from agc.cli.app import app, main
from agc.exitcodes import EXIT_CODE_TABLE


def _command_paths() -> list[list[str]]:
    paths: list[list[str]] = []

    def walk(command: Any, path: list[str]) -> None:
        paths.append(path)
        for name, sub in getattr(command, "commands", {}).items():  # a group
            walk(sub, [*path, name])

    walk(typer.main.get_command(app), [])
    return paths


PATHS = _command_paths()


def test_the_walk_sees_the_new_commands() -> None:
    names = {" ".join(path) for path in PATHS}
    assert {"runs", "show", "report", "keys generate", "ledger record", "recover"} <= names


@pytest.mark.parametrize("path", PATHS, ids=lambda p: " ".join(p) or "agc")
def test_every_help_has_the_exit_code_table(
    path: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*path, "--help"]) == 0
    out = capsys.readouterr().out
    assert "Exit codes:" in out
    for code, text in EXIT_CODE_TABLE:
        assert f"{int(code)}  {text}" in out


def test_agc_verify_help_has_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert verify_cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "130  interrupted" in out
    assert "143  terminated" in out
