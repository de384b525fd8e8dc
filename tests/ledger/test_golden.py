"""Golden files for the ledger's output formats: the turn file of two attempts and the
``show --json`` summary. Regenerate with ``AGC_UPDATE_GOLDEN=1 pytest tests/ledger``
after a deliberate format change (and update docs/ledger.md)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from agc.ledger import show_turn_file
from tests.ledger.helpers import Clock, command, completed, mcp, record_turn

GOLDEN = Path(__file__).parent / "golden"
GDD = "assets/uploads/upload-1-fast_gdd.md"


def _compare(name: str, data: bytes) -> None:
    path = GOLDEN / name
    if os.environ.get("AGC_UPDATE_GOLDEN") == "1":
        path.write_bytes(data)
    assert data == path.read_bytes(), f"{name} changed; see the module docstring"


def _scenario(project: Path) -> Path:
    clock = Clock()
    attachments = [
        {
            "name": "fast_gdd.md",
            "localPath": GDD,
            "mediaType": "text/markdown",
            "size": 55,
            "status": "imported",
        },
        {"name": "notes.txt", "localPath": "../outside.txt", "status": "imported"},
    ]
    first = [
        command(
            "c1",
            f"ls {project}/assets/uploads",
            [{"type": "listFiles", "path": f"{project}/assets/uploads"}],
        ),
        mcp(
            "m1",
            "taonier_prepare_game_art",
            {"mode": "full", "brief": "Top-down collecting adventure."},
        ),
        {"method": "turn/completed", "params": {"turn": {"status": "completed"}}},
    ]
    record_turn(project, first, attachments=attachments, clock=clock)
    second = [
        command(
            "c2",
            f"/bin/zsh -lc 'cat {project}/{GDD}'",
            [{"type": "read", "path": f"{project}/{GDD}"}],
        ),
        mcp("m2", "agc_write_file", {"path": "game/index.html", "content": "<html></html>"}),
        completed(
            {
                "type": "fileChange",
                "id": "f1",
                "changes": [
                    {"path": f"{project}/game/main.js", "kind": {"type": "add"}, "diff": "+x"}
                ],
            }
        ),
    ]
    return record_turn(
        project, second, attachments=attachments[:1], clock=clock, prompt="again"
    ).turn_file


def test_turn_file_format_is_stable(project: Path) -> None:
    path = _scenario(project)
    _compare("turn_two_attempts.jsonl", path.read_bytes())
    _compare("turn_two_attempts.jsonl.b3", path.with_name(path.name + ".b3").read_bytes())


def test_show_json_format_is_stable(project: Path) -> None:
    path = _scenario(project)
    data = json.dumps(show_turn_file(path).to_dict(), indent=2, ensure_ascii=False) + "\n"
    _compare("show_last_attempt.json", data.encode())
