"""``agc resume`` on a session file with many lines that are not JSON objects: the text
output counts them all and describes the first ``--max-findings``; ``--json`` lists
every one, in order, with the line numbers spilled (the bound made small here); what
is held while they are reported does not grow with their count."""

from __future__ import annotations

import json
import sys
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

import agc._core.spill as spill
import agc.resume._formats.model as model
from agc.cli.app import main

REACHES_INSIDE = {
    "agc.resume._formats.model": "the bound of SpilledLines (SPILL_AT) made small, so the "
    "numbers of the unread lines are spilled to a temporary file",
}

_SAID = "agc reads no message from it and copies it as it is"


def _rollout(path: Path, bad: int) -> Path:
    """A Codex rollout: a user message, ``bad`` lines ``x`` (not JSON) with a JSON array
    and a JSON number among the first ones, then a call left unanswered."""

    def item(payload: dict[str, Any]) -> str:
        return json.dumps({"timestamp": "t", "type": "response_item", "payload": payload}) + "\n"

    with path.open("w", encoding="utf-8") as out:
        out.write(json.dumps({"timestamp": "t", "type": "session_meta", "payload": {"id": "s"}}))
        out.write("\n")
        out.write(
            item(
                {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": "go"}],
                }
            )
        )
        out.write("[1]\n7\n")
        out.write("x\n" * (bad - 2))
        call = {"type": "function_call", "name": "shell", "arguments": "{}", "call_id": "c1"}
        out.write(item(call))
    return path


def _sentences(bad: int) -> list[str]:
    """What is said of each of the ``bad`` lines of :func:`_rollout`, in order."""
    said = [
        f"line 3 is JSON but not an object (an array): {_SAID}",
        f"line 4 is JSON but not an object (a number): {_SAID}",
    ]
    said += [f"line {number} is not JSON: {_SAID}" for number in range(5, bad + 3)]
    return said


def _run(argv: list[str], capsys: Any) -> tuple[int, str, str]:
    code = main(argv)
    said = capsys.readouterr()
    return code, said.out, said.err


def test_text_counts_every_unread_line_and_describes_the_first_n(
    tmp_path: Path, capsys: Any
) -> None:
    path = _rollout(tmp_path / "r.jsonl", 500)
    code, _, err = _run(["resume", str(path), "--check", "--max-findings", "3"], capsys)
    assert code == 1  # the unanswered call
    lines = err.splitlines()
    start = lines.index(
        "warning: 500 lines of the session file not a JSON object; no message is read "
        "from them, and a repair copies them as they are:"
    )
    assert lines[start + 1 : start + 5] == [
        *(f"  {text}" for text in _sentences(500)[:3]),
        "  … and 497 more (--json lists them all)",
    ]


@pytest.mark.parametrize("command", [["--check"], ["--out", "FIXED"]])
def test_json_lists_every_unread_line_in_order_when_spilled(
    tmp_path: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch, command: list[str]
) -> None:
    path = _rollout(tmp_path / "r.jsonl", 700)
    argv = [
        "resume",
        str(path),
        "--json",
        *(str(tmp_path / a) if a == "FIXED" else a for a in command),
    ]
    code, held, _ = _run(argv, capsys)
    (tmp_path / "FIXED").unlink(missing_ok=True)  # written again: not refused
    monkeypatch.setattr(spill, "SPILL_AT", 5)
    monkeypatch.setattr(model, "SPILL_AT", 5)
    code_spilled, spilled, _ = _run(argv, capsys)
    assert (code_spilled, spilled) == (code, held)  # byte for byte
    assert json.loads(spilled)["warnings"] == _sentences(700)


def _peak(path: Path, argv: list[str], monkeypatch: pytest.MonkeyPatch) -> int:
    """The peak of memory allocated by Python while ``agc resume PATH ARGV`` runs, its
    stdout written to a file (a captured stdout would hold it all)."""
    with (path.parent / "stdout").open("w", encoding="utf-8") as stdout:
        monkeypatch.setattr(sys, "stdout", stdout)
        tracemalloc.start()
        try:
            main(["resume", str(path), *argv])
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
            monkeypatch.undo()


@pytest.mark.parametrize("argv", [["--check"], ["--check", "--json"]])
def test_what_is_held_does_not_grow_with_the_unread_lines(
    tmp_path: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch, argv: list[str]
) -> None:
    small = _rollout(tmp_path / "small.jsonl", 20_000)
    large = _rollout(tmp_path / "large.jsonl", 200_000)
    main(["resume", str(small), *argv])  # imports and caches made before measuring
    capsys.readouterr()
    # ten times the lines: their sentences held (about 100 bytes each) would take some
    # 18 MB more; reading the larger file itself takes about 2 MB more at its peak
    assert _peak(large, argv, monkeypatch) < 3 * _peak(small, argv, monkeypatch)
