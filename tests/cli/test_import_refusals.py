"""``agc import`` refuses combinations it cannot honour before writing anything, each
with exit 2 naming the option: a run id for a folder of session files, tool events
from session files, retention for a folder, tool events without a run id, and a file
that is no client session without a run id."""

from __future__ import annotations

from pathlib import Path

import pytest

from agc.cli.app import main as agc_main
from tests.conftest import tree


@pytest.mark.parametrize(
    ("what", "options", "needle"),
    [
        ("folder", ["--run-id", "r1"], "--run-id"),
        ("folder", ["--kind", "tool-events"], "imported as transcripts"),
        ("folder", ["--retention-days", "1"], "--retention-days"),
        ("file", ["--kind", "tool-events"], "--run-id is required with --kind tool-events"),
        ("file", [], "Give --run-id."),
    ],
    ids=["folder-run-id", "folder-tool-events", "folder-retention", "tool-events-no-run-id",
         "not-a-session-no-run-id"],
)  # fmt: skip
def test_an_import_it_cannot_honour_is_refused_before_anything_is_written(
    tmp_path: Path,
    store: Path,
    what: str,
    options: list[str],
    needle: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir()
    plain = tmp_path / "events.jsonl"
    plain.write_text('{"event": "tool_call_start", "call_id": "c1"}\n')
    source = folder if what == "folder" else plain
    before = tree(store)
    assert agc_main(["import", str(source), "--store", str(store), *options]) == 2
    assert needle in capsys.readouterr().err
    assert tree(store) == before
