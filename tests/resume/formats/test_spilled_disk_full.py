"""The private file of spilled id fingerprints meets a full disk: agc resume exits 3
(a full disk), with the session file as it was and nothing left beside it."""

from __future__ import annotations

import errno
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest

import agc.resume._formats.model as model
from agc.cli.app import main
from tests.resume.test_gemini_parts_output import _long_session

REACHES_INSIDE = {"agc.resume._formats.model": "a spill every few ids"}


class _FullDisk:
    """A temporary file whose writes fail as on a full disk."""

    def __init__(self, real: Any) -> None:
        self._real = real

    tried = 0

    def write(self, data: bytes) -> int:
        _FullDisk.tried += 1
        raise OSError(errno.ENOSPC, "No space left on device")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


@pytest.mark.parametrize("mode", ["--check", "--in-place", "--out"])
def test_a_full_disk_at_a_spill_exits_3_and_loses_nothing(
    mode: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    source = tmp_path / "session.jsonl"
    data = _long_session(3000)  # read in parts by agc resume
    source.write_bytes(data)
    monkeypatch.setattr(model, "SPILL_AT", 64)
    real = tempfile.TemporaryFile
    monkeypatch.setattr(tempfile, "TemporaryFile", lambda **kw: _FullDisk(real(**kw)))
    argv = ["resume", str(source), "--json"]
    if mode == "--check":
        argv.append("--check")
    else:
        argv += ["--strategy", "synthesize", mode]
        if mode == "--out":
            argv.append(str(tmp_path / "fixed.jsonl"))
    _FullDisk.tried = 0
    code = main(argv)
    assert _FullDisk.tried  # a spill was written
    said = capsys.readouterr()
    assert code == 3, said.out[-600:] + said.err[-600:]
    assert json.loads(said.out)["error"]["code"]
    assert source.read_bytes() == data
    assert sorted(p.name for p in tmp_path.iterdir()) == ["session.jsonl"]
