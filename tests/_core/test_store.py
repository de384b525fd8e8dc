"""Tests for agc._core.store: run-id rules, store resolution and layout."""

from __future__ import annotations

from pathlib import Path

import pytest

from agc._core.store import RUN_ID_MAX_LENGTH, StoreLayout, resolve_store, validate_run_id
from agc.errors import RunIdInvalidError
from agc.exitcodes import ExitCode

# The list of bad run ids: /, \, .., NUL, spaces, 129 characters, empty (and ".").
BAD_RUN_IDS = [
    pytest.param("a/b", id="slash"),
    pytest.param("../escape", id="dotdot-slash"),
    pytest.param("a\\b", id="backslash"),
    pytest.param("..", id="dotdot"),
    pytest.param(".", id="dot"),
    pytest.param("a\x00b", id="nul"),
    pytest.param("a b", id="space"),
    pytest.param(" ", id="only-space"),
    pytest.param("x" * (RUN_ID_MAX_LENGTH + 1), id="129-chars"),
    pytest.param("", id="empty"),
    pytest.param("r\n", id="trailing-newline"),
    pytest.param("é", id="non-ascii"),
]


@pytest.mark.parametrize("run_id", BAD_RUN_IDS)
def test_bad_run_id_is_a_usage_error(run_id: str) -> None:
    with pytest.raises(RunIdInvalidError) as info:
        validate_run_id(run_id)
    assert info.value.exit_code == ExitCode.USAGE
    assert info.value.code == "run-id-invalid"


@pytest.mark.parametrize("run_id", ["a", "A-b_c.d", "x" * RUN_ID_MAX_LENGTH, "...", ".hidden", "0"])
def test_good_run_id_is_returned_unchanged(run_id: str) -> None:
    assert validate_run_id(run_id) == run_id


@pytest.mark.parametrize("run_id", [None, 7, b"r1"])
def test_a_run_id_that_is_not_a_string_is_named_as_such(run_id: object) -> None:
    with pytest.raises(RunIdInvalidError, match="must be a string, not") as info:
        validate_run_id(run_id)  # type: ignore[call-overload]
    assert info.value.exit_code == ExitCode.USAGE


def test_error_names_the_bad_character() -> None:
    with pytest.raises(RunIdInvalidError, match="'/'"):
        validate_run_id("a/b")


@pytest.mark.parametrize("run_id", BAD_RUN_IDS)
def test_layout_paths_validate_the_run_id(run_id: str, tmp_path: Path) -> None:
    layout = StoreLayout(tmp_path)
    with pytest.raises(RunIdInvalidError):
        layout.artifact_path(run_id, "transcript")
    with pytest.raises(RunIdInvalidError):
        layout.manifest_path(run_id)
    assert list(tmp_path.iterdir()) == []


def test_layout_matches_documented_paths(tmp_path: Path) -> None:
    layout = StoreLayout(tmp_path)
    assert layout.artifact_path("r1", "transcript") == tmp_path / "audit/transcripts/r1.jsonl"
    assert layout.artifact_path("r1", "tool-events") == tmp_path / "audit/tool-events/r1.jsonl"
    assert layout.manifest_path("r1") == tmp_path / "audit/manifests/r1.json"
    assert layout.legacy_tool_events_path == tmp_path / "audit/tool-events.jsonl"


def test_resolve_store_prefers_argument_then_env_then_home(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("AGC_HOME", str(tmp_path / "env"))
    assert resolve_store(tmp_path / "arg") == tmp_path / "arg"
    assert resolve_store() == tmp_path / "env"
    monkeypatch.delenv("AGC_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert resolve_store() == tmp_path / "home" / ".agc"
    assert not (tmp_path / "home").exists()
