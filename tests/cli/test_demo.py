"""Tests for ``agc demo`` and the generated example run in agc.demo."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from agc.cli.app import main
from agc.demo import DEMO_SESSION_ID, demo_run
from agc.exitcodes import ExitCode
from agc.integrity import check_run
from tests.conftest import REPO_ROOT


def test_demo_run_is_deterministic_and_realistic() -> None:
    first = list(demo_run())
    assert first == list(demo_run())
    assert first != list(demo_run(seed=8))
    kinds = {record.kind for record in first}
    assert kinds == {"transcript", "tool-events"}
    calls = [r.body["call_id"] for r in first if r.kind == "tool-events"]
    assert len(calls) == 12  # a start and an end for each of the 6 tool calls


def test_demo_verifies_then_shows_the_tampered_copy_failing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workdir = tmp_path / "demo"
    assert main(["demo", "--store", str(workdir)]) == ExitCode.OK
    out, err = capsys.readouterr()
    assert "   run demo-fix-parser: complete" in out
    assert "   FAIL transcript   modified: transcript checksum mismatch" in out
    assert "Demo finished: the sealed run verifies, the tampered copy fails, and the" in err
    assert check_run("demo-fix-parser", workdir / "store").complete
    assert not check_run("demo-fix-parser", workdir / "tampered-store").complete
    # The killed session: refused as it is, its repair accepted, by agc resume itself.
    assert "line 8: tool-call-unanswered: messages.7: `tool_use` ids were found" in out
    assert "   fixed.jsonl: valid" in out
    session = workdir / "session" / f"{DEMO_SESSION_ID}.jsonl"
    assert main(["resume", str(session), "--check"]) == ExitCode.FINDINGS
    assert main(["resume", str(workdir / "session" / "fixed.jsonl"), "--check"]) == ExitCode.OK
    assert "the killed session's repair is one the provider accepts" in err


def test_demo_defaults_to_one_cache_folder_that_the_next_demo_replaces(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two demos without --store: one folder, $XDG_CACHE_HOME/agc/demo, named on stderr
    and replaced by the second; nothing is left in the temp folder."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    folder = tmp_path / "cache" / "agc" / "demo"
    assert main(["demo"]) == ExitCode.OK
    assert f"The demo's files are in {folder}" in capsys.readouterr().err
    (folder / "store" / "left-by-the-first.txt").write_text("x")
    assert main(["demo"]) == ExitCode.OK
    capsys.readouterr()
    assert check_run("demo-fix-parser", folder / "store").complete
    assert not (folder / "store" / "left-by-the-first.txt").exists()
    assert sorted(p.name for p in folder.iterdir()) == [
        ".agc-demo",
        "session",
        "store",
        "tampered-store",
    ]
    assert list(temp.iterdir()) == []


def test_demo_never_replaces_a_cache_folder_it_did_not_make(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    mine = tmp_path / "agc" / "demo"
    mine.mkdir(parents=True)
    (mine / "keep.txt").write_text("mine")
    assert main(["demo"]) == ExitCode.USAGE
    assert "not a folder agc demo made" in capsys.readouterr().err
    assert [p.name for p in mine.iterdir()] == ["keep.txt"]


def test_demo_refuses_a_non_empty_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "keep.txt").write_text("mine")
    assert main(["demo", "--store", str(tmp_path)]) == ExitCode.USAGE
    assert "not empty" in capsys.readouterr().err
    assert [p.name for p in tmp_path.iterdir()] == ["keep.txt"]


@pytest.mark.parametrize("url", ["s3://acme-evidence/agents", "s3://bucket"])
def test_an_object_store_is_refused_before_anything_is_written(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    url: str,
) -> None:
    """The demo copies its store folder: an s3:// --store wrote a run into the bucket,
    then failed with an internal error (exit 4, a traceback) on the copy. Like every
    command that works on folders only (docs/object-store.md): exit 2, nothing written."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # nothing may be asked
    assert main(["demo", "--store", url]) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert "is an object store; this works on a store folder only" in err
    assert "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


def test_make_demo_writes_under_the_clone_never_the_home(tmp_path: Path) -> None:
    """`make demo` (a README set-up command) puts the demo's files in the clone's
    .cache/agc/demo, ignored by git and replaced by the next `make demo`; nothing goes
    to the user's ~/.cache, which two clones (or two users of one HOME) would share.
    The Makefile runs from a stand-in clone folder with this venv (its install stamps
    taken as made, so nothing is installed)."""
    make = shutil.which("make")
    if make is None:
        pytest.skip("make is not installed")
    venv = Path(sys.executable).parent.parent
    if not (venv / "bin" / "agc").is_file():
        pytest.skip(f"{sys.executable} is not the python of a venv with agc installed")
    clone, home = tmp_path / "clone", tmp_path / "home"
    clone.mkdir()
    home.mkdir()
    env = {**os.environ, "HOME": str(home)}
    env.pop("XDG_CACHE_HOME", None)
    argv = [make, "--no-print-directory", "-C", str(clone), "-f", str(REPO_ROOT / "Makefile")]
    argv += [f"VENV={venv}", "-o", str(venv / ".installed"), "-o", str(venv / ".runtime")]
    folder = clone / ".cache" / "agc" / "demo"
    for _ in range(2):  # the second replaces the first's files
        done = subprocess.run([*argv, "demo"], env=env, capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr
        assert f"The demo's files are in {folder}" in done.stderr
    assert not (home / ".cache").exists()
    assert check_run("demo-fix-parser", folder / "store").complete
    assert ".cache/" in (REPO_ROOT / ".gitignore").read_text().splitlines()
