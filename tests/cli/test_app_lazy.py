"""``agc`` loads a subcommand's module only when it runs, and behaves as when it loaded
them all: the same help, listings, suggestions, completion and exit codes."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import pytest
import typer
from typer.core import TyperCommand

from agc.cli import _HELP_FILE
from agc.cli import app as lazy_app
from agc.cli.app import SUBCOMMANDS, load_module, main
from agc.cli.common import EPILOG, VersionOption, new_app, run_app

MODULES = sorted({sub.module for sub in SUBCOMMANDS})
# Read from the files, not from the table under test: every module with a register()
# (and the verify command's).
_CLI = Path(lazy_app.__file__).parent
COMMAND_MODULES = {
    f"agc.cli.{path.stem}"
    for path in _CLI.glob("*.py")
    if "\ndef register(" in path.read_text(encoding="utf-8") or path.stem == "verify"
}


def _eager_app() -> typer.Typer:
    """``agc`` as it was built before: every module imported and registered up front."""
    eager = new_app(name="agc", help_text=str(lazy_app.app.info.help), completion=True)

    @eager.callback()
    def _options(version: VersionOption = False) -> None:
        """agc: auditable, resumable AI-agent runs."""

    import agc.cli.verify as verify_module  # noqa: PLC0415

    eager.command(
        name="verify",
        help=verify_module.VERIFY_HELP,
        epilog=EPILOG,
        cls=verify_module.GrammarCommand,
    )(verify_module.command_function())
    for module in dict.fromkeys(sub.module for sub in SUBCOMMANDS if sub.name != "verify"):
        __import__(module, fromlist=["register"]).register(eager)
    return eager


def test_the_table_names_every_command_of_every_module_in_the_listed_order() -> None:
    loaded: dict[str, str] = {}
    for module in MODULES:
        loaded.update(dict.fromkeys(load_module(module), module))
    assert {sub.name: sub.module for sub in SUBCOMMANDS} == loaded
    eager = typer.main.get_group(_eager_app())
    assert [sub.name for sub in SUBCOMMANDS] == list(eager.commands)


@pytest.mark.parametrize("sub", SUBCOMMANDS, ids=lambda s: s.name)
def test_a_summary_gives_the_one_line_help_of_the_loaded_command(
    sub: lazy_app.Subcommand,
) -> None:
    real = load_module(sub.module)[sub.name]
    stand_in = TyperCommand(sub.name, help=sub.summary, rich_markup_mode=None)
    for limit in range(20, 200):
        assert stand_in.get_short_help_str(limit) == real.get_short_help_str(limit)


def _run(
    capsys: pytest.CaptureFixture[str], app: typer.Typer, argv: list[str]
) -> tuple[int, str, str]:
    code = run_app(app, argv, prog_name="agc")
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        [],
        ["-h"],
        ["--version"],
        ["resme"],
        ["no-such-command"],
        ["ledger", "--help"],
        ["ledger"],
        ["keys", "generate", "--help"],
        ["verify", "--help"],
        ["resume", "--help"],
        ["resume", "--check"],
        ["ext", "list", "--bogus"],
        ["readiness", "--help"],
    ],
    ids=lambda a: " ".join(a) or "(none)",
)
def test_same_output_and_exit_code_as_the_eager_app(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    # A fresh lazy app (nothing loaded yet) against the eager one.
    fresh = new_app(
        name="agc", help_text=str(lazy_app.app.info.help), completion=True, cls=lazy_app._LazyGroup
    )
    fresh.callback()(lazy_app._options)
    assert _run(capsys, fresh, argv) == _run(capsys, _eager_app(), argv)


def test_main_runs_a_subcommand(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    history = tmp_path / "h.json"
    history.write_text(json.dumps([{"role": "user", "content": "hi"}]))
    assert main(["resume", "--check", str(history)]) == 0
    assert main(["resume", "--check", str(tmp_path / "absent.json")]) != 0


# -- in a fresh process: what is imported, shell completion ---------------------------

_RUNNER = (
    "import json, sys\n"
    "from agc.cli.app import main\n"
    "code = main(sys.argv[1:])\n"
    "sys.stdout.flush()\n"
    "sys.stderr.write('\\nMODULES ' + json.dumps(sorted(sys.modules)) + '\\n')\n"
    "raise SystemExit(code)\n"
)


def _env() -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    for forcing in ("FORCE_COLOR", "TTY_COMPATIBLE"):  # a pipe is a pipe, as for a user
        env.pop(forcing, None)
    return env


def _modules_after(argv: list[str]) -> tuple[int, set[str]]:
    done = subprocess.run(
        [sys.executable, "-c", _RUNNER, *argv],
        capture_output=True,
        text=True,
        check=False,
        env=_env(),
    )
    line = done.stderr.rsplit("\nMODULES ", 1)[1]
    return done.returncode, set(json.loads(line))


def _subcommand_modules(loaded: set[str]) -> set[str]:
    return COMMAND_MODULES & loaded


def test_the_command_modules_are_found() -> None:
    assert set(MODULES) == COMMAND_MODULES


def test_help_imports_no_subcommand_module_and_no_rich() -> None:
    code, loaded = _modules_after(["--help"])
    assert code == 0
    assert _subcommand_modules(loaded) == set()
    heavy = {"rich", "agc.integrity", "agc.resume", "agc.ledger", "cryptography", "pydantic"}
    assert heavy & loaded == set()
    # nor the store layer (its backends, the digests): --help opens no store
    assert {"agc._core.store", "agc._core.storage", "agc._core.folderstore"} & loaded == set()


def test_resume_check_imports_only_the_resume_command(tmp_path: Path) -> None:
    history = tmp_path / "small.json"
    history.write_text(json.dumps([{"role": "user", "content": "hi"}]))
    code, loaded = _modules_after(["resume", "--check", str(history)])
    assert code == 0
    assert _subcommand_modules(loaded) == {"agc.cli.resume"}
    assert {"cryptography", "rfc8785", "boto3", "pydantic"} & loaded == set()
    # A check writes no snapshot: the secret detector (hundreds of patterns) stays unloaded.
    assert "agc._core.redact" not in loaded
    # A file is checked, not a recorded run: the verifier is not loaded, nor the repair.
    assert {m for m in loaded if m.partition(".")[2].startswith("integrity")} == set()
    assert {"agc.resume._repair", "agc.resume._next"} & loaded == set()
    # Its lines go to a pipe as plain text: rich is not needed to write them.
    assert "rich" not in loaded


@pytest.mark.parametrize(
    ("words", "cword", "expected"),
    [
        ("agc re", "1", ["record", "report", "recover", "resume", "readiness"]),
        ("agc ledger ", "2", ["record", "show", "check"]),
    ],
)
def test_shell_completion_of_names(words: str, cword: str, expected: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, "-c", "from agc.cli.app import main; raise SystemExit(main())"],
        capture_output=True,
        text=True,
        check=False,
        env={**_env(), "_AGC_COMPLETE": "complete_bash", "COMP_WORDS": words, "COMP_CWORD": cword},
    )
    assert done.stdout.split() == expected


def test_shell_completion_with_help_texts_and_of_a_commands_options() -> None:
    env = {**_env(), "_AGC_COMPLETE": "complete_zsh", "_TYPER_COMPLETE_ARGS": "agc re"}
    runner = [sys.executable, "-c", "from agc.cli.app import main; raise SystemExit(main())"]
    done = subprocess.run(runner, capture_output=True, text=True, check=False, env=env)
    assert '"resume":"Check a saved history and repair it so the..."' in done.stdout
    env["_TYPER_COMPLETE_ARGS"] = "agc resume --"
    done = subprocess.run(runner, capture_output=True, text=True, check=False, env=env)
    assert '"--check":' in done.stdout


# -- `agc --help` to a pipe or a file: printed without typer --------------------------

_ENTRY_RUNNER = (
    "import json, sys\n"
    "from {module} import {function} as main\n"
    "code = main(sys.argv[1:])\n"
    "try:\n"
    "    sys.stdout.flush()\n"
    "except OSError:\n"
    "    pass\n"
    "sys.stderr.write('\\nMODULES ' + json.dumps(sorted(sys.modules)) + '\\n')\n"
    "raise SystemExit(code)\n"
)
_QUICK = ("agc.cli", "agc_main")  # the console script's entry point
_TYPER = ("agc.cli.app", "main")  # typer renders everything


class _Done(NamedTuple):
    code: int
    out: str
    err: str
    modules: set[str]


def _run_entry(
    entry: tuple[str, str],
    argv: list[str],
    *,
    stdout: int = subprocess.PIPE,
    env: dict[str, str] | None = None,
) -> _Done:
    """``agc ARGV`` through ``entry`` in a fresh process, stdout a pipe unless given;
    ``COLUMNS`` unset unless ``env`` sets it (a user's shell does not export it)."""
    module, function = entry
    runner = _ENTRY_RUNNER.format(module=module, function=function)
    base = {key: value for key, value in _env().items() if key != "COLUMNS"}
    done = subprocess.run(
        [sys.executable, "-c", runner, *argv],
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        check=False,
        env={**base, **(env or {})},
    )
    err, marked, modules = done.stderr.rpartition("\nMODULES ")
    if not marked:  # it exited on its own (shell completion does)
        return _Done(done.returncode, done.stdout or "", done.stderr, set())
    return _Done(done.returncode, done.stdout or "", err, set(json.loads(modules)))


def test_the_help_file_is_what_typer_prints_to_a_pipe() -> None:
    live = _run_entry(_TYPER, ["--help"])
    assert live.code == 0
    assert "typer" in live.modules
    help_file = Path(_HELP_FILE)
    if os.environ.get("AGC_UPDATE_GOLDEN"):
        help_file.write_text(live.out, encoding="utf-8")
    assert help_file.read_text(encoding="utf-8") == live.out, (
        f"{help_file.name} is stale; AGC_UPDATE_GOLDEN=1 rewrites it"
    )


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help_to_a_pipe_is_typers_text_without_typer(flag: str) -> None:
    quick, live = _run_entry(_QUICK, [flag]), _run_entry(_TYPER, [flag])
    assert (quick.code, quick.out, quick.err) == (live.code, live.out, live.err)
    # The package and this module only: no typer, no typing, not even the error tree.
    assert {m for m in quick.modules if m.startswith("agc")} == {"agc", "agc.cli"}
    assert {"typer", "typing", "rich"} & quick.modules == set()


@pytest.mark.parametrize(
    "env",
    [
        {"COLUMNS": "60"},
        {"_AGC_COMPLETE": "complete_bash", "COMP_WORDS": "agc ", "COMP_CWORD": "1"},
    ],
    ids=["COLUMNS", "completion"],
)
def test_typer_answers_help_when_its_text_would_differ(env: dict[str, str]) -> None:
    quick, live = _run_entry(_QUICK, ["--help"], env=env), _run_entry(_TYPER, ["--help"], env=env)
    assert (quick.code, quick.out, quick.err) == (live.code, live.out, live.err)
    assert quick.out != Path(_HELP_FILE).read_text(encoding="utf-8")


def test_help_to_a_terminal_is_typers() -> None:
    primary, secondary = pty.openpty()
    try:
        done = _run_entry(_QUICK, ["--help"], stdout=secondary)
    finally:
        os.close(secondary)
        os.close(primary)
    assert done.code == 0
    assert "typer" in done.modules


def test_help_that_cannot_be_written_ends_as_with_typer() -> None:
    # A full disk: typer's report and exit 3; a reader that went away: exit 1, no word.
    with open(os.devnull, "rb") as read_only:  # stdout opened for reading: EBADF
        opened = [_run_entry(e, ["--help"], stdout=read_only.fileno()) for e in (_QUICK, _TYPER)]
    assert opened[0].code == opened[1].code == 3
    assert opened[0].err == opened[1].err != ""
    if os.path.exists("/dev/full"):
        with open("/dev/full", "wb") as full:
            filled = [_run_entry(e, ["--help"], stdout=full.fileno()) for e in (_QUICK, _TYPER)]
        assert filled[0].code == filled[1].code == 3
        assert "no space left on device" in filled[0].err
        assert filled[0].err == filled[1].err
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        gone = [_run_entry(e, ["--help"], stdout=write_end) for e in (_QUICK, _TYPER)]
    finally:
        os.close(write_end)
    assert gone[0].code == gone[1].code == 1
    assert gone[0].err == gone[1].err == ""


# -- `agc resume TARGET [--check] [--json]`: parsed and run without typer --------------


@pytest.mark.parametrize(
    "flags", [["--check"], ["--check", "--json"], ["--json", "--check", "--check"]]
)
def test_resume_check_of_a_file_runs_without_typer_as_typer_runs_it(
    tmp_path: Path, flags: list[str]
) -> None:
    history = tmp_path / "small.json"
    history.write_text(json.dumps([{"role": "user", "content": "hi"}]))
    argv = ["resume", *flags, str(history)]
    quick, live = _run_entry(_QUICK, argv), _run_entry(_TYPER, argv)
    assert (quick.code, quick.out, quick.err) == (live.code, live.out, live.err)
    assert quick.code == 0
    assert "typer" in live.modules
    # Nothing of the command line's toolkit, nor what a FILE does not need: the store
    # layer (a run id's), the temporary files (a repair's), the subcommand table.
    assert {"typer", "click", "rich", "agc.cli.app"} & quick.modules == set()
    assert {"agc._core.store", "agc._core.storage", "tempfile"} & quick.modules == set()
    # A JSON array of Chat messages: no reader of another format, and no JSON writer
    # unless the report is JSON.
    readers = {m for m in quick.modules if m.startswith("agc.resume._formats.")}
    assert readers == {
        f"agc.resume._formats.{name}"
        for name in ("detect", "model", "jsonl", "lean", "openai_chat", "openai_responses")
    }
    assert ("orjson" in quick.modules) == ("--json" in flags)


def test_resume_errors_without_typer_are_typers(tmp_path: Path) -> None:
    missing = str(tmp_path / "absent.json")
    not_json = tmp_path / "bad.json"
    not_json.write_text("[{")
    for argv in (
        ["resume", "--check", missing],
        ["resume", "--check", "--json", missing],
        ["resume", "--check", str(not_json)],
    ):
        quick, live = _run_entry(_QUICK, argv), _run_entry(_TYPER, argv)
        assert (quick.code, quick.out, quick.err) == (live.code, live.out, live.err)
        assert quick.code == 2
        assert "typer" not in quick.modules
