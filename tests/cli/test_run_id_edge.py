"""A run id given on the command line is checked once, where it enters: the command
makes a ``RunId`` of the text, and the functions it calls (the features' front doors and
what they call) take it without checking it again. A bad run id is refused as before.

(A run id read from the store, in a manifest or a chain link, is other input: it is
checked where it is read.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agc._core import store as store_module
from agc.cli.app import main
from agc.exitcodes import ExitCode
from agc.flows import RunId
from tests.conftest import feed_stdin

_LINES = [
    {"type": "session_meta", "payload": {"id": "s1"}},
    {"type": "response_item", "payload": {"type": "message", "role": "user", "content": "hi"}},
]


@pytest.fixture
def imported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A store holding run ``r1``, imported from a session file (``tmp_path/in.jsonl``)."""
    store = tmp_path / "store"
    source = tmp_path / "in.jsonl"
    source.write_bytes(b"".join(json.dumps(line).encode() + b"\n" for line in _LINES))
    feed_stdin(monkeypatch, b"")
    assert main(["import", str(source), "--run-id", "r1", "--store", str(store)]) == 0
    return store


# The text of the run id on the command line: a string object of its own (not the
# interned literal), so that the checks of exactly this text can be told from those of
# an equal run id read from the store.
_GIVEN = "".join(["r", "1"])


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Each check of the given run id text against the syntax (``RunId(text)`` and
    ``validate_run_id(text)`` both check through the one rule)."""
    seen: list[object] = []
    rule = store_module._check_run_id

    def counted(run_id: object) -> None:
        if run_id is _GIVEN:
            seen.append(run_id)
        rule(run_id)

    monkeypatch.setattr(store_module, "_check_run_id", counted)
    return seen


_COMMANDS = ["export", "show", "diff", "check-evidence", "resume", "recover"]


def _commands(store: Path, tmp_path: Path, run_id: str = _GIVEN) -> dict[str, list[str]]:
    where = ["--store", str(store)]
    return {
        "export": ["export", run_id, *where, "--out", str(tmp_path / "out.jsonl")],
        "show": ["show", run_id, *where],
        "diff": ["diff", run_id, str(tmp_path / "in.jsonl"), *where],
        "check-evidence": ["readiness", "check-evidence", run_id, *where, "--environment", "dev"],
        "resume": ["resume", run_id, *where, "--check"],
        "recover": ["recover", run_id, *where],
    }


@pytest.mark.parametrize("command", _COMMANDS)
def test_a_run_id_on_the_command_line_is_checked_once(
    command: str,
    imported: Path,
    tmp_path: Path,
    checks: list[object],
    capsys: pytest.CaptureFixture[str],
) -> None:
    capsys.readouterr()
    code = main(_commands(imported, tmp_path)[command])
    capsys.readouterr()
    assert code in (ExitCode.OK, ExitCode.FINDINGS)
    assert checks == ["r1"]


@pytest.mark.parametrize("command", _COMMANDS)
def test_a_bad_run_id_is_still_refused_with_exit_2(
    command: str, imported: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = _commands(imported, tmp_path, "r 1")[command]
    capsys.readouterr()
    assert main(argv) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert "run id 'r 1' contains the character ' '" in err


def test_a_run_id_is_made_once_and_kept() -> None:
    run_id = RunId("r1")
    assert RunId(run_id) is run_id
    assert run_id == "r1"
    assert str(run_id) == "r1"
    assert type(str(run_id)) is str
