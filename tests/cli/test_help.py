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


LEAVES = [
    path for path in PATHS if path and not any(p[: len(path)] == path for p in PATHS if p != path)
]


@pytest.mark.parametrize("path", LEAVES, ids=" ".join)
def test_every_command_help_shows_examples(
    path: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*path, "--help"]) == 0
    out = capsys.readouterr().out
    assert "Examples:" in out
    assert f"agc {' '.join(path)}" in out.split("Examples:")[1] or path == ["verify"]


def test_demo_help_says_where_the_store_is(capsys: pytest.CaptureFixture[str]) -> None:
    # --store names the folder that holds the demo's two stores, not the store itself.
    assert main(["demo", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "FOLDER/store" in out
    assert "agc-verify demo-fix-parser --store ./agc-demo/store" in out


@pytest.mark.parametrize("path", LEAVES, ids=" ".join)
def test_every_usage_line_names_its_arguments_in_capitals_never_in_braces(
    path: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*path, "--help"]) == 0
    out = capsys.readouterr().out
    usage = out.splitlines()[0]
    assert usage.startswith(f"Usage: agc {' '.join(path)} "), usage
    words = usage.split(" ")[2 + len(path) :]
    assert "{" not in usage, usage
    assert "}" not in usage, usage
    for word in words:
        name = word.strip("[]").removesuffix("...")
        assert name == name.upper(), usage
    arguments = (
        out.split("\nArguments:\n", 1)[1].split("\n\n", 1)[0] if "\nArguments:\n" in out else ""
    )
    for line in arguments.splitlines():
        if line.startswith("  ") and not line.startswith("   "):
            name = line.split()[0]
            assert name == name.upper(), line
