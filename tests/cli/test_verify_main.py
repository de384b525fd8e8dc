"""``agc-verify``'s quick entry point: same output and exit codes as the full command."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest

from agc.cli import verify as full
from agc.cli import verify_main
from agc.cli._process import sigterm_raises
from agc.cli.verify_args import VerifyOptions
from agc.cli.verify_main import quick_options
from agc.integrity import open_run
from tests.conftest import run_python


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["r1"], {"run_id": "r1"}),
        (["r1", "--json"], {"run_id": "r1", "as_json": True}),
        (["--json", "r1"], {"run_id": "r1", "as_json": True}),
        (["r1", "--store", "/s"], {"run_id": "r1", "store": Path("/s")}),
        (["--store", "/s", "r1", "--json"], {"run_id": "r1", "store": Path("/s"), "as_json": True}),
        (["r1", "--store=/s"], {"run_id": "r1", "store": Path("/s")}),
        # As click reads them: the last of a repeated option wins, an option's value is
        # the next argument whatever it looks like, `--` ends the options.
        (["r1", "--store", "a", "--store", "b"], {"run_id": "r1", "store": Path("b")}),
        (["r1", "--store", "--json"], {"run_id": "r1", "store": Path("--json")}),
        (["r1", "--json", "--json"], {"run_id": "r1", "as_json": True}),
        (["--", "-old"], {"run_id": "-old"}),
        (["--store", "/s", "--", "r1"], {"run_id": "r1", "store": Path("/s")}),
        ([], None),
        (["--help"], None),
        (["-h"], None),
        (["r1", "--help"], None),
        (["--version"], None),
        (["--show-completion", "bash"], None),
        (["r1", "r2"], None),
        (["r1", "--store"], None),
        (["r1", "--verbose"], None),
        (["r1", "--json=1"], None),
        (["r1", "-1"], None),
        (["r1", "--quiet"], None),
        (["r1", "--status"], None),
        (["r1", "--trusted-key", "k.pem"], None),
        (["r1", "--jobs", "2"], None),
        (["r1", "--all"], None),
    ],
)
def test_quick_options(args: list[str], expected: dict[str, object] | None) -> None:
    options = quick_options(args)
    if expected is None:
        assert options is None
    else:
        assert options == VerifyOptions(**expected)  # type: ignore[arg-type]


def _sealed(store: Path, run_id: str = "r1") -> Path:
    with open_run(run_id, store=store) as run:
        run.transcript.write({"role": "user", "content": "hi"})
        run.tool_events.write({"tool": "bash"})
    return store / "audit" / "transcripts" / f"{run_id}.jsonl"


def _tamper(path: Path) -> None:
    path.write_bytes(path.read_bytes().replace(b"hi", b"ho"))


SCENARIOS = [
    "complete",
    "tampered",
    "missing-run",
    "missing-run-store-spelled",
    "bad-run-id",
    "no-store",
    "help",
    "usage",
]


def _args(scenario: str, store: Path) -> list[str]:
    return {
        "complete": ["r1", "--store", str(store)],
        "tampered": ["r1", "--store", str(store)],
        "missing-run": ["nope", "--store", str(store)],
        # The hint names the store as the full command's path option reads it.
        "missing-run-store-spelled": ["nope", "--store", f"{store}/./"],
        "bad-run-id": ["../x", "--store", str(store)],
        "no-store": ["r1", "--store", str(store / "absent")],
        "help": ["--help"],
        "usage": ["r1", "--bogus"],
    }[scenario]


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_quick_entry_matches_the_full_command(
    store: Path, capsys: pytest.CaptureFixture[str], scenario: str, as_json: bool
) -> None:
    path = _sealed(store)
    if scenario == "tampered":
        _tamper(path)
    args = _args(scenario, store) + (["--json"] if as_json else [])
    quick_code = verify_main.main(args)
    quick = capsys.readouterr()
    full_code = full.main(args)
    expected = capsys.readouterr()
    assert (quick_code, quick.out, quick.err) == (full_code, expected.out, expected.err)
    if scenario == "complete":
        assert quick_code == 0
    if scenario == "tampered":
        assert quick_code == 1


def test_quick_entry_loads_neither_typer_nor_rich_nor_the_writer(store: Path) -> None:
    # An unsigned run in a folder store: nothing to check a signature with, no S3.
    _sealed(store)
    heavy = (
        "typer",
        "rich",
        "agc.integrity._writer",
        "orjson",
        "cryptography",
        "rfc8785",
        "boto3",
        "botocore",
        "agc.integrity._signing",
        "argparse",  # the grammar's scan reads RUN_ID --store DIR
        "threading",  # the SIGTERM handler is set without asking which thread runs
        "agc.integrity._chain_objects",  # the chain of an object store
    )
    assert _loaded_after_a_check(store, heavy) == "0 []"


def test_quick_entry_imports_no_heavy_standard_module(store: Path) -> None:
    # Start-up of a 1-record check is mostly imports: these standard modules cost tens of
    # milliseconds together and a folder-store check needs none of them (records are
    # made without dataclasses, which imports inspect, ast, dis and tokenize).
    _sealed(store)
    heavy = ("dataclasses", "inspect", "ast", "dis", "tokenize", "linecache")
    assert _loaded_after_a_check(store, heavy) == "0 []"


def test_quick_entry_compiles_no_annotation(store: Path) -> None:
    # An annotation kept as a string where Python evaluates it (a NamedTuple field, a
    # TypeVar bound, a subscript of a generic) is compiled at each import, and the first
    # compile() of a process builds every AST type. A module's own source (bytes, when
    # it has no byte code yet) is not counted.
    _sealed(store)
    code = (
        "import builtins, sys\n"
        "compiled = []\n"
        "original = builtins.compile\n"
        "def compile(source, *args, **kwargs):\n"
        "    if isinstance(source, str):\n"
        "        compiled.append(source)\n"
        "    return original(source, *args, **kwargs)\n"
        "builtins.compile = compile\n"
        "from agc.cli.verify_main import main\n"
        f"rc = main(['r1', '--store', {str(store)!r}])\n"
        "print(rc, compiled)\n"
    )
    assert run_python(code).stdout.splitlines()[-1] == "0 []"


def test_agc_verify_console_script_uses_the_quick_entry() -> None:
    (script,) = [ep for ep in entry_points(group="console_scripts") if ep.name == "agc-verify"]
    assert script.value == "agc.cli.verify_main:console"


def _console(args: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """``agc-verify ARGS`` through the console entry, in a fresh process (it ends with
    ``os._exit``, which would end pytest too)."""
    code = (
        f"import sys\nsys.argv[1:] = {args!r}\nfrom agc.cli.verify_main import console\nconsole()\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code],
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        **kwargs,
    )


@pytest.mark.parametrize("scenario", ["complete", "tampered", "missing-run", "usage", "all"])
@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_console_entry_prints_and_exits_as_main(
    store: Path, capsys: pytest.CaptureFixture[str], scenario: str, as_json: bool
) -> None:
    # The console entry skips the interpreter's teardown: nothing of the output may be
    # lost with it, and the exit code is main()'s.
    path = _sealed(store)
    _sealed(store, "r2")
    if scenario == "tampered":
        _tamper(path)
    args = ["--all", "--store", str(store)] if scenario == "all" else _args(scenario, store)
    args += ["--json"] if as_json else []
    expected_code = verify_main.main(args)
    expected = capsys.readouterr()
    done = _console(args, capture_output=True)
    assert (done.returncode, done.stdout, done.stderr) == (
        expected_code,
        expected.out,
        expected.err,
    )
    assert (
        done.returncode
        == {
            "complete": 0,
            "tampered": 1,
            "missing-run": 1,
            "usage": 2,
            "all": 1 if scenario == "tampered" else 0,
        }[scenario]
    )


@pytest.mark.parametrize("args", [["r1"], ["r1", "--json"], ["--all"]], ids=["run", "json", "all"])
def test_a_full_disk_on_stdout_is_exit_3_never_a_verdict(store: Path, args: list[str]) -> None:
    # /dev/full refuses every write with ENOSPC: the report cannot be written, which is
    # the machine's failure (exit 3), not "findings" (1) or a traceback.
    _sealed(store)
    with open("/dev/full", "w") as full_disk:
        done = _console([*args, "--store", str(store)], stdout=full_disk, stderr=subprocess.PIPE)
    assert done.returncode == 3
    assert "no space left on device" in done.stderr
    assert "Traceback" not in done.stderr


class _FullStdout:
    """A stdout whose writes fail as on a full disk."""

    def write(self, text: str) -> int:
        raise OSError(28, "No space left on device")

    def flush(self) -> None:
        raise OSError(28, "No space left on device")

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return os.open(os.devnull, os.O_WRONLY)


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_quick_entry_full_stdout_is_exit_3(
    store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], as_json: bool
) -> None:
    _sealed(store)
    monkeypatch.setattr(verify_main, "discard_stdout", lambda: None)
    monkeypatch.setattr(sys, "stdout", _FullStdout())
    code = verify_main.main(["r1", "--store", str(store)] + (["--json"] if as_json else []))
    assert code == 3
    assert capsys.readouterr().err.startswith("error: no space left on device\n")


def test_a_reader_gone_keeps_the_exit_code(store: Path) -> None:
    # The read end is closed before agc-verify starts: every write gets EPIPE. The
    # verdict's exit code stands (0: complete), with no traceback.
    _sealed(store)
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = _console(["r1", "--store", str(store)], stdout=write_end, stderr=subprocess.PIPE)
    finally:
        os.close(write_end)
    assert (done.returncode, done.stderr) == (0, "")


def _redirected(redirect: str, code: str) -> subprocess.CompletedProcess[str]:
    """``python -c CODE`` with a shell redirection (``2>&-`` closes stderr: Python then
    has ``None`` for it)."""
    return subprocess.run(
        ["sh", "-c", f'exec "$0" -c "$1" {redirect}', sys.executable, code],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )


@pytest.mark.parametrize(
    ("redirect", "scenario", "code"),
    [
        ("2>&-", "complete", 0),
        ("2>&-", "tampered", 1),
        ("2>&-", "all", 0),
        (">/dev/full 2>&-", "complete", 3),
        (">/dev/full 2>&-", "all", 3),
        (">&-", "complete", 4),
        (">&-", "all", 4),
    ],
)
def test_a_closed_stderr_or_stdout_gives_the_full_commands_exit_code(
    store: Path, redirect: str, scenario: str, code: int
) -> None:
    # With stderr closed, a complete run exited 1 (a "finding") through the quick path:
    # flushing the missing stream raised, as did the message about a full stdout.
    path = _sealed(store)
    if scenario == "tampered":
        _tamper(path)
    args = ["--all", "--store", str(store)] if scenario == "all" else _args(scenario, store)
    quick = (
        f"import sys\nsys.argv[1:] = {args!r}\nfrom agc.cli.verify_main import console\nconsole()\n"
    )
    reference = f"import sys\nfrom agc.cli.verify import main\nsys.exit(main({args!r}))\n"
    expected = _redirected(redirect, reference)
    done = _redirected(redirect, quick)
    assert (done.returncode, done.stdout) == (expected.returncode, expected.stdout)
    assert done.returncode == code


@pytest.mark.parametrize(
    "args", [["r1"], ["r1", "--quiet"], ["--all"], ["--all", "--quiet"]], ids=str
)
def test_stdout_opened_for_reading_only_is_exit_3_on_every_path(
    store: Path, args: list[str]
) -> None:
    # `agc-verify … 1</dev/null`: every write to stdout fails with EBADF. That is how the
    # command was started, not a bug (exit 4) nor a verdict (1): the quick paths and the
    # full command (--quiet) all answer 3 with the same two lines.
    _sealed(store)
    with open(os.devnull, "rb") as read_only:
        done = _console([*args, "--store", str(store)], stdout=read_only, stderr=subprocess.PIPE)
    assert done.returncode == 3
    assert done.stderr == (
        "error: bad file descriptor\n"
        "hint: free disk space or fix the permissions, then run the command again\n"
    )


def test_a_store_path_that_is_not_utf8_is_printed_as_the_full_command_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A store folder whose name is not UTF-8 reaches Python as a lone surrogate
    # (os.fsdecode): --json keeps it as a \udcff escape (JSON has no other form for it),
    # on the quick path as in the full command, never a raw surrogate that a strict
    # UTF-8 stdout refuses.
    store = tmp_path / os.fsdecode(b"evidence-\xff")
    _sealed(store)
    args = ["r1", "--store", str(store), "--json"]
    quick_code = verify_main.main(args)
    quick = capsys.readouterr()
    full_code = full.main(args)
    expected = capsys.readouterr()
    assert (quick_code, quick.out, quick.err) == (full_code, expected.out, expected.err)
    assert "evidence-\\udcff" in quick.out
    quick.out.encode("utf-8")  # no lone surrogate left in the text


@pytest.mark.parametrize(
    ("args", "code", "names_the_store"),
    [
        (["r1"], 0, False),
        (["r2"], 1, True),
        (["--all"], 0, True),
        (["--all", "--quiet"], 0, False),
        (["r2", "--quiet"], 1, True),
    ],
    ids=str,
)
def test_a_store_path_that_is_not_utf8_reaches_a_strict_stdout_as_its_bytes(
    tmp_path: Path, args: list[str], code: int, names_the_store: bool
) -> None:
    # In a UTF-8 locale other than C.UTF-8, Python's stdout is strict: text naming a
    # store folder that is not UTF-8 (a lone surrogate in Python) raised
    # UnicodeEncodeError: a traceback on the quick path, "internal error" (exit 4) in
    # the full command (--quiet). Both now print the folder's own bytes.
    raw = os.fsencode(tmp_path) + b"/evidence-\xff"
    store = Path(os.fsdecode(raw))
    _sealed(store)
    argv = [*args, "--store", str(store)]
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            f"import sys\nsys.argv[1:] = {argv!r}\n"
            "from agc.cli.verify_main import console\nconsole()\n",
        ],
        capture_output=True,
        check=False,
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join(sys.path),
            "PYTHONIOENCODING": "utf-8:strict",
        },
    )
    assert b"Traceback" not in done.stderr, done.stderr.decode(errors="replace")
    assert done.returncode == code
    assert (raw in done.stdout) == names_the_store


def test_a_stop_while_a_runs_report_is_written_is_reported_as_the_full_command_does(
    store: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The quick path for one run had no SIGTERM handler: the process died of the signal
    # in silence, where the full command says "terminated" and exits 143.
    _sealed(store)

    class Stopping:
        def write(self, text: str) -> int:
            assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL, "SIGTERM kills"
            os.kill(os.getpid(), signal.SIGTERM)
            raise AssertionError("the handler raises first")

        def flush(self) -> None:
            pass

        def isatty(self) -> bool:
            return False

    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "AGC_TRUSTED_KEYS"):
        monkeypatch.delenv(name, raising=False)
    args = ["r1", "--store", str(store)]
    with monkeypatch.context() as patched:
        patched.setattr(sys, "stdout", Stopping())
        full_code = full.main(args)
        expected = capsys.readouterr()
        quick_code = verify_main.main(args)
        quick = capsys.readouterr()
    assert (quick_code, quick.err) == (full_code, expected.err) == (143, "terminated\n")


# Imported before agc-verify starts: a finder that raises SIGTERM (or SIGINT) in the
# first import orjson's initialisation makes, as a stop at that moment would.
_STOP_IN_ORJSONS_INIT = """
import signal, sys

class StopInOrjsonsInit:
    armed = False

    def find_spec(self, name, path=None, target=None):
        if name == "orjson.orjson":
            StopInOrjsonsInit.armed = True
        elif StopInOrjsonsInit.armed:
            StopInOrjsonsInit.armed = False
            signal.raise_signal(signal.{signal})
        return None

sys.meta_path.insert(0, StopInOrjsonsInit())
sys.argv[1:] = {args!r}
from agc.cli.verify_main import console
console()
"""


@pytest.mark.parametrize(
    ("stop", "code", "word"), [("SIGTERM", 143, "terminated"), ("SIGINT", 130, "interrupted")]
)
def test_a_stop_while_orjson_is_first_imported_is_reported_never_a_crash(
    store: Path, stop: str, code: int, word: str
) -> None:
    # orjson's initialisation assumes its imports of the standard library succeed: a
    # KeyboardInterrupt raised in one of them (a stop as --json reaches its first JSON
    # text) crashed the interpreter, SIGSEGV, no word. The stop is now reported.
    _sealed(store)
    args = ["r1", "--store", str(store), "--json"]
    done = subprocess.run(
        [sys.executable, "-c", _STOP_IN_ORJSONS_INIT.format(signal=stop, args=args)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert (done.returncode, done.stderr) == (code, word + "\n")


_CTRL_C_IN_IMPORT = """
import sys

class CtrlCIn:
    def find_spec(self, name, path=None, target=None):
        if name == {module!r}:
            raise KeyboardInterrupt
        return None

sys.meta_path.insert(0, CtrlCIn())
sys.argv[1:] = {args!r}
from agc.cli.verify_main import console
console()
"""


@pytest.mark.parametrize(
    ("module", "args"),
    [
        ("agc.integrity._store_verify", ["--all"]),  # the store checker, loaded for --all
        ("agc.cli.verify", ["r1", "--verbose"]),  # the full command, for any other shape
    ],
    ids=["all", "full"],
)
def test_ctrl_c_while_a_later_part_is_loaded_is_interrupted_never_a_traceback(
    store: Path, module: str, args: list[str]
) -> None:
    # Ctrl-C arrives while agc-verify loads what the invocation needs after start-up
    # (tens of milliseconds for typer and rich): the KeyboardInterrupt escaped main(), a
    # traceback. It is "interrupted", exit 130, as anywhere else in the command.
    _sealed(store)
    argv = [*args, "--store", str(store)]
    done = subprocess.run(
        [sys.executable, "-c", _CTRL_C_IN_IMPORT.format(module=module, args=argv)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert (done.returncode, done.stderr) == (130, "interrupted\n")


def _swallowing_a_sigterm(check: Any) -> Any:
    """``check`` after a SIGTERM whose exception is swallowed on the way, as a library's
    at-fork hook or ``__del__`` swallows it ("Exception ignored in …"): seen with
    --all --jobs 2, whose worker processes are forked."""

    def swallowing(*args: Any, **kwargs: Any) -> Any:
        try:  # noqa: SIM105 - the handler raises in this very block, not in an __exit__
            os.kill(os.getpid(), signal.SIGTERM)  # the handler raises right here
        except KeyboardInterrupt:
            pass
        return check(*args, **kwargs)

    return swallowing


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
@pytest.mark.parametrize("scope", ["run", "all"])
def test_a_sigterm_whose_exception_is_swallowed_still_stops_the_check(
    store: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    scope: str,
    as_json: bool,
) -> None:
    # The stop was lost: the check went on and exited 0 with its report, as if no one
    # had asked it to stop. It is "terminated", exit 143, with no report.
    import agc.integrity  # noqa: PLC0415 - agc-verify --all looks check_store up there

    _sealed(store)
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "AGC_TRUSTED_KEYS"):
        monkeypatch.delenv(name, raising=False)
    if scope == "run":
        from agc.integrity import check_run  # noqa: PLC0415

        monkeypatch.setattr(verify_main, "check_run", _swallowing_a_sigterm(check_run))
        args = ["r1"]
    else:
        monkeypatch.setattr(
            agc.integrity, "check_store", _swallowing_a_sigterm(agc.integrity.check_store)
        )
        args = ["--all"]
    code = verify_main.main([*args, "--store", str(store)] + (["--json"] if as_json else []))
    out, err = capsys.readouterr()
    assert (code, out, err) == (143, "", "terminated\n")
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    # The next check in the same process is not taken for stopped.
    monkeypatch.undo()
    assert verify_main.main([*args, "--store", str(store)]) == 0


class _StopInDel:
    """Sends its signal as it is collected: Python cannot raise the handler's exception
    out of ``__del__`` and prints "Exception ignored in …" with a traceback instead, as
    for logging's at-fork hook when a stop lands while --all -j 2 forks a worker."""

    def __init__(self, signum: int) -> None:
        self.signum = signum

    def __del__(self) -> None:
        os.kill(os.getpid(), self.signum)


@pytest.mark.parametrize(
    ("signum", "code", "word"),
    [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")],
    ids=["ctrl-c", "sigterm"],
)
@pytest.mark.parametrize("scope", ["run", "all"])
def test_a_stop_python_cannot_raise_still_stops_the_check_with_one_word(
    store: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    scope: str,
    signum: int,
    code: int,
    word: str,
) -> None:
    # The stop was printed as "Exception ignored in …" with a traceback and lost: the
    # check went on and exited 0 with its report.
    import agc.integrity  # noqa: PLC0415 - agc-verify --all looks check_store up there
    from agc.integrity import check_run  # noqa: PLC0415

    _sealed(store)
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "AGC_TRUSTED_KEYS"):
        monkeypatch.delenv(name, raising=False)
    module, name, check = (
        (verify_main, "check_run", check_run)
        if scope == "run"
        else (agc.integrity, "check_store", agc.integrity.check_store)
    )

    def stopped_in_a_del(*args: Any, **kwargs: Any) -> Any:
        _StopInDel(signum)  # collected at once
        return check(*args, **kwargs)

    monkeypatch.setattr(module, name, stopped_in_a_del)
    args = ["r1"] if scope == "run" else ["--all"]
    exit_code = verify_main.main([*args, "--store", str(store), "--json"])
    out, err = capsys.readouterr()
    assert (exit_code, out, err) == (code, "", word + "\n")


def test_a_full_stderr_never_prints_the_report_twice(store: Path) -> None:
    # The hint after a missing run's report goes to stderr; when that write failed
    # (2>/dev/full) the quick path handed over to the full command, which printed the
    # whole report a second time on stdout.
    _sealed(store)
    args = ["nosuch", "--store", str(store)]
    with open("/dev/full", "w") as full_disk:
        done = _console(args, stdout=subprocess.PIPE, stderr=full_disk)
    reference = f"import sys\nfrom agc.cli.verify import main\nsys.exit(main({args!r}))\n"
    with open("/dev/full", "w") as full_disk:
        expected = subprocess.run(
            [sys.executable, "-c", reference],
            stdout=subprocess.PIPE,
            stderr=full_disk,
            text=True,
            check=False,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        )
    assert (done.returncode, done.stdout) == (expected.returncode, expected.stdout)
    assert done.returncode == 1
    assert done.stdout.count("run nosuch: run-missing") == 1


def test_sigterm_handler_is_set_only_on_the_main_thread() -> None:
    # Signals are delivered to the main thread only: elsewhere the block runs with the
    # handler untouched (and no ValueError from signal.signal escapes).
    def handler(signum: int, frame: object) -> None:
        raise AssertionError

    seen: list[object] = []

    def in_thread() -> None:
        with sigterm_raises(handler):
            seen.append(signal.getsignal(signal.SIGTERM))

    worker = threading.Thread(target=in_thread)
    worker.start()
    worker.join()
    assert seen == [signal.SIG_DFL]
    with sigterm_raises(handler):
        assert signal.getsignal(signal.SIGTERM) is handler
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def _loaded_after_a_check(store: Path, modules: tuple[str, ...]) -> str:
    """``"<exit code> [<those of modules loaded>]"`` after ``agc-verify r1`` of ``store``
    run in a fresh interpreter."""
    code = (
        "import sys\n"
        "from agc.cli.verify_main import main\n"
        f"rc = main(['r1', '--store', {str(store)!r}])\n"
        f"loaded = [m for m in {modules!r} if m in sys.modules]\n"
        "print(rc, loaded)\n"
    )
    return str(run_python(code).stdout.splitlines()[-1])
