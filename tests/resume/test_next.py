"""Tests for agc.resume.next_step: where a client reads a session back, and the command
that resumes it."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agc.resume import load_history, next_step

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
    kept = home / "projects" / "-some-other-name" / "s1.jsonl"
    kept.parent.mkdir(parents=True)
    kept.write_bytes(_claude("/w"))
    history = load_history(_claude("/w"), source="s.jsonl", format="claude-code")
    step = next_step(history, {"CLAUDE_CONFIG_DIR": str(home), "HOME": "/nonexistent"})
    assert step is not None
    assert (step.path, step.exists, step.cwd) == (kept, True, "/w")
    assert step.commands == ("cd /w && claude --resume s1",)


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
