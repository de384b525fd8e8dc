"""Reproductions of ``agc resume FILE --in-place`` leaving something behind when it
refuses (found by an adversarial review; expected to fail until fixed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agc.cli.app import main
from tests.cli.test_resume_in_place import GOLDEN


def test_a_refused_in_place_repair_of_a_symlink_leaves_no_backup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    target = tmp_path / "session.jsonl"
    original = (GOLDEN / "claude-code-in-flight.jsonl").read_bytes()
    target.write_bytes(original)
    link = tmp_path / "link.jsonl"
    link.symlink_to(target.name)
    assert main(["resume", str(link), "--in-place"]) == 2  # refused: a symlink
    assert target.read_bytes() == original
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "home") == [
        "link.jsonl",
        "session.jsonl",
    ]
