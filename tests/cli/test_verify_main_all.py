"""``agc-verify --all``'s quick path: the same stdout, stderr and exit code as the full
(typer) command for every argument list, store and failure; typer and rich not loaded."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

import agc.integrity
from agc.cli import verify as full
from agc.cli import verify_main
from agc.cli._process import Terminated
from agc.cli.verify_args import VerifyOptions
from agc.cli.verify_main import quick_options
from tests.integrity.evidence_helpers import write_run


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--all"], {}),
        (["--all", "--json"], {"as_json": True}),
        (["--json", "--all", "--store", "/s"], {"store": Path("/s"), "as_json": True}),
        (["--all", "--store=/s", "--jobs", "2"], {"store": Path("/s"), "jobs": 2}),
        (["--all", "-j", "3"], {"jobs": 3}),
        (["--all", "-j3"], {"jobs": 3}),
        (["--jobs=12", "--all"], {"jobs": 12}),
        (["--all", "--jobs", "01"], {"jobs": 1}),
        (["--all", "--jobs", "1", "-j", "2"], {"jobs": 2}),
        (["--all", "--all"], {}),
        (["--all", "--"], {}),
        (["--all", "--store", "a", "--store", "b"], {"store": Path("b")}),
        ([], None),
        (["--json"], None),
        (["--all", "--help"], None),
        (["--all", "-h"], None),
        (["--all", "r1"], None),
        (["--all", "--store"], None),
        (["--all", "--jobs"], None),
        (["--all", "--jobs", "0"], None),
        (["--all", "--jobs", "two"], None),
        (["--all", "-j=2"], None),
        (["--all", "--quiet"], None),
        (["--all", "--status"], None),
        (["--all", "--expect-head", "0" * 64], None),
        (["--all", "--trusted-key", "k.pem"], None),
        (["--all", "--scheduler", "tcp://h:1"], None),
        (["--all=1"], None),
    ],
)
def test_quick_options_for_all(args: list[str], expected: dict[str, object] | None) -> None:
    options = quick_options(args)
    if expected is None:
        assert options is None
    else:
        assert options == VerifyOptions(all_runs=True, **expected)  # type: ignore[arg-type]


def _complete(store: Path) -> None:
    for index, run_id in enumerate(("a", "b", "c")):
        write_run(store, run_id, seed=index, count=3)


def _tampered(store: Path) -> None:
    _complete(store)
    path = store / "audit/transcripts/b.jsonl"
    data = path.read_bytes()
    path.write_bytes(data[:5] + bytes([data[5] ^ 1]) + data[6:])
    (store / "audit/manifests/c.json").unlink()
    (store / "audit/transcripts/x\nstore: complete").write_text("stray")
    (store / "audit/tool-events/a.jsonl").write_bytes(b'{"seq": "\xe9\xff"}\n')


def _empty(store: Path) -> None:
    pass


STORES: dict[str, Callable[[Path], None]] = {
    "complete": _complete,
    "tampered": _tampered,
    "empty": _empty,
}


def _arg_lists(store: Path) -> dict[str, list[str]]:
    s = str(store)
    return {
        "plain": ["--all", "--store", s],
        "json": ["--all", "--store", s, "--json"],
        "json-first": ["--json", "--all", f"--store={s}"],
        "jobs-2": ["--all", "--store", s, "--jobs", "2"],
        "jobs-1-json": ["--all", "--store", s, "-j", "1", "--json"],
        "jobs-equals": ["--all", "--store", s, "--jobs=1"],
        "jobs-too-many": ["--all", "--store", s, "--jobs", "300"],
        "jobs-zero": ["--all", "--store", s, "--jobs", "0"],
        "no-store-folder": ["--all", "--store", str(store / "absent")],
        "no-store-folder-json": ["--all", "--store", str(store / "absent"), "--json"],
        "store-is-a-file": ["--all", "--store", str(store / "audit/chain.jsonl")],
        "quiet": ["--all", "--store", s, "--quiet"],
        "with-run-id": ["--all", "--store", s, "a"],
        "help": ["--all", "--help"],
        "twice": ["--all", "--all", "--store", s],
    }


_QUICK = {"plain", "json", "json-first", "jobs-2", "jobs-1-json", "jobs-equals", "twice"}


@pytest.fixture
def plain_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "AGC_TRUSTED_KEYS", "NO_COLOR"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("kind", list(STORES))
@pytest.mark.parametrize("case", list(_arg_lists(Path("/x"))))
def test_quick_all_matches_the_full_command(
    store: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    plain_env: None,
    kind: str,
    case: str,
) -> None:
    STORES[kind](store)
    args = _arg_lists(store)[case]
    handed_over: list[list[str]] = []
    real_full = verify_main._full

    def spy(given: list[str]) -> int:
        handed_over.append(given)
        return real_full(given)

    monkeypatch.setattr(verify_main, "_full", spy)
    quick_code = verify_main.main(args)
    quick = capsys.readouterr()
    full_code = full.main(args)
    expected = capsys.readouterr()
    assert (quick_code, quick.out, quick.err) == (full_code, expected.out, expected.err)
    if case in _QUICK and kind != "empty":
        assert handed_over == [], "the quick path was not taken"
        assert quick_code == (0 if kind == "complete" else 1)
    if case not in _QUICK:
        assert handed_over == [args]


@pytest.mark.parametrize("stop", [KeyboardInterrupt, Terminated])
@pytest.mark.parametrize("as_json", [False, True])
def test_a_stop_during_the_check_is_reported_as_the_full_command_does(
    store: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    plain_env: None,
    stop: type[KeyboardInterrupt],
    as_json: bool,
) -> None:
    _complete(store)

    def stopped(*args: object, **kwargs: object) -> None:
        if stop is Terminated:
            os.kill(os.getpid(), 15)  # the handler each path installs raises
        raise KeyboardInterrupt

    monkeypatch.setattr(agc.integrity, "check_store", stopped)  # where --all finds it
    monkeypatch.setattr(full, "check_store", stopped)
    args = ["--all", "--store", str(store)] + (["--json"] if as_json else [])
    quick_code = verify_main.main(args)
    quick = capsys.readouterr()
    full_code = full.main(args)
    expected = capsys.readouterr()
    assert (quick_code, quick.out, quick.err) == (full_code, expected.out, expected.err)
    assert quick_code == (143 if stop is Terminated else 130)


class _StoppedStdout:
    """A stdout on which the stop (Ctrl-C, or SIGTERM through the handler each path
    installs) comes while the report is written."""

    def __init__(self, terminate: bool) -> None:
        self.terminate = terminate

    def write(self, text: str) -> int:
        if self.terminate:
            # Without a handler the signal would end pytest itself.
            assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL, "SIGTERM kills"
            os.kill(os.getpid(), signal.SIGTERM)
        raise KeyboardInterrupt

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False


@pytest.mark.parametrize("stop", [KeyboardInterrupt, Terminated])
@pytest.mark.parametrize("as_json", [False, True])
def test_a_stop_while_the_report_is_written_is_reported_as_the_full_command_does(
    store: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    plain_env: None,
    stop: type[KeyboardInterrupt],
    as_json: bool,
) -> None:
    # The quick path wrote outside its stop handling: a traceback and death by the
    # signal, where the full command says "interrupted"/"terminated" (exit 130/143).
    _complete(store)
    args = ["--all", "--store", str(store)] + (["--json"] if as_json else [])
    stdout = _StoppedStdout(stop is Terminated)
    with monkeypatch.context() as patched:
        patched.setattr(sys, "stdout", stdout)
        full_code = full.main(args)
        expected = capsys.readouterr()
        try:
            quick_code = verify_main.main(args)
        except KeyboardInterrupt:
            pytest.fail("the stop escaped the quick path")
        quick = capsys.readouterr()
    assert (quick_code, quick.err) == (full_code, expected.err)
    assert quick_code == (143 if stop is Terminated else 130)


@pytest.mark.parametrize("variable", ["FORCE_COLOR", "TTY_COMPATIBLE", "AGC_TRUSTED_KEYS"])
def test_an_environment_that_changes_the_full_command_hands_over(
    store: Path,
    monkeypatch: pytest.MonkeyPatch,
    plain_env: None,
    variable: str,
) -> None:
    _complete(store)
    monkeypatch.setenv(variable, str(store / "keys") if variable == "AGC_TRUSTED_KEYS" else "1")
    (store / "keys").mkdir()
    handed_over: list[list[str]] = []

    def spy(given: list[str]) -> int:
        handed_over.append(given)
        return 0

    monkeypatch.setattr(verify_main, "_full", spy)
    verify_main.main(["--all", "--store", str(store)])
    assert handed_over == [["--all", "--store", str(store)]]


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_quick_all_in_a_fresh_process_loads_neither_typer_nor_rich(
    store: Path, as_json: bool
) -> None:
    _tampered(store)
    args = ["--all", "--store", str(store)] + (["--json"] if as_json else [])
    code = (
        "import sys\n"
        "from agc.cli.verify_main import main\n"
        f"rc = main({args!r})\n"
        "heavy = [m for m in ('typer', 'rich', 'click', 'cryptography') if m in sys.modules]\n"
        "sys.stderr.write(f'{rc} {heavy}')\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "AGC_TRUSTED_KEYS"):
        env.pop(name, None)
    quick = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    assert quick.stderr == "1 []"
    reference = subprocess.run(
        [sys.executable, "-c", f"import sys; from agc.cli.verify import main; main({args!r})"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    assert quick.stdout == reference.stdout
    assert reference.stdout
