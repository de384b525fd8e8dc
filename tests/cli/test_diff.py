"""``agc diff RUN FILE``: the first line where a run's records and a file differ."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agc.cli.app import main as agc_main
from agc.integrity import diff_run, ingest_stream
from tests.conftest import examples

LINES = [b'{"type":"a","n":%d}' % n for n in range(30)]


def _store(tmp_path: Path, lines: list[bytes] = LINES) -> Path:
    store = tmp_path / "store"
    session = tmp_path / "session.jsonl"
    session.write_bytes(b"".join(line + b"\n" for line in lines))
    with session.open("rb") as handle:
        ingest_stream(handle, "r1", store=store)
    return store


def test_equal_exits_0_and_a_changed_line_exits_1_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = _store(tmp_path)
    session = tmp_path / "session.jsonl"
    assert agc_main(["diff", "r1", str(session), "--store", str(store)]) == 0
    assert "are equal (30 lines)" in capsys.readouterr().out
    changed = tmp_path / "changed.jsonl"
    lines = list(LINES)
    lines[17] = b'{"type":"a","n":999}'
    changed.write_bytes(b"".join(line + b"\n" for line in lines))
    assert agc_main(["diff", "r1", str(changed), "--store", str(store)]) == 1
    out = capsys.readouterr().out
    assert "differ first at line 18" in out
    assert 'run  line 18: {"type":"a","n":17}' in out
    assert 'file line 18: {"type":"a","n":999}' in out
    assert agc_main(["diff", "r1", str(changed), "--store", str(store), "--json"]) == 1
    result = json.loads(capsys.readouterr().out)
    assert result["equal"] is False
    assert result["line"] == 18
    assert result["run"] == {"line": 18, "text": '{"type":"a","n":17}'}
    assert result["file"] == {"line": 18, "text": '{"type":"a","n":999}'}


def test_a_file_that_ends_early_or_goes_on_differs_where_one_side_ends(tmp_path: Path) -> None:
    store = _store(tmp_path)
    short = tmp_path / "short.jsonl"
    short.write_bytes(b"".join(line + b"\n" for line in LINES[:29]))
    result = diff_run("r1", short, store)
    assert (result.run.line, result.file_side.text) == (30, None)  # type: ignore[union-attr]
    longer = tmp_path / "longer.jsonl"
    longer.write_bytes(b"".join(line + b"\n" for line in [*LINES, b"{}"]))
    result = diff_run("r1", longer, store)
    assert (result.run.text, result.file_side.line) == (None, 31)  # type: ignore[union-attr]
    assert (result.run_lines, result.file_lines) == (30, 31)


def test_the_same_json_value_written_otherwise_is_equal(tmp_path: Path) -> None:
    store = _store(tmp_path)
    spaced = tmp_path / "spaced.jsonl"
    spaced.write_bytes(
        b"".join(json.dumps(json.loads(line), indent=None).encode() + b"\n" for line in LINES)
    )
    assert diff_run("r1", spaced, store).equal


@settings(max_examples=examples(25), deadline=None)
@given(index=st.integers(min_value=0, max_value=len(LINES) - 1), value=st.integers(1000, 10**6))
def test_any_changed_line_is_the_first_difference(
    tmp_path_factory: pytest.TempPathFactory, index: int, value: int
) -> None:
    """Property: change any one line of the file: that line is reported, on both sides."""
    tmp_path = tmp_path_factory.mktemp("diff")
    store = _store(tmp_path)
    lines = list(LINES)
    lines[index] = b'{"type":"a","n":%d}' % value
    changed = tmp_path / "changed.jsonl"
    changed.write_bytes(b"".join(line + b"\n" for line in lines))
    result = diff_run("r1", changed, store)
    assert not result.equal
    assert result.run is not None
    assert result.file_side is not None
    assert result.run.line == result.file_side.line == index + 1
    assert result.file_side.text == lines[index]


def test_a_missing_file_or_run_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = _store(tmp_path)
    assert agc_main(["diff", "r1", str(tmp_path / "nope.jsonl"), "--store", str(store)]) == 2
    assert "does not exist" in capsys.readouterr().err
    session = tmp_path / "session.jsonl"
    assert agc_main(["diff", "r9", str(session), "--store", str(store)]) == 2
    assert "r9" in capsys.readouterr().err


@pytest.mark.parametrize("what", ["folder", "fifo"])
def test_a_folder_or_fifo_as_the_file_is_a_usage_error_not_a_crash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], what: str
) -> None:
    """Not a regular file: exit 2 naming it (a folder used to end in exit 4)."""
    store = _store(tmp_path)
    target = tmp_path / what
    if what == "folder":
        target.mkdir()
    else:
        os.mkfifo(target)
    assert agc_main(["diff", "r1", str(target), "--store", str(store)]) == 2
    assert f"{target} is not a regular file" in capsys.readouterr().err


def test_control_characters_of_a_differing_line_are_shown_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file line holding a terminal escape sequence (a title change, a screen clear)
    or NUL bytes is printed with them escaped, never written raw to the terminal."""
    store = _store(tmp_path)
    odd = tmp_path / "odd.jsonl"
    odd.write_bytes(b"\x1b]0;pwned\x07\x1b[2J\x00{}\n")
    assert agc_main(["diff", "r1", str(odd), "--store", str(store)]) == 1
    out = capsys.readouterr().out
    for raw in ("\x1b", "\x07", "\x00"):
        assert raw not in out
    assert "\\x1b]0;pwned\\x07\\x1b[2J\\x00{}" in out
