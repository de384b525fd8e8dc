"""Codex startup notifications applied to the items; stale connections ignored."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agc.errors import ExtensionNotFoundError, SidecarMismatchError
from agc.extensions import (
    STARTUP_STATUS_METHOD,
    ExtensionRepository,
    apply_startup_events,
    project,
)
from agc.extensions._status import MAX_STARTUP_ERROR_CHARS, startup_error_text
from tests.conftest import examples
from tests.extensions.builders import codex_config_two_servers

REACHES_INSIDE = {"agc.extensions._status": "the startup error text rule on its own"}


def _event(name: str, status: str, error: str | None = None) -> bytes:
    message = {
        "jsonrpc": "2.0",
        "method": STARTUP_STATUS_METHOD,
        "params": {"threadId": None, "name": name, "status": status, "error": error},
    }
    return json.dumps(message).encode() + b"\n"


@pytest.fixture
def repo(tmp_path: Path, store: Path) -> ExtensionRepository:
    repo = ExtensionRepository(store)
    repo.import_path(codex_config_two_servers(tmp_path / "cfg"))
    return repo


def test_failed_and_ready_notifications_set_the_status(
    tmp_path: Path, repo: ExtensionRepository
) -> None:
    project(repo, tmp_path / "home")
    result = apply_startup_events(
        repo,
        [
            _event("search", "starting"),
            _event("filesystem", "starting"),
            _event("search", "ready"),
            _event("filesystem", "failed", "spawn ./bin/fs-server: No such file"),
            _event("docs", "cancelled"),
        ],
    )
    assert result.current
    assert (result.notifications, result.stale, result.unmatched, result.malformed) == (5, 0, 0, 0)
    items = {item.name: item for item in repo.items()}
    assert (items["search"].startup_status, items["search"].status) == ("ready", "enabled")
    assert items["filesystem"].status == "failed"
    assert items["filesystem"].last_error == "startup failed: spawn ./bin/fs-server: No such file"
    assert items["docs"].status == "failed"
    assert items["docs"].last_error == "startup cancelled"


def test_ready_clears_an_earlier_startup_failure(tmp_path: Path, repo: ExtensionRepository) -> None:
    project(repo, tmp_path / "home")
    apply_startup_events(repo, [_event("search", "failed", "timeout")])
    apply_startup_events(repo, [_event("search", "ready")])
    search = {item.name: item for item in repo.items()}["search"]
    assert (search.status, search.last_error, search.startup_status) == ("enabled", None, "ready")


def test_notifications_of_an_older_projection_are_ignored(
    tmp_path: Path, repo: ExtensionRepository
) -> None:
    old = project(repo, tmp_path / "home").projection_id
    project(repo, tmp_path / "home")
    result = apply_startup_events(repo, [_event("search", "failed", "late")], projection_id=old)
    assert not result.current
    assert (result.stale, result.applied) == (1, ())
    assert {item.name: item for item in repo.items()}["search"].status == "enabled"


@pytest.mark.parametrize("change", ["disable", "rename", "remove"])
def test_notifications_for_an_item_changed_since_projection_are_stale(
    tmp_path: Path, repo: ExtensionRepository, change: str
) -> None:
    project(repo, tmp_path / "home")
    search = {item.name: item for item in repo.items()}["search"]
    if change == "disable":
        repo.set_enabled([search.id], False)
    elif change == "rename":
        repo.rename(search.id, "finder")
    else:
        repo.remove([search.id])
    result = apply_startup_events(repo, [_event("search", "failed", "gone")])
    assert result.stale == 1
    assert result.applied == ()
    for item in repo.items():
        assert item.last_error is None or "startup" not in item.last_error


def test_a_reimported_item_of_the_same_name_is_not_the_projected_one(
    tmp_path: Path, repo: ExtensionRepository
) -> None:
    project(repo, tmp_path / "home")
    repo.remove([item.id for item in repo.items()])
    repo.import_path(tmp_path / "cfg" / "config.toml")
    result = apply_startup_events(repo, [_event("search", "failed", "old connection")])
    assert result.stale == 1
    assert all(item.status == "enabled" for item in repo.items())


def test_servers_agc_did_not_project_and_bad_lines_are_counted_not_applied(
    tmp_path: Path, repo: ExtensionRepository
) -> None:
    project(repo, tmp_path / "home")
    lines = [
        _event("agc_tools", "failed", "builtin"),
        b"not json\n",
        b"[1, 2]\n",
        json.dumps(
            {"method": STARTUP_STATUS_METHOD, "params": {"name": "search", "status": "odd"}}
        ).encode(),
        json.dumps({"method": "thread/started", "params": {}}).encode(),
        b"\n",
    ]
    result = apply_startup_events(repo, lines)
    assert (result.notifications, result.unmatched, result.malformed, result.applied) == (
        1,
        1,
        3,
        (),
    )


def test_nothing_projected_yet_is_a_clear_error(repo: ExtensionRepository) -> None:
    with pytest.raises(ExtensionNotFoundError, match="nothing was projected"):
        apply_startup_events(repo, [])


def test_a_tampered_projection_record_is_refused(tmp_path: Path, repo: ExtensionRepository) -> None:
    result = project(repo, tmp_path / "home")
    data = result.record.read_bytes()
    result.record.write_bytes(data.replace(b'"search"', b'"searcH"', 1))
    with pytest.raises(SidecarMismatchError):
        apply_startup_events(repo, [_event("search", "ready")])


def test_a_deeply_nested_event_line_is_malformed_not_a_crash(
    tmp_path: Path, repo: ExtensionRepository
) -> None:
    project(repo, tmp_path / "home")
    deep = b"[" * 200_000 + b"]" * 200_000
    line = b'{"method": "' + STARTUP_STATUS_METHOD.encode() + b'", "params": ' + deep + b"}"
    result = apply_startup_events(repo, [line, _event("search", "ready")])
    assert (result.notifications, result.malformed) == (1, 1)
    assert {item.name: item.startup_status for item in repo.items()}["search"] == "ready"


class _BoundedReadsOnly(io.BytesIO):
    """A stream that fails any read not bounded to a bit over 1 MiB."""

    def readline(self, size: int | None = -1, /) -> bytes:
        assert size is not None
        assert 0 < size <= 1024 * 1024 + 1, size
        return super().readline(size)

    def __iter__(self) -> Iterator[bytes]:
        raise AssertionError("iterating a stream reads a whole line, however long")


def test_a_stream_is_read_in_bounded_lines_and_a_huge_line_counts_malformed(
    tmp_path: Path, repo: ExtensionRepository
) -> None:
    project(repo, tmp_path / "home")
    huge = b'{"method": "' + STARTUP_STATUS_METHOD.encode() + b'", "x": "' + b"z" * (5 << 20)
    stream = _BoundedReadsOnly(
        _event("search", "failed", "first") + huge + b'"}\n' + _event("search", "ready")
    )
    result = apply_startup_events(repo, stream)
    assert (result.notifications, result.malformed) == (2, 1)
    assert {item.name: item.startup_status for item in repo.items()}["search"] == "ready"


def test_a_startup_error_is_redacted_and_bounded_before_it_is_kept(
    tmp_path: Path, repo: ExtensionRepository, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = str(tmp_path / "home-of-user")
    monkeypatch.setenv("HOME", home)
    key = "sk-proj-" + "Q7w" * 16
    error = (
        f"Error: invalid key {key} at {home}/work/server.js:12\n"
        + "    at frame (node:internal)\n" * 30_000  # a 900 KB stack as JSON
        + "ghp_"
        + "A1b2" * 9
    )
    project(repo, tmp_path / "codex-home")
    apply_startup_events(repo, [_event("search", "failed", error)])
    kept = {item.name: item for item in repo.items()}["search"].last_error
    assert kept is not None
    assert kept.startswith("startup failed: Error: invalid key [REDACTED:")
    assert key not in kept
    assert "ghp_" not in kept
    assert home not in kept
    assert "~/work/server.js:12" in kept
    assert "\n" not in kept
    assert len(kept) <= len("startup failed: ") + MAX_STARTUP_ERROR_CHARS
    assert " … " in kept
    index_text = repo.index_path.read_text()
    assert key not in index_text
    assert len(index_text) < 20_000


@settings(max_examples=examples(40), deadline=None)
@given(error=st.text(max_size=3000))
def test_any_startup_error_text_is_kept_as_one_bounded_line(error: str) -> None:
    kept = startup_error_text(error, home="/home/someone")
    assert len(kept) <= MAX_STARTUP_ERROR_CHARS
    assert not any(ch in kept for ch in "\n\r\t")
    assert "/home/someone" not in kept
