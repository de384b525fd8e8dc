"""Tests for agc.resume.next_step: where a client reads a session back, and the command
that resumes it."""

from __future__ import annotations

import json
import re
import tempfile
import time
import uuid
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agc.resume import NoNextStep, find_next_step, load_history, next_step

GOLDEN = Path(__file__).resolve().parent / "golden"


def _claude(cwd: str | None, session: str = "s1") -> bytes:
    first = {"type": "user", "sessionId": session, "message": {"role": "user", "content": "hi"}}
    if cwd is not None:
        first["cwd"] = cwd
    return (
        json.dumps({"type": "summary", "summary": "x"}) + "\n" + json.dumps(first) + "\n"
    ).encode()


def _env(tmp_path: Path) -> dict[str, str]:
    return {"HOME": str(tmp_path / "home")}


@given(cwd=st.text(min_size=1, max_size=40).map(lambda t: "/" + t.replace("\x00", "")))
def test_claude_code_keeps_a_session_under_its_cwd_with_every_other_character_a_dash(
    cwd: str,
) -> None:
    history = load_history(_claude(cwd), source="s.jsonl", format="claude-code")
    step = next_step(history, {"HOME": "/nonexistent/h"})
    assert step is not None
    folder = step.path.parent.name
    assert step.path == Path("/nonexistent/h/.claude/projects") / folder / "s1.jsonl"
    assert len(folder) == len(cwd)
    assert re.fullmatch("[A-Za-z0-9-]*", folder)
    assert all(a == b for a, b in zip(folder, cwd, strict=True) if b.isascii() and b.isalnum())
    assert step.commands[-1].endswith("claude --resume s1")


def test_a_session_already_in_the_client_home_is_found_there(tmp_path: Path) -> None:
    home = tmp_path / "claude"
    kept = home / "projects" / "-w" / "s1.jsonl"
    kept.parent.mkdir(parents=True)
    kept.write_bytes(_claude("/w"))
    history = load_history(_claude("/w"), source="s.jsonl", format="claude-code")
    step = next_step(history, {"CLAUDE_CONFIG_DIR": str(home), "HOME": "/nonexistent"})
    assert step is not None
    assert (step.path, step.exists, step.cwd, step.note) == (kept, True, "/w", None)
    assert step.commands == ("cd /w && claude --resume s1",)


def test_a_session_kept_under_a_moved_projects_folder_resumes_from_the_folders_directory(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    # The project moved from /Users/x/proj to /tmp/agc<hex>: its file is under the new
    # directory's folder, which Claude Code reads only when run from that directory; the
    # folder's name with "-" read "/" is that directory.
    if not re.fullmatch("[A-Za-z0-9/]+", tempfile.gettempdir()):
        pytest.skip("the temporary directory's path must read back from its folder name")
    home, moved = tmp_path / "claude", Path(tempfile.gettempdir()) / f"agc{uuid.uuid4().hex}"
    moved.mkdir()
    request.addfinalizer(moved.rmdir)
    folder = home / "projects" / re.sub("[^A-Za-z0-9]", "-", str(moved))
    kept = folder / "s1.jsonl"
    kept.parent.mkdir(parents=True)
    kept.write_bytes(_claude("/Users/x/proj"))
    history = load_history(_claude("/Users/x/proj"), source="s.jsonl", format="claude-code")
    step = next_step(history, {"CLAUDE_CONFIG_DIR": str(home), "HOME": "/nonexistent"})
    assert step is not None
    assert (step.path, step.exists, step.cwd) == (kept, True, str(moved))
    assert step.commands == (f"cd {moved} && claude --resume s1",)
    assert step.note is not None
    assert "/Users/x/proj" in step.note


def test_a_moved_projects_folder_is_named_by_a_cwd_recorded_in_it(tmp_path: Path) -> None:
    # "-srv-my-app" reads back as /srv/my/app, which does not exist; another session of
    # the folder recorded /srv/my.app, whose folder it is.
    home = tmp_path / "claude"
    folder = home / "projects" / "-srv-my-app"
    folder.mkdir(parents=True)
    (folder / "s1.jsonl").write_bytes(_claude("/Users/x/proj"))
    (folder / "s0.jsonl").write_bytes(_claude("/srv/my.app", session="s0"))
    history = load_history(_claude("/Users/x/proj"), source="s.jsonl", format="claude-code")
    step = next_step(history, {"CLAUDE_CONFIG_DIR": str(home), "HOME": "/nonexistent"})
    assert step is not None
    assert (step.path, step.cwd) == (folder / "s1.jsonl", "/srv/my.app")
    assert step.commands == ("cd /srv/my.app && claude --resume s1",)


def test_a_projects_folder_no_known_directory_names_leaves_the_session_in_its_cwds_folder(
    tmp_path: Path,
) -> None:
    home = tmp_path / "claude"
    other = home / "projects" / "-nonexistent-elsewhere" / "s1.jsonl"
    other.parent.mkdir(parents=True)
    other.write_bytes(_claude("/Users/x/proj"))
    history = load_history(_claude("/Users/x/proj"), source="s.jsonl", format="claude-code")
    step = next_step(history, {"CLAUDE_CONFIG_DIR": str(home), "HOME": "/nonexistent"})
    assert step is not None
    own = home / "projects" / "-Users-x-proj" / "s1.jsonl"
    assert (step.path, step.exists, step.cwd) == (own, False, "/Users/x/proj")
    assert step.commands == ("cd /Users/x/proj && claude --resume s1",)
    assert step.note is not None
    assert str(other.parent) in step.note


def test_the_copy_moves_the_file_there_now_aside_to_a_free_name(tmp_path: Path) -> None:
    kept = tmp_path / "claude" / "projects" / "-w" / "s1.jsonl"
    kept.parent.mkdir(parents=True)
    kept.write_bytes(_claude("/w"))
    history = load_history(_claude("/w"), source="s.jsonl", format="claude-code")
    step = next_step(history, {"CLAUDE_CONFIG_DIR": str(tmp_path / "claude")})
    assert step is not None
    aside = kept.with_name("s1.jsonl.before-repair")
    assert step.copy_command(Path("/r")) == f"mv -- {kept} {aside} && cp -- /r {kept}"
    aside.write_bytes(b"")
    assert step.aside() == kept.with_name("s1.jsonl.before-repair-2")


def test_a_codex_rollout_is_named_by_its_start_in_local_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TZ", "Europe/Paris")
    time.tzset()
    try:
        history = load_history(
            (GOLDEN / "codex-rollout-in-flight.jsonl").read_bytes(), source="r", format=None
        )
        step = next_step(history, {"CODEX_HOME": str(tmp_path)})
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()
    assert step is not None
    # session_meta at 2026-01-01T00:00:00Z is 01:00 in Paris
    assert step.path == tmp_path / "sessions/2026/01/01/rollout-2026-01-01T01-00-00-sess.jsonl"
    assert not step.exists
    assert step.commands == ("codex resume sess", "codex exec resume sess 'continue'")


def test_an_existing_rollout_of_the_session_wins(tmp_path: Path) -> None:
    kept = tmp_path / "sessions/2025/12/31/rollout-2025-12-31T23-59-59-sess.jsonl"
    kept.parent.mkdir(parents=True)
    kept.write_text("{}\n")
    history = load_history((GOLDEN / "codex-rollout-in-flight.jsonl").read_bytes(), source="r")
    step = next_step(history, {"CODEX_HOME": str(tmp_path)})
    assert step is not None
    assert step.path == kept
    assert step.exists


@pytest.mark.parametrize(
    "data",
    [
        json.dumps([{"role": "user", "content": "hi"}]).encode(),  # an API array: no client
        _claude(None),  # no cwd, and no file of the session to find
        _claude("/w", session="../x"),  # a session id that is a path
    ],
)
def test_no_next_step_without_a_client_session_to_name(data: bytes, tmp_path: Path) -> None:
    assert next_step(load_history(data, source="h"), _env(tmp_path)) is None


def test_a_session_id_with_glob_characters_finds_only_itself(tmp_path: Path) -> None:
    home = tmp_path / "claude"
    other = home / "projects" / "p" / "sX.jsonl"
    other.parent.mkdir(parents=True)
    other.write_text("{}\n")
    history = load_history(_claude("/w", session="s?"), source="h", format="claude-code")
    step = next_step(history, {"CLAUDE_CONFIG_DIR": str(home)})
    assert step is not None
    assert step.path.name == "s?.jsonl"
    assert not step.exists


def test_a_long_cwd_whose_folder_claude_code_made_is_resumed_from_that_folder(
    tmp_path: Path,
) -> None:
    # Claude Code cuts a project folder name past 200 characters and ends it with a hash
    # of its own: the folder it made is the one that starts with the cut name.
    cwd = "/w/" + "d" * 300
    home = tmp_path / "claude"
    made = home / "projects" / ("-w-" + "d" * 197 + "-abc123")
    made.mkdir(parents=True)
    (home / "projects" / "-w-other").mkdir()
    history = load_history(_claude(cwd), source="s.jsonl", format="claude-code")
    step = next_step(history, {"CLAUDE_CONFIG_DIR": str(home), "HOME": "/nonexistent"})
    assert step is not None
    assert (step.path, step.exists, step.cwd, step.note) == (made / "s1.jsonl", False, cwd, None)


def test_a_long_cwd_whose_folder_is_not_made_yet_has_no_step_and_says_why(
    tmp_path: Path,
) -> None:
    # No folder to name (its hash is Claude Code's): no path is made up, and nothing
    # asks the file system about a name too long for it (that was an OSError, exit 4).
    cwd = "/w/" + "d" * 300
    history = load_history(_claude(cwd), source="s.jsonl", format="claude-code")
    found = find_next_step(history, {"HOME": str(tmp_path)})
    assert isinstance(found, NoNextStep)
    assert "cuts a folder name longer than 200 characters" in found.reason


def test_a_long_cwd_whose_session_is_kept_in_its_folder_is_found(tmp_path: Path) -> None:
    cwd = "/w/" + "é" * 300
    home = tmp_path / "claude"
    kept = home / "projects" / ("-w-" + "-" * 197 + "-k9") / "s1.jsonl"
    kept.parent.mkdir(parents=True)
    kept.write_bytes(_claude(cwd))
    (home / "projects" / ("-w-" + "-" * 197 + "-k8")).mkdir()  # two folders start alike
    history = load_history(_claude(cwd), source="s.jsonl", format="claude-code")
    step = next_step(history, {"CLAUDE_CONFIG_DIR": str(home), "HOME": "/nonexistent"})
    assert step is not None
    assert (step.path, step.exists, step.cwd, step.note) == (kept, True, cwd, None)
