"""Tests for agc.ledger._classify: turn_end and the timeline rows."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agc.ledger import preset_policy, show_turn_file
from agc.ledger._classify import Attempt, derive_turn_end, split_attempts, summarize_attempt
from tests.ledger.helpers import command, completed, mcp, record_turn, turn_end

REACHES_INSIDE = {
    "agc.ledger._classify": "turn_end and attempt summaries derived from records, rule by rule",
}

GDD = "assets/uploads/upload-1-fast_gdd.md"
OFFERED = [{"name": "fast_gdd.md", "localPath": GDD, "status": "imported"}]
ART = mcp("m", "taonier_prepare_game_art", {"brief": "collect stars"})


def _read(path: str, item_id: str = "r") -> dict[str, Any]:
    return command(item_id, f"cat {path}", [{"type": "read", "path": path}])


@pytest.mark.parametrize(
    ("events", "attachments", "row"),
    [
        ([ART], OFFERED, "not-opened-before-design"),
        ([ART, _read(GDD)], OFFERED, "not-opened-before-design"),
        ([_read(GDD), ART], OFFERED, "read-before-design"),
        ([_read(GDD)], OFFERED, "read-no-design"),
        (
            [
                command(
                    "l", "ls assets/uploads", [{"type": "listFiles", "path": "assets/uploads"}]
                ),
                ART,
            ],
            OFFERED,
            "listed-or-searched-only",
        ),
        (
            [command("s", "rg gdd", [{"type": "search", "query": "fast_gdd.md"}]), ART],
            OFFERED,
            "listed-or-searched-only",
        ),
        (
            [mcp("l", "agc_list_project_files", {"path": "assets"}), ART],
            OFFERED,
            "listed-or-searched-only",
        ),
        ([_read("fast_gdd.md"), ART], OFFERED, "read-different-path"),
        ([_read("docs/upload-1-fast_gdd.md"), ART], OFFERED, "read-different-path"),
        ([ART], [], "no-offered-files"),
        ([command("x", "ls")], OFFERED, "not-opened"),
        (
            [mcp("w", "agc_write_file", {"path": "game/index.html", "content": "x"}), _read(GDD)],
            OFFERED,
            "not-opened-before-design",
        ),
        (
            [completed({"type": "imageView", "id": "i", "path": GDD}), ART],
            OFFERED,
            "read-before-design",
        ),
        # Listed after the design and read after it too: the file was read, so it
        # was not "only listed or searched, never read".
        (
            [
                ART,
                command(
                    "l", "ls assets/uploads", [{"type": "listFiles", "path": "assets/uploads"}]
                ),
                _read(GDD),
            ],
            OFFERED,
            "not-opened-before-design",
        ),
    ],
)
def test_timeline_rows(project: Path, events: list[Any], attachments: list[Any], row: str) -> None:
    outcome = record_turn(project, events, attachments=attachments)
    assert show_turn_file(outcome.turn_file).row == row


def test_hash_mismatch_is_read_true_with_match_false(project: Path) -> None:
    # The file changes between the offer and the read.
    def events() -> Iterator[str]:
        # Read after turn_start: the stream is iterated once the attempt is open.
        (project / GDD).write_text("changed")
        yield json.dumps(_read(GDD))

    outcome = record_turn(project, events(), attachments=OFFERED)
    assert turn_end(outcome.turn_file)["offeredRead"] == [
        {"localPath": GDD, "read": True, "contentSha256Match": False}
    ]


def test_mcp_local_paths_count_as_read(project: Path) -> None:
    outcome = record_turn(
        project, [mcp("m", "agc_import_account_assets", {"localPaths": [GDD]})], attachments=OFFERED
    )
    assert turn_end(outcome.turn_file)["offeredRead"] == [{"localPath": GDD, "read": True}]


@pytest.mark.parametrize(
    ("event", "kind"),
    [
        (mcp("w", "agc_write_file", {"path": "game/main.js"}), "write:game/main.js"),
        (mcp("w", "agc_write_file", {"path": "web/index.html"}), "write:web/index.html"),
        (mcp("g", "agc_generate_image", {"prompt": "hero"}), "mcp:agc_generate_image"),
        (mcp("e", "agc_edit_image", {"prompt": "x"}), "mcp:agc_edit_image"),
        (
            mcp("c", "agc_create_or_derive_resource", {"kind": "x"}),
            "mcp:agc_create_or_derive_resource",
        ),
        (
            completed(
                {
                    "type": "fileChange",
                    "id": "f",
                    "changes": [
                        {"path": "README.md", "kind": "update"},
                        {"path": "game/a.js", "kind": "add"},
                    ],
                }
            ),
            "fileChange:game/a.js",
        ),
    ],
)
def test_first_design_kinds(project: Path, event: dict[str, Any], kind: str) -> None:
    outcome = record_turn(project, [event])
    assert turn_end(outcome.turn_file)["firstDesign"]["kind"] == kind


@pytest.mark.parametrize(
    "event",
    [
        mcp("w", "agc_write_file", {"path": "notes/todo.md"}),
        mcp("p", "agc_browser_playtest", {"attempt": 1}),
        mcp("s", "agc_web_search", {"query": "x"}),
        mcp("a", "agc_list_account_assets", {"query": "x"}),
        completed({"type": "webSearch", "id": "w", "query": "x"}),
        completed(
            {"type": "fileChange", "id": "f", "changes": [{"path": "docs/a.md", "kind": "add"}]}
        ),
    ],
)
def test_not_design_actions(project: Path, event: dict[str, Any]) -> None:
    outcome = record_turn(project, [event])
    assert turn_end(outcome.turn_file)["firstDesign"] is None


def test_split_attempts_counts_orphans_and_groups() -> None:
    records: list[dict[str, Any]] = [
        {"recordType": "direct.codex.item"},
        {"recordType": "direct.codex.turn_start", "n": 1},
        {"recordType": "direct.codex.item", "seq": 1},
        {"recordType": "direct.codex.turn_end"},
        {"recordType": "direct.codex.seal"},
        {"recordType": "direct.codex.turn_start", "n": 2},
        {"recordType": "something.else"},
    ]
    attempts, orphans = split_attempts(records)
    assert orphans == 1
    assert [a.number for a in attempts] == [1, 2]
    assert len(attempts[0].items) == 1
    assert attempts[0].end is not None
    assert attempts[0].seal is not None
    assert attempts[1].other == [{"recordType": "something.else"}]


def test_derive_is_pure_over_records() -> None:
    attempt = Attempt(
        number=1,
        start={
            "attachments": [{"localPath": "a.md", "contentSha256": "1" * 64}, {"localPath": None}]
        },
        items=[
            {
                "itemType": "commandExecution",
                "seq": 1,
                "actions": [{"type": "read", "path": "a.md", "contentSha256": "1" * 64}],
            }
        ],
    )
    assert derive_turn_end(attempt, preset_policy("direct-project")) == {
        "itemCount": 1,
        "itemsTruncated": False,
        "offeredRead": [{"localPath": "a.md", "read": True, "contentSha256Match": True}],
        "firstDesign": None,
    }
    summary = summarize_attempt(attempt, 1, preset_policy("direct-project"))
    assert summary.row == "read-no-design"
    assert summary.to_dict()["offered"][0]["readSeqs"] == [1]
