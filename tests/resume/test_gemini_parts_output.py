"""A Gemini CLI session repaired in parts: each part's output is checked as it is
written (replayed as the client reads it, from what the read noted of each line written
as it was read), never read back from disk, and a repair whose output would break a rule
is refused, its output never left in place."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import agc.resume
import agc.resume._formats.gemini_chat as gemini_chat
from agc.cli.app import main
from agc.errors import AgcError, RepairIncompleteError
from agc.resume import (
    SETTLE_MESSAGES,
    Strategy,
    check_loaded,
    load_history,
    repair_loaded,
    repair_session,
    scan_session,
)
from tests.conftest import THOROUGH, examples
from tests.resume.formats.test_gemini_parts_attack import _plan_records, _planned, _session

REACHES_INSIDE = {
    "agc.resume._formats.gemini_chat": "breaks its writer, to show its output is refused",
}

WriteLines = Callable[[Any, Any], Iterator[str | int | range]]


def _repair(source: Path, strategy: Strategy, settle: int) -> tuple[Any, Any, int]:
    """``(output bytes, report, read-backs)`` of a repair in parts, or the error code."""
    out = source.with_name("parts.jsonl")
    calls = [0]

    def read_back() -> Any:
        calls[0] += 1
        return scan_session(out, source="out", format="gemini-chat", settle=settle, checked=True)

    with out.open("w+b") as sink:
        _, report = repair_session(
            source, sink, read_back, source="session.jsonl", strategy=strategy, settle=settle
        )
    return out.read_bytes(), report, calls[0]


@settings(
    max_examples=examples(200, least=30),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=_planned(), settle=st.integers(1, 3), strategy=st.sampled_from(["strip", "synthesize"]))
def test_the_output_checked_as_written_is_the_output_read_from_disk(
    data: bytes, settle: int, strategy: Strategy, tmp_path: Path
) -> None:
    source = tmp_path / "session.jsonl"
    source.write_bytes(data)
    try:
        if load_history(data, source="s").format != "gemini-chat":
            return
        written, report, read_backs = _repair(source, strategy, settle)
    except AgcError:
        return
    if report is None:  # not read in parts (too short, or a record reaches back)
        return
    assert read_backs <= 1  # only when the parts' views are not the output's
    on_disk = check_loaded(load_history(written, source="out", format="gemini-chat"))
    assert report.after.to_dict() == on_disk.to_dict()


def _long_session(parts: int) -> bytes:
    """A session of ``parts`` answered turns (each result recorded twice, as Gemini CLI
    0.61 does), read in parts of one turn or so."""
    records = _plan_records(["answered"] * parts)
    return _session(records, [False] * len(records), "newline")


def _unchanged(real: WriteLines) -> WriteLines:
    """Every part written as it was read (its duplicate results kept)."""
    return lambda history, messages: iter(range(history.first_line, len(history.lines or ())))


def _unchanged_after_first(real: WriteLines) -> WriteLines:
    """The first part repaired, every later one (the last among them) written as read."""
    calls = [0]

    def write(history: Any, messages: Any) -> Iterator[str | int | range]:
        calls[0] += 1
        return (real if calls[0] == 1 else _unchanged(real))(history, messages)

    return write


def _stray_result(real: WriteLines) -> WriteLines:
    """Each part repaired, then a user record answering a call that is nowhere."""

    def write(history: Any, messages: Any) -> Iterator[str | int | range]:
        yield from real(history, messages)
        response = {"functionResponse": {"id": "nowhere", "name": "t", "response": {}}}
        stray = {"id": f"stray-{history.first_line}", "type": "user", "content": [response]}
        yield json.dumps(stray)

    return write


_BREAKS: dict[str, Callable[[WriteLines], WriteLines]] = {
    "unchanged": _unchanged,
    "unchanged-after-first": _unchanged_after_first,
    "stray-result": _stray_result,
}


def _break(monkeypatch: pytest.MonkeyPatch, break_: str) -> None:
    spec = gemini_chat.SPEC
    assert spec.write_lines is not None
    broken = replace(spec, write_lines=_BREAKS[break_](spec.write_lines))
    monkeypatch.setattr(gemini_chat, "SPEC", broken)


@pytest.mark.parametrize("break_", sorted(_BREAKS))
@pytest.mark.parametrize("strategy", ["strip", "synthesize"])
def test_a_repair_in_parts_whose_output_breaks_a_rule_is_refused(
    break_: str, strategy: Strategy, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "session.jsonl"
    source.write_bytes(_long_session(12))
    _break(monkeypatch, break_)
    with pytest.raises(RepairIncompleteError):
        _repair(source, strategy, 2)


# What agc resume reads in parts: by default its parts settle every 64 messages instead
# of SETTLE_MESSAGES (4,096), and a session of 150 turns (301 messages: several parts, past the
# 64 head lines a read keeps) stands for one of 3,000 turns (6,001 messages: 2 parts);
# the thorough profile keeps both. The command reads agc.resume.SETTLE_MESSAGES when it
# runs, for the check, the repair and the read-back alike.
CLI_PARTS = (SETTLE_MESSAGES, 3000) if THOROUGH else (64, 150)


def _cli_long_session(monkeypatch: pytest.MonkeyPatch) -> bytes:
    """A session ``agc resume`` reads in parts (CLI_PARTS)."""
    settle, turns = CLI_PARTS
    monkeypatch.setattr(agc.resume, "SETTLE_MESSAGES", settle)
    return _long_session(turns)


@pytest.mark.parametrize("mode", ["--out", "--in-place"])
def test_a_refused_repair_in_parts_leaves_no_output(
    mode: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    source = tmp_path / "session.jsonl"
    data = _cli_long_session(monkeypatch)  # read in parts by agc resume
    source.write_bytes(data)
    _break(monkeypatch, "unchanged-after-first")
    out = tmp_path / "fixed.jsonl"
    argv = ["resume", str(source), "--strategy", "strip", "--json"]
    argv += ["--out", str(out)] if mode == "--out" else ["--in-place"]
    code = main(argv)
    assert code == RepairIncompleteError.exit_code
    assert json.loads(capsys.readouterr().out)["error"]["code"] == "repair-incomplete"
    assert source.read_bytes() == data  # in place: never replaced
    assert sorted(path.name for path in tmp_path.iterdir()) == ["session.jsonl"]


def test_the_parts_of_a_long_session_are_repaired_as_the_whole(tmp_path: Path) -> None:
    source = tmp_path / "session.jsonl"
    data = _long_session(40)
    source.write_bytes(data)
    written, report, read_backs = _repair(source, "synthesize", 2)
    assert report is not None
    assert report.after.valid
    assert read_backs == 0
    whole = repair_loaded(load_history(data, source="session.jsonl"), strategy="synthesize")
    assert written == whole.data
    assert report.to_dict() == whole.report.to_dict()


def test_a_recorded_run_is_checked_and_repaired_in_parts_as_its_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    """``agc resume RUN`` of a run that holds a Gemini CLI session reads it as
    ``agc resume FILE`` reads the file: checked in parts, repaired as it is read, with
    the same report and the same records."""
    import agc.resume as front  # noqa: PLC0415 - spied on

    source = tmp_path / "session.jsonl"
    source.write_bytes(_cli_long_session(monkeypatch))
    store = tmp_path / "store"
    assert main(["import", str(source), "--run-id", "gem", "--store", str(store)]) == 0
    checked: list[bool] = []
    parted: list[bool] = []
    scan, repair = front.scan_session, front.repair_session

    def scan_spy(*args: Any, **kwargs: Any) -> Any:
        checked.append(kwargs.get("checked", False))
        return scan(*args, **kwargs)

    def repair_spy(*args: Any, **kwargs: Any) -> Any:
        history, report = repair(*args, **kwargs)
        parted.append(report is not None)
        return history, report

    monkeypatch.setattr(front, "scan_session", scan_spy)
    monkeypatch.setattr(front, "repair_session", repair_spy)

    def run(target: str, *options: str) -> dict[str, Any]:
        capsys.readouterr()
        main(["resume", target, "--store", str(store), "--json", *options])
        document: dict[str, Any] = json.loads(capsys.readouterr().out)
        document.pop("source", None)
        return document

    assert run("gem", "--check") == run(str(source), "--check")
    assert checked == [True, True]
    from_run, from_file = tmp_path / "run.jsonl", tmp_path / "file.jsonl"
    run_report = run("gem", "--strategy", "synthesize", "--out", str(from_run))
    file_report = run(str(source), "--strategy", "synthesize", "--out", str(from_file))
    assert parted == [True, True]
    # a run keeps its records, written compact: the same records
    records = [json.loads(line) for line in from_run.read_bytes().splitlines()]
    assert records == [json.loads(line) for line in from_file.read_bytes().splitlines()]
    assert run_report["report"] == file_report["report"]
