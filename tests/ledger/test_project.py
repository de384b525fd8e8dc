"""Tests for agc.ledger._project: hashing inside the project only."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from agc.errors import StoreError, UnsafePathError
from agc.ledger import Project
from agc.ledger._project import FileHash

REACHES_INSIDE = {
    "agc.ledger._project": "attachment hashing (FileHash, Project) on its own",
}


def test_hash_matches_hashlib(project: Path) -> None:
    data = (project / "assets/uploads/upload-1-fast_gdd.md").read_bytes()
    result = Project(project).hash_file("assets/uploads/upload-1-fast_gdd.md")
    assert result == FileHash(content_sha256=hashlib.sha256(data).hexdigest())


@pytest.mark.parametrize(
    ("setup", "relative", "expected"),
    [
        ("none", "nope.md", FileHash(hash_skipped="missing")),
        ("none", "nope/deeper.md", FileHash(hash_skipped="missing")),
        ("dir", "folder", FileHash(hash_skipped="not-a-file")),
        ("big", "big.bin", FileHash(hash_skipped="too-large")),
        ("fifo", "pipe", FileHash(hash_skipped="not-a-file")),
        ("link-out", "link.md", FileHash(rejected="symlink-outside")),
        ("link-dir-out", "linkdir/secret.md", FileHash(rejected="symlink-outside")),
        ("link-agent", "alias.md", FileHash(rejected="control-plane")),
        ("link-env", "settings.md", FileHash(rejected="sensitive")),
        ("none", ".git/config", FileHash(rejected="control-plane")),
        ("none", ".env", FileHash(rejected="sensitive")),
    ],
)
def test_hash_skips_and_rejects(
    project: Path, tmp_path: Path, setup: str, relative: str, expected: FileHash
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("host secret")
    if setup == "dir":
        (project / "folder").mkdir()
    elif setup == "big":
        (project / "big.bin").write_bytes(b"\0" * (2 * 1024 * 1024 + 1))
    elif setup == "fifo":
        os.mkfifo(project / "pipe")
    elif setup == "link-out":
        (project / "link.md").symlink_to(outside / "secret.md")
    elif setup == "link-dir-out":
        (project / "linkdir").symlink_to(outside)
    elif setup == "link-agent":
        (project / ".agent").mkdir()
        (project / ".agent" / "agent.db").write_text("db")
        (project / "alias.md").symlink_to(project / ".agent" / "agent.db")
    elif setup == "link-env":
        (project / ".env").write_text("TOKEN=1")
        (project / "settings.md").symlink_to(project / ".env")
    assert Project(project).hash_file(relative) == expected


def test_symlink_inside_the_project_is_followed(project: Path) -> None:
    (project / "alias.md").symlink_to(project / "assets/uploads/upload-1-fast_gdd.md")
    assert Project(project).hash_file("alias.md").content_sha256 is not None


def test_missing_project_is_a_store_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="does not exist"):
        Project(tmp_path / "nope")


def test_ensure_dirs_refuses_a_symlinked_agent_folder(project: Path, tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    (project / ".agent").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(UnsafePathError):
        Project(project).ensure_dirs((".agent", "runtime"))
    assert not (tmp_path / "elsewhere" / "runtime").exists()
