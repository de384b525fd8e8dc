"""``agc import`` / ``agc record`` of a client session file fill tool-events and attributes.

Before, a session with tool calls was sealed with an empty tool-events artifact (a
report of "0 records" for a session that ran 23 tools) and no word of what it was.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agc._core.store import StoreLayout
from agc.capture import ToolEvent, parse_session
from agc.cli.app import main
from agc.integrity import check_run
from tests.conftest import (
    REAL_FIXTURES,
    feed_stdin,
    read_records,
    real_fixture_files,
    require_shared,
)

REAL = real_fixture_files() or [REAL_FIXTURES / "absent.jsonl"]


def _parsed(path: Path) -> tuple[list[ToolEvent], dict[str, Any] | None]:
    lines: list[Any] = []
    for raw in path.read_bytes().splitlines():
        try:
            lines.append(json.loads(raw))
        except ValueError:
            lines.append(None)
    events, facts = parse_session(lines)
    return events, None if facts is None else facts.to_attributes()


def _stored(store: Path, run_id: str) -> tuple[list[dict[str, Any]], Any]:
    layout = StoreLayout(store)
    records = read_records(layout.artifact_path(run_id, "tool-events"))
    manifest = json.loads(layout.manifest_path(run_id).read_bytes())
    return records, manifest.get("attributes")


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
def test_import_of_a_real_session_fills_tool_events_and_attributes(
    path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    require_shared(path)
    assert main(["import", str(path), "--run-id", "s1", "--store", str(store)]) == 0
    capsys.readouterr()
    events, attributes = _parsed(path)
    records, stored_attributes = _stored(store, "s1")
    assert [ToolEvent.from_record(r) for r in records] == [
        ToolEvent.from_record(e.to_record()) for e in events
    ]
    assert all(r["run_id"] == "s1" for r in records)
    assert stored_attributes == attributes
    assert stored_attributes["tool_calls"] == sum(e.event == "call" for e in events)
    assert check_run("s1", store).complete


def test_record_of_a_codex_exec_stream_keeps_its_thread_id(
    store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = require_shared(REAL_FIXTURES / "codex-exec" / "stream-output-2.jsonl")
    feed_stdin(monkeypatch, path.read_bytes())
    assert main(["record", "--run-id", "x1", "--store", str(store)]) == 0
    capsys.readouterr()
    records, attributes = _stored(store, "x1")
    thread = json.loads(path.read_bytes().splitlines()[0])["thread_id"]
    assert attributes["thread_id"] == thread
    assert attributes["client"] == "codex"
    assert [(r["event"], r["tool"], r["status"]) for r in records] == [
        ("call", "command_execution", None),
        ("result", "command_execution", "ok"),
    ]


def test_a_jsonl_file_of_no_client_keeps_an_empty_tool_events_and_no_attributes(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "plain.jsonl"
    path.write_bytes(b'{"role":"user","content":"hi"}\n{"type":"user"}\n')
    assert main(["import", str(path), "--run-id", "p1", "--store", str(store)]) == 0
    capsys.readouterr()
    records, attributes = _stored(store, "p1")
    assert (records, attributes) == ([], None)


def test_importing_a_session_again_is_recognized_as_the_same_run(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = require_shared(REAL_FIXTURES / "claude-code" / "simonw-sample_session.jsonl")
    argv = ["import", str(path), "--run-id", "c1", "--store", str(store)]
    assert main(argv) == 0
    assert main(argv) == 0
    assert "already recorded" in capsys.readouterr().out
