"""Tests for ``agc-verify`` / ``agc verify``: every exit code, human and JSON output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
import typer
from hypothesis import given, settings
from hypothesis import strategies as st
from typer._click import exceptions as click_errors
from typer.main import get_command

from agc._core.store import StoreLayout
from agc.cli import app as agc_app
from agc.cli import verify as verify_cli
from agc.cli import verify_args
from agc.cli.common import new_app
from agc.cli.verify_args import ArgsError, parse, rendered_by_typer
from agc.exitcodes import EXIT_CODE_TABLE, ExitCode
from agc.integrity import generate_keypair
from tests._core.test_store import BAD_RUN_IDS
from tests.conftest import examples, fixed_clock, run_python, tree, write_run

GOLDEN = Path(__file__).resolve().parent.parent / "golden"

DEMO_TRANSCRIPT: list[dict[str, Any]] = [
    {"role": "user", "content": "The parser test fails on empty input."},
    {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "name": "shell"}]},
    {"role": "tool", "tool_call_id": "c1", "content": "1 failed"},
    {"role": "assistant", "content": "Fixed: parse() returns [] for empty input."},
]
DEMO_EVENTS: list[dict[str, Any]] = [
    {"event": "tool_call_start", "call_id": "c1", "tool": "shell"},
    {"event": "tool_call_end", "call_id": "c1", "tool": "shell", "exit_code": 1},
]


def _deterministic_run(store: Path) -> StoreLayout:
    return write_run(
        store,
        "golden-run",
        transcript=DEMO_TRANSCRIPT,
        tool_events=DEMO_EVENTS,
        clock=fixed_clock(1_764_460_800_000),
    )


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = verify_cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


# -- exit codes -----------------------------------------------------------------------


def test_exit_0_complete(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_run(store)
    code, out, err = _run(["r1", "--store", str(store)], capsys)
    assert code == 0
    assert int(ExitCode.OK) == 0
    lines = out.splitlines()
    assert lines[0].startswith("OK   transcript   1 record,")
    assert lines[1].startswith("OK   tool-events  1 record,")
    assert lines[-1] == "run r1: complete"
    assert err == ""


def test_exit_1_findings(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    layout = write_run(store)
    layout.artifact_path("r1", "tool-events").unlink()
    code, out, _ = _run(["r1", "--store", str(store)], capsys)
    assert code == 1
    assert int(ExitCode.FINDINGS) == 1
    assert "FAIL tool-events  deleted: tool-events file missing (deleted after sealing)" in out
    assert out.splitlines()[-1] == "run r1: deleted (tampered; 1 finding(s))"


@pytest.mark.parametrize("run_id", BAD_RUN_IDS)
def test_exit_2_bad_run_id_creates_nothing(
    run_id: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "new-store"
    code, out, err = _run([run_id, "--store", str(store)], capsys)
    assert code == 2
    assert int(ExitCode.USAGE) == 2
    assert out == ""
    assert "run id" in err
    assert not store.exists()
    assert not Path(os.environ["AGC_HOME"]).exists()


@pytest.mark.parametrize(
    "argv", [[], ["r1", "--no-such-option"], ["r1", "r2"], ["r1", "--store"]], ids=str
)
def test_exit_2_usage(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(argv, capsys)
    assert code == ExitCode.USAGE
    assert err


@pytest.mark.parametrize("as_json", [False, True])
def test_exit_3_store_unreadable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], as_json: bool
) -> None:
    blocker = tmp_path / "file"
    blocker.write_bytes(b"")
    argv = ["r1", "--store", str(blocker)] + (["--json"] if as_json else [])
    code, out, err = _run(argv, capsys)
    assert code == 3
    assert int(ExitCode.UNREADABLE) == 3
    assert "error: store" in err
    if as_json:
        assert json.loads(out)["error"]["code"] == "store-unreadable"
    else:
        assert out == ""
    # No store folder at all holds no run: a finding (exit 1), not an unreadable store.
    code, _, _ = _run(["r1", "--store", str(tmp_path / "absent")], capsys)
    assert code == ExitCode.FINDINGS


def test_exit_3_file_unreadable(
    store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Root reads any file whatever its mode, so an I/O error is injected instead.
    layout = write_run(store)
    target = layout.artifact_path("r1", "transcript")
    real_open = os.open

    def failing_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if Path(path) == target:
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", failing_open)
    code, out, err = _run(["r1", "--store", str(store)], capsys)
    assert code == ExitCode.UNREADABLE
    assert "cannot read" in err
    assert out == ""


@pytest.mark.parametrize(
    "unreadable", ["audit/chain.jsonl", "audit/chain-head.json", "audit/transcripts"]
)
def test_exit_3_store_file_unreadable_with_all(
    store: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    unreadable: str,
) -> None:
    # Root reads any file whatever its mode, so an I/O error is injected instead.
    write_run(store)
    target = store / unreadable
    real_open, real_listdir = os.open, os.listdir

    def denied(path: Any) -> None:
        if Path(path) == target:
            raise PermissionError(13, "Permission denied", str(path))

    def failing_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        denied(path)
        return real_open(path, flags, *args, **kwargs)

    def failing_listdir(path: Any = ".") -> list[str]:
        denied(path)
        return real_listdir(path)

    monkeypatch.setattr(os, "open", failing_open)
    monkeypatch.setattr(os, "listdir", failing_listdir)
    code, out, err = _run(["--all", "--store", str(store)], capsys)
    assert code == ExitCode.UNREADABLE, err
    assert "cannot read" in err
    assert "Traceback" not in err
    assert out == ""


@pytest.mark.parametrize("as_json", [False, True])
def test_exit_4_internal_error_is_not_a_verdict(
    store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], as_json: bool
) -> None:
    write_run(store)

    def broken(*_args: Any, **_kwargs: Any) -> Any:
        raise RuntimeError("boom in the verifier")

    monkeypatch.setattr(verify_cli, "check_run", broken)
    code, out, err = _run(["r1", "--store", str(store)] + (["--json"] if as_json else []), capsys)
    assert code == 4
    assert int(ExitCode.INTERNAL) == 4
    assert out == ""  # no report, no "INCOMPLETE", no "complete": false
    assert "RuntimeError: boom in the verifier" in err
    assert "this is a bug, not a verdict" in err
    for word in ("INCOMPLETE", "FAIL", "finding"):
        assert word not in err


def test_help_shows_the_exit_code_table(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(["--help"], capsys)
    assert code == 0
    assert "Exit codes:" in out
    for exit_code, text in EXIT_CODE_TABLE:
        assert f"{int(exit_code)}  {text}" in out
    assert "agc-verify fix-tests-42 --store ./evidence --json" in out


def test_all_prints_finding_text_literally_never_as_markup(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Finding messages quote store content (here a manifest's member names); the
    summary table must print them as text: '[/]' once crashed it (exit 4)."""
    write_run(store)
    path = StoreLayout(store).manifest_path("r1")
    manifest = json.loads(path.read_text())
    manifest["[/]"] = 1
    manifest["[bold]x"] = 2
    path.write_text(json.dumps(manifest))
    code, out, err = _run(["--all", "--store", str(store)], capsys)
    assert code == ExitCode.FINDINGS, err
    assert "'[/]'" in out
    assert "'[bold]x'" in out
    # … and a store folder whose name looks like markup.
    odd = store.parent / "[bold]evidence"
    store.rename(odd)
    code, out, err = _run(["--all", "--store", str(odd)], capsys)
    assert code == ExitCode.FINDINGS, err
    assert "[bold]evidence" in out


def test_help_names_option_values_as_a_user_types_them(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, out, _ = _run(["--help"], capsys)
    assert "--trusted-key <path>" in out
    assert "list[" not in out


def test_agc_verify_subcommand_matches_agc_verify(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_run(store)
    first = _run(["r1", "--store", str(store), "--json"], capsys)
    second = agc_app.main(["verify", "r1", "--store", str(store), "--json"])
    assert (second, capsys.readouterr().out) == first[:2]


def test_store_from_agc_home(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_run(store)
    monkeypatch.setenv("AGC_HOME", str(store))
    assert verify_cli.main(["r1"]) == 0


def test_json_report(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    layout = write_run(store)
    layout.artifact_path("r1", "transcript").write_bytes(b"")
    code, out, _ = _run(["r1", "--store", str(store), "--json"], capsys)
    report = json.loads(out)
    assert code == 1
    assert report["schema_version"] == 1
    assert report["complete"] is False
    assert [f["code"] for f in report["findings"]] == ["truncated", "empty"]


# -- golden files ----------------------------------------------------------------------


def _golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("AGC_UPDATE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text(), f"{name} changed; AGC_UPDATE_GOLDEN=1 rewrites it"


@pytest.mark.parametrize("tampered", [False, True], ids=["complete", "tampered"])
@pytest.mark.parametrize("as_json", [False, True], ids=["human", "json"])
def test_golden_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], tampered: bool, as_json: bool
) -> None:
    store = tmp_path / "store"
    layout = _deterministic_run(store)
    if tampered:
        path = layout.artifact_path("golden-run", "transcript")
        path.write_bytes(path.read_bytes().replace(b"1 failed", b"1 passed"))
    argv = ["golden-run", "--store", str(store)] + (["--json"] if as_json else [])
    code, out, _ = _run(argv, capsys)
    assert code == (1 if tampered else 0)
    name = f"verify-{'tampered' if tampered else 'complete'}.{'json' if as_json else 'txt'}"
    _golden(name, out.replace(str(store), "<STORE>"))
    assert tree(store)  # the run really is on disk


VERIFY_INTO_A_CLOSED_PIPE = """
import os, sys
from agc.cli.verify import main
read_end, write_end = os.pipe()
os.close(read_end)               # the reader (`| head -1`) is gone
os.dup2(write_end, 1)
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.parametrize("as_json", [False, True])
@pytest.mark.parametrize("tampered", [False, True])
def test_a_closed_stdout_keeps_the_verdict_as_exit_code(
    store: Path, as_json: bool, tampered: bool
) -> None:
    """`agc-verify --all | head -1`: rich turned EPIPE into exit 1 ("findings") for a
    complete store, and the JSON path into a traceback and exit 4."""
    layout = write_run(store)
    if tampered:
        path = layout.artifact_path("r1", "transcript")
        path.write_bytes(path.read_bytes().replace(b"hi", b"HI"))
    argv = ["--all", "--store", str(store)] + (["--json"] if as_json else [])
    done = subprocess.run(
        [sys.executable, "-c", VERIFY_INTO_A_CLOSED_PIPE, *argv],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == (ExitCode.FINDINGS if tampered else ExitCode.OK), done.stderr
    assert "Traceback" not in done.stderr


def test_a_trusted_key_folder_fails_unsigned_runs_unless_allow_unsigned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "store"
    write_run(store, "r1")
    keys = tmp_path / "keys"
    _private, public, _ = generate_keypair(keys)
    trust = tmp_path / "trust"
    trust.mkdir()
    (trust / public.name).write_bytes(public.read_bytes())
    monkeypatch.setenv("AGC_TRUSTED_KEYS", str(trust))
    assert verify_cli.main(["r1", "--store", str(store)]) == ExitCode.FINDINGS
    assert verify_cli.main(["r1", "--store", str(store), "--allow-unsigned"]) == ExitCode.OK
    args = ["r1", "--store", str(store), "--allow-unsigned", "--require-signature"]
    assert verify_cli.main(args) == ExitCode.USAGE


def test_an_empty_trusted_key_folder_is_a_usage_error_on_the_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "store"
    write_run(store, "r1")
    (tmp_path / "trust").mkdir()
    monkeypatch.setenv("AGC_TRUSTED_KEYS", str(tmp_path / "trust"))
    assert verify_cli.main(["r1", "--store", str(store)]) == ExitCode.USAGE


# -- the one grammar (agc.cli.verify_args) ----------------------------------------------


@pytest.mark.parametrize(
    ("program", "golden"),
    [(["agc-verify"], "verify-help.txt"), (["agc", "verify"], "verify-subcommand-help.txt")],
    ids=" ".join,
)
def test_help_is_the_golden_text(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    program: list[str],
    golden: str,
) -> None:
    # The typer command built from the grammar's table renders the help as the typer
    # command of the function's own signature did (its text is the golden file).
    monkeypatch.setenv("COLUMNS", "80")
    run = verify_cli.main if program == ["agc-verify"] else agc_app.main
    assert run([*program[1:], "--help"]) == ExitCode.OK
    assert capsys.readouterr().out == (GOLDEN / golden).read_text()


_USAGE = "Usage: {prog} [OPTIONS] [RUN_ID]\nTry '{prog} -h' for help.\n\nError: "


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (["r1", "--jsn"], "No such option: --jsn (Possible options: --jobs, --json)"),
        (["r1", "--sta"], "No such option: --sta (Possible options: --all, --status, --store)"),
        (["r1", "--bogus"], "No such option: --bogus (Possible options: --jobs)"),
        (["r1", "-x"], "No such option: -x"),
        (["r1", "-qx"], "No such option: -x"),
        (["-1"], "No such option: -1"),
        (["r1", "r2", "r3"], "Got unexpected extra argument(s) (r2 r3)"),
        (
            ["--all", "--jobs", "0"],
            "Invalid value for '--jobs' / '-j': 0 is not in the range x>=1.",
        ),
        (["--all", "-j=2"], "Invalid value for '--jobs' / '-j': '=2' is not a valid int range."),
        # After "--" nothing is an option: one run id, the rest extra arguments.
        (["r1", "--", "--all"], "Got unexpected extra argument(s) (--all)"),
        (["r1", "--store", "d", "--", "x"], "Got unexpected extra argument(s) (x)"),
        (["--", "r1", "-q"], "Got unexpected extra argument(s) (-q)"),
        # Read from the left: an unknown option before a bad value or a missing one.
        (["--all", "--jobs", "x", "--zzz"], "No such option: --zzz"),
        (["--all", "-xq"], "No such option: -x"),
        (
            ["--all", "--retention-days", "0"],
            "Invalid value for '--retention-days': 0 is not in the range x>=1.",
        ),
    ],
    ids=str,
)
@pytest.mark.parametrize("program", [["agc-verify"], ["agc", "verify"]], ids=" ".join)
def test_a_refusal_of_the_grammar_reads_as_click_words_it(
    capsys: pytest.CaptureFixture[str], program: list[str], argv: list[str], error: str
) -> None:
    run = verify_cli.main if program == ["agc-verify"] else agc_app.main
    assert run([*program[1:], *argv]) == ExitCode.USAGE
    out, err = capsys.readouterr()
    assert (out, err) == ("", _USAGE.format(prog=" ".join(program)) + error + "\n")


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (["r1", "--store"], "Option '--store' requires an argument."),
        (["--all", "-j"], "Option '-j' requires an argument."),
        (["--all=1"], "Option '--all' does not take a value."),
        (["r1", "--json=1"], "Option '--json' does not take a value."),
    ],
    ids=str,
)
def test_an_option_without_its_value_or_with_one_it_takes_none(
    capsys: pytest.CaptureFixture[str], argv: list[str], error: str
) -> None:
    # click's parser raises these without the command's context (no usage lines); agc
    # gives it, so they read as every other refusal of the grammar.
    assert verify_cli.main(argv) == ExitCode.USAGE
    assert capsys.readouterr() == ("", _USAGE.format(prog="agc-verify") + error + "\n")


@pytest.mark.parametrize(
    "argv",
    [["r1", "--store", "--"], ["r1", "--store", "-odd"], ["r1", "--store=-odd"]],
    ids=str,
)
def test_an_option_takes_the_next_argument_whatever_it_looks_like(
    capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    # As click: `--store --` names the folder `--`, never a usage error or a crash.
    value = argv[-1].removeprefix("--store=")
    assert verify_cli.main(argv) == ExitCode.FINDINGS
    out, err = capsys.readouterr()
    assert f"no run 'r1' in store {value} " in out
    assert f"`agc runs --store {value}`" in err


# -- the grammar against click's reading of the same table -------------------------------
#
# Before one grammar (argparse) served both programs, click (typer) parsed every
# invocation, so click's reading of the table is the reference: the same options, the
# same run id, or the same refusal. Built here from verify_args.PARAMS as typer builds it.


def _click_reading(argv: list[str]) -> tuple[str, object]:
    """("help", None), ("options", {...}) or ("refused", message) as typer's own parser
    reads argv for the command built from the grammar's table (what parsed every
    invocation before the grammar)."""
    reference = new_app(name="agc-verify", help_text="")
    reference.command(no_args_is_help=True)(verify_cli.command_function())
    command = get_command(reference)
    try:
        with command.make_context("agc-verify", list(argv)) as ctx:
            values = dict(ctx.params)
    except (typer.Exit, click_errors.NoArgsIsHelpError):
        return "help", None
    except click_errors.UsageError as exc:
        return "refused", _without_suggestion(exc.format_message())
    values.pop("version", None)
    # A repeatable option click read nowhere is an empty tuple; the grammar's is None.
    values["trusted_key"] = list(values["trusted_key"]) or None
    return "options", _plain(values)


def _plain(values: dict[str, Any]) -> dict[str, Any]:
    """Paths as the strings they were given (typer converts them later, in the call)."""

    def plain(value: object) -> object:
        if isinstance(value, list):
            return [plain(item) for item in value]
        return str(value) if isinstance(value, Path) else value

    return {name: plain(value) for name, value in values.items()}


def _without_suggestion(message: str) -> str:
    # click's wording of a count ("argument"/"arguments") is agc's "argument(s)";
    # suggestions depend on the program's other options (completion): not compared.
    message = message.replace("extra arguments (", "extra argument(s) (")
    message = message.replace("extra argument (", "extra argument(s) (")
    return message.partition(" (Possible option")[0]


def _grammar_reading(argv: list[str]) -> tuple[str, object]:
    try:
        options = parse(argv)
    except ArgsError as exc:
        return "refused", _without_suggestion(exc.message)
    return "options", _plain(options._asdict())


_WORDS = st.sampled_from(
    [
        "r1", "r2", "-", "--", "-q", "-h", "--help", "--json", "--all", "--store", "--jobs",
        "-j", "-j2", "-j=2", "-qj", "-qj2", "-hq", "-qh", "-xq", "-qx", "-x", "-12", "-q=1",
        "--bogus", "--json=1", "--all=", "--store=d", "--trusted-key", "--trusted-key=k",
        "2", "0", "--version", "--status", "-jq", "--retention-days", "--expect-head",
    ]
)  # fmt: skip


@settings(max_examples=examples(1000))
@given(st.lists(_WORDS, max_size=6))
def test_the_grammar_reads_every_argument_list_as_click_reads_the_same_table(
    argv: list[str],
) -> None:
    # What the typer command answers (help, --version, completion) it also parses itself;
    # every other list is the grammar's, and must read as click read it: the same
    # options, or the same refusal (exit 2), never options where click showed the help.
    reference = _click_reading(argv)
    if rendered_by_typer(argv):
        return
    assert _grammar_reading(argv) == reference


_SCAN_WORDS = st.sampled_from(
    [
        "r1", "r2", "", "-", "--", "-q", "--quiet", "--json", "--all", "--status", "--store",
        "--store=", "--store=d", "--store=-d", "--jobs", "--jobs=3", "--jobs=0", "--jobs=x",
        "-j", "-j2", "-j=2", "-qj", "-x", "-12", "-q=1", "--json=1", "--all=", "--bogus",
        "--trusted-key", "--trusted-key=k", "--turn-file=t", "--retention-days=5",
        "--retention-days=0", "--retention-mode=governance", "--expect-head=ab", "2",
        "--require-signature", "--allow-unsigned", "--allow-recovered", "--scheduler=s",
        "--inventory=i",
    ]
)  # fmt: skip


def _parser_reading(argv: list[str]) -> tuple[str, object]:
    """The grammar's reading of argv by its argparse parser alone (the scan turned off)."""
    with mock.patch.object(verify_args, "_scan", return_value=None):
        return _grammar_reading(argv)


@settings(max_examples=examples(1000))
@given(st.lists(_SCAN_WORDS, max_size=6))
def test_the_quick_scan_reads_a_list_as_the_parser_does(argv: list[str]) -> None:
    # The scan of the table spares argparse on the lists it can read; whatever it
    # reads, it reads as the parser does (options, run id, refusal), and it never
    # answers a list the parser refuses.
    if rendered_by_typer(argv):
        return
    assert _grammar_reading(argv) == _parser_reading(argv)


@pytest.mark.parametrize(
    "argv",
    [
        ["r1"],
        ["r1", "--store", "d", "--json"],
        ["--json", "--store=d", "r1"],
        ["--store", "d", "--", "-r1"],
        ["--all", "--store", "d", "-j", "2", "--json"],
        ["--all", "--jobs=4", "--trusted-key", "k1", "--trusted-key", "k2", "-q"],
    ],
    ids=str,
)
def test_the_common_lists_are_read_without_argparse(argv: list[str]) -> None:
    # agc-verify's start-up: a run id with its options, or --all with its options, is
    # read by the scan; argparse is not even imported.
    code = (
        "import sys\n"
        "from agc.cli.verify_args import parse\n"
        f"options = parse({argv!r})\n"
        "print(options.run_id, options.all_runs, 'argparse' in sys.modules)\n"
    )
    done = run_python(code)
    options = parse(argv)
    assert done.stdout.split() == [str(options.run_id), str(options.all_runs), "False"]


@pytest.mark.parametrize("argv", [["-hq"], ["r1", "-qh"], ["--all", "-qqh"]], ids=str)
@pytest.mark.parametrize("program", [["agc-verify"], ["agc", "verify"]], ids=" ".join)
def test_help_in_a_cluster_of_short_options_is_the_help(
    capsys: pytest.CaptureFixture[str], program: list[str], argv: list[str]
) -> None:
    # click reads "-hq" as "-h -q": the help, exit 0, never a check or a refusal.
    run = verify_cli.main if program == ["agc-verify"] else agc_app.main
    assert run([*program[1:], *argv]) == ExitCode.OK
    out, err = capsys.readouterr()
    assert out.startswith(f"Usage: {' '.join(program)} [OPTIONS] [RUN_ID]")
    assert err == ""


@pytest.mark.parametrize(
    ("argv", "jobs"), [(["--jobs", "x", "--jobs", "2"], 2), (["-qj", "3"], 3), (["-qj4"], 4)]
)
def test_the_value_that_wins_is_the_one_converted(argv: list[str], jobs: int) -> None:
    # click converts the last of a repeated option only, and "-qj 3" is "-q -j 3".
    assert parse(["--all", *argv]).jobs == jobs


@pytest.mark.parametrize(
    ("store", "shown"),
    [
        ("s3:/evidence-b/agents", "s3://evidence-b/agents"),  # as a path prints the URL
        ("s3://evidence-b/agents", "s3://evidence-b/agents"),
        ("./evidence", "./evidence"),
    ],
)
def test_the_hint_for_a_missing_run_names_the_store_as_given(store: str, shown: str) -> None:
    from agc.cli.verify_text import recovery_hint  # noqa: PLC0415
    from agc.integrity import Finding, RunReport  # noqa: PLC0415

    report = RunReport(
        run_id="r1",
        store=store,
        findings=(Finding("run-missing", "run r1 is not in the store", severity="error"),),
        artifacts=(),
        manifest=False,
    )
    hint = recovery_hint(report, store=store)
    assert hint is not None
    assert f"agc runs --store {shown}`" in hint
