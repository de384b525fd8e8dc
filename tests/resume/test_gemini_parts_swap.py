"""A Gemini CLI session repaired in parts, its file swapped under agc: the lines written
as they were read are copied from the file by its name, opened again after the read,
while the check replays what the read noted of them (the output is no longer read
back). A file swapped for another between the read and the copy, and back before the
end, must not give an output that was never checked."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

import agc.resume._formats.stream as stream
from agc.cli.app import main
from tests.resume.test_gemini_parts_output import _long_session

REACHES_INSIDE = {
    "agc.resume._formats.stream": "the moment its line file opens the session again",
}


def test_a_file_swapped_between_the_read_and_the_copy_never_gives_an_unchecked_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    real = tmp_path / "chats" / "session.jsonl"
    real.parent.mkdir()
    data = _long_session(3000)  # read in parts by agc resume
    real.write_bytes(data)
    source = tmp_path / "session.jsonl"  # the session named by a link (a dotfiles folder)
    source.symlink_to(real)
    lines = data.split(b"\n")
    victim = 4 * 1500 + 3  # a model turn's calls (its results follow)
    assert b'"toolCalls"' in lines[victim]
    swapped = list(lines)
    swapped[victim] = b"x" * len(lines[victim])  # not JSON: the client cannot read it
    other = tmp_path / "swapped.jsonl"
    other.write_bytes(b"\n".join(swapped))
    real_handle = stream.LineFile._handle

    def point(target: Path) -> None:
        temporary = tmp_path / "link.new"
        temporary.symlink_to(target)
        os.rename(temporary, source)

    def swap_then_open(self: stream.LineFile) -> int:
        if self._fd is None and self.path == source:
            point(other)  # the other program: the link names another file ...
            try:
                return real_handle(self)
            finally:
                point(real)  # ... and the file again: the file itself never touched
        return real_handle(self)

    monkeypatch.setattr(stream.LineFile, "_handle", swap_then_open)
    out = tmp_path / "fixed.jsonl"
    code = main(["resume", str(source), "--strategy", "synthesize", "--out", str(out), "--json"])
    said = json.loads(capsys.readouterr().out)
    if code != 0:
        assert not out.exists()
        return
    monkeypatch.setattr(stream.LineFile, "_handle", real_handle)
    main(["resume", str(out), "--check", "--json"])
    on_disk = json.loads(capsys.readouterr().out)
    on_disk.pop("source")
    if on_disk.get("tool_call_state") is None:  # a check's field the repair's report lacks
        on_disk.pop("tool_call_state", None)
    assert on_disk == {**said["report"]["after"], "warnings": on_disk["warnings"]}, (
        "the output on disk is not the output agc checked and reported"
    )
