"""Each record kind end to end, through ``record_turn`` and the bytes it writes: the
turn_start, item, turn_end and agent.db contracts of docs/ledger.md, fail-open and
truncation. (The deeper cases are in the module tests beside this file.)"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from agc.errors import WriteFailedError
from agc.integrity import check_run, open_run
from agc.ledger import _writer as ledger_writer
from tests.ledger.conftest import GDD_TEXT
from tests.ledger.helpers import (
    TURN_ID,
    command,
    completed,
    items,
    mcp,
    record_turn,
    records,
    turn_end,
)

REACHES_INSIDE = {
    "agc.ledger._writer": "makes the turn file writer fail mid-attempt",
}

GDD = "assets/uploads/upload-1-fast_gdd.md"
OFFERED = [
    {
        "name": "fast_gdd.md",
        "localPath": GDD,
        "mediaType": "text/markdown",
        "size": 55,
        "status": "imported",
    }
]


def _start(path: Path) -> dict[str, Any]:
    return records(path)[0]


# turn_start: prompt hash, cleaned attachment paths
def test_turn_start_prompt_hash_is_stable_sha256_of_the_original_text(project: Path) -> None:
    first = record_turn(project, [], prompt="做成游戏 ✓", turn_id="stable-1")
    second = record_turn(project, [], prompt="做成游戏 ✓", turn_id="stable-2")
    expected = hashlib.sha256("做成游戏 ✓".encode()).hexdigest()
    assert _start(first.turn_file)["promptSha256"] == expected
    assert _start(second.turn_file)["promptSha256"] == expected
    assert _start(first.turn_file)["promptChars"] == 6


def test_turn_start_sidecar_path_appears_cleaned(project: Path) -> None:
    absolute = dict(OFFERED[0], localPath=str(project / "assets\\uploads/./upload-1-fast_gdd.md"))
    outcome = record_turn(project, [], attachments=[absolute])
    attachment = _start(outcome.turn_file)["attachments"][0]
    assert attachment["localPath"] == GDD
    assert str(project) not in outcome.turn_file.read_text()


def test_turn_start_dotdot_path_does_not_enter_attachments(project: Path) -> None:
    bad = dict(OFFERED[0], localPath="../../etc/passwd")
    outcome = record_turn(project, [], attachments=[bad])
    attachment = _start(outcome.turn_file)["attachments"][0]
    assert attachment["localPath"] is None
    assert attachment["pathRejected"] is True
    assert "etc/passwd" not in outcome.turn_file.read_text()
    assert "contentSha256" not in attachment


def test_turn_start_without_attachments_has_no_sidecar(project: Path) -> None:
    outcome = record_turn(project, [])
    start = _start(outcome.turn_file)
    assert start["attachments"] == []
    assert start["sidecarPresent"] is False
    assert start["recordType"] == "direct.codex.turn_start"


# attachment hashes
def test_attachment_content_sha256_equals_direct_hash(project: Path) -> None:
    outcome = record_turn(project, [], attachments=OFFERED)
    attachment = _start(outcome.turn_file)["attachments"][0]
    assert attachment["contentSha256"] == hashlib.sha256(GDD_TEXT.encode()).hexdigest()
    assert attachment["hashSkipped"] is None


def test_attachment_missing_file_is_hash_skipped_missing(project: Path) -> None:
    gone = dict(OFFERED[0], localPath="assets/uploads/not-there.md")
    outcome = record_turn(project, [], attachments=[gone])
    attachment = _start(outcome.turn_file)["attachments"][0]
    assert attachment["hashSkipped"] == "missing"
    assert "contentSha256" not in attachment


def test_attachment_over_2_mib_is_hash_skipped_too_large(project: Path) -> None:
    (project / "big.bin").write_bytes(b"x" * (2 * 1024 * 1024 + 1))
    (project / "edge.bin").write_bytes(b"x" * (2 * 1024 * 1024))
    outcome = record_turn(
        project, [], attachments=[{"localPath": "big.bin"}, {"localPath": "edge.bin"}]
    )
    big, edge = _start(outcome.turn_file)["attachments"]
    assert big["hashSkipped"] == "too-large"
    assert "contentSha256" not in big
    assert edge["hashSkipped"] is None  # exactly 2 MiB is still hashed


# a read action with an absolute path
def test_read_action_absolute_path_becomes_relative_with_hash(project: Path) -> None:
    events = [
        command(
            "c1",
            f"cat {project}/{GDD}",
            [{"type": "read", "command": "cat", "name": "x", "path": f"{project}/{GDD}"}],
        )
    ]
    outcome = record_turn(project, events)
    data = outcome.turn_file.read_text()
    action = items(outcome.turn_file)[0]["actions"][0]
    assert action == {
        "type": "read",
        "path": GDD,
        "contentSha256": hashlib.sha256(GDD_TEXT.encode()).hexdigest(),
        "hashSkipped": None,
    }
    assert "OUTPUT-SHOULD-NEVER-APPEAR" not in data
    assert "aggregatedOutput" not in data


# a read path that cannot be made relative
def test_read_outside_project_is_path_rejected_without_windows_path(project: Path) -> None:
    win = "C:\\Users\\bob\\Desktop\\fast_gdd.md"
    events = [
        command(
            "c1",
            f"type {win}",
            [{"type": "read", "command": "type", "name": "fast_gdd.md", "path": win}],
        )
    ]
    outcome = record_turn(project, events)
    data = outcome.turn_file.read_text()
    item = items(outcome.turn_file)[0]
    assert item["actions"] == [
        {"type": "read", "pathRejected": True, "pathRejectedReason": "outside"}
    ]
    assert item["commandRedacted"] is True
    assert "command" not in item
    assert "C:\\\\" not in data
    assert "Users" not in data


# an art tool call keeps its brief
def test_art_call_keeps_brief_and_drops_result(project: Path) -> None:
    brief = "俯视角收集冒险小游戏 玩家收集星星"
    outcome = record_turn(
        project, [mcp("m1", "taonier_prepare_game_art", {"mode": "full", "brief": brief})]
    )
    data = outcome.turn_file.read_text()
    item = items(outcome.turn_file)[0]
    assert item["arguments"]["brief"] == brief
    assert item["arguments"]["briefChars"] == len(brief)
    assert item["arguments"]["briefSha256"] == hashlib.sha256(brief.encode()).hexdigest()
    assert "RESULT-SHOULD-NEVER-APPEAR" not in data
    assert '"result"' not in data


# a write tool keeps its path and the content length only
def test_write_file_keeps_path_and_content_chars_not_content(project: Path) -> None:
    content = "<html>SECRET-CONTENT</html>"
    outcome = record_turn(
        project, [mcp("m1", "agc_write_file", {"path": "game/index.html", "content": content})]
    )
    item = items(outcome.turn_file)[0]
    assert item["arguments"] == {"path": "game/index.html", "contentChars": len(content)}
    assert "SECRET-CONTENT" not in outcome.turn_file.read_text()


# a generation prompt of 32k characters is cut
def test_generate_image_32k_prompt_keeps_4000_chars_length_and_hash(project: Path) -> None:
    prompt = "p" * 16_000 + "q" * 16_000
    outcome = record_turn(
        project, [mcp("m1", "agc_generate_image", {"prompt": prompt, "kind": "sprite"})]
    )
    args = items(outcome.turn_file)[0]["arguments"]
    assert args["prompt"] == "p" * 4000
    assert args["promptChars"] == 32_000
    assert args["promptSha256"] == hashlib.sha256(prompt.encode()).hexdigest()
    assert "q" * 10 not in outcome.turn_file.read_text()


# fileChange: paths and kinds, never the diff
def test_file_change_keeps_path_and_kind_not_diff(project: Path) -> None:
    event = completed(
        {
            "type": "fileChange",
            "id": "f1",
            "status": "completed",
            "changes": [
                {"path": f"{project}/game/main.js", "kind": {"type": "add"}, "diff": "+DIFF-LINE"}
            ],
        }
    )
    outcome = record_turn(project, [event])
    item = items(outcome.turn_file)[0]
    assert item["changes"] == [{"path": "game/main.js", "kind": "add"}]
    assert "DIFF-LINE" not in outcome.turn_file.read_text()


# offeredRead
def test_offered_read_true_when_read_path_equals_offered(project: Path) -> None:
    events = [command("c1", f"cat {GDD}", [{"type": "read", "path": str(project / GDD)}])]
    outcome = record_turn(project, events, attachments=OFFERED)
    assert turn_end(outcome.turn_file)["offeredRead"] == [
        {"localPath": GDD, "read": True, "contentSha256Match": True}
    ]


def test_offered_read_false_when_only_listed_or_searched(project: Path) -> None:
    events = [
        command("c1", "ls assets/uploads", [{"type": "listFiles", "path": "assets/uploads"}]),
        command("c2", "rg gdd", [{"type": "search", "query": "fast_gdd", "path": None}]),
    ]
    outcome = record_turn(project, events, attachments=OFFERED)
    assert turn_end(outcome.turn_file)["offeredRead"] == [{"localPath": GDD, "read": False}]


# firstDesign
def test_first_design_is_the_art_call_after_a_read(project: Path) -> None:
    events = [
        command("c1", f"cat {GDD}", [{"type": "read", "path": GDD}]),
        mcp("m1", "agc_list_project_files", {"path": "assets"}),
        mcp("m2", "taonier_prepare_game_art", {"mode": "full", "brief": "collect stars"}),
    ]
    outcome = record_turn(project, events, attachments=OFFERED)
    assert turn_end(outcome.turn_file)["firstDesign"] == {
        "kind": "mcp:taonier_prepare_game_art",
        "seq": 3,
        "tool": "taonier_prepare_game_art",
        "briefPreview": "collect stars",
    }


def test_first_design_is_null_with_only_a_read(project: Path) -> None:
    events = [command("c1", f"cat {GDD}", [{"type": "read", "path": GDD}])]
    outcome = record_turn(project, events, attachments=OFFERED)
    assert turn_end(outcome.turn_file)["firstDesign"] is None


# the 257th item
def test_item_257_writes_items_truncated_and_turn_end_says_so(project: Path) -> None:
    events = [command(f"c{i}", "ls", [{"type": "listFiles", "path": "."}]) for i in range(260)]
    outcome = record_turn(project, events)
    written = records(outcome.turn_file)
    kinds = [r["recordType"] for r in written]
    assert kinds.count("direct.codex.item") == 256
    assert kinds.count("direct.codex.items_truncated") == 1
    assert kinds.index("direct.codex.items_truncated") == 257  # after turn_start + 256 items
    assert turn_end(outcome.turn_file)["itemsTruncated"] is True
    assert turn_end(outcome.turn_file)["itemCount"] == 256
    assert outcome.items_truncated is True


# the agent.db summary
def test_agent_db_summary_has_relative_turn_log_offered_read_and_brief_preview(
    project: Path,
) -> None:
    brief = "B" * 300
    events = [mcp("m1", "taonier_prepare_game_art", {"brief": brief})]
    record_turn(project, events, attachments=OFFERED)
    with sqlite3.connect(project / ".agent" / "agent.db") as conn:
        rows = conn.execute(
            "SELECT record_type, record_key, body FROM agent_records ORDER BY id"
        ).fetchall()
    assert [(r[0], r[1]) for r in rows] == [("direct.codex.turn", TURN_ID)]
    body = json.loads(rows[0][2])
    assert body["turnLog"] == f".agent/runtime/direct-codex/turns/{TURN_ID}.jsonl"
    assert body["offeredRead"] == [{"localPath": GDD, "read": False}]
    assert body["firstDesign"] == {
        "kind": "mcp:taonier_prepare_game_art",
        "seq": 1,
        "briefPreview": "B" * 240,
    }
    assert body["auditWriteFailed"] is False
    assert {"updatedAt", "schemaVersion"} <= set(body)


# an injected write failure (fail-open)
def test_injected_write_failure_never_raises_and_sets_audit_write_failed(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = ledger_writer.TurnLedgerFile.write
    calls = {"n": 0}

    def flaky(self: ledger_writer.TurnLedgerFile, record: object) -> int:
        calls["n"] += 1
        if calls["n"] == 2:  # the first item
            raise WriteFailedError("disk full (injected)", records_written=1)
        return original(self, record)  # type: ignore[arg-type]

    monkeypatch.setattr(ledger_writer.TurnLedgerFile, "write", flaky)
    events = [command("c1", "ls"), command("c2", "ls")]
    outcome = record_turn(project, events, attachments=OFFERED)  # must not raise
    assert outcome.audit_write_failed is True
    assert any("disk full" in e for e in outcome.errors)
    assert outcome.summary["auditWriteFailed"] is True
    assert outcome.db_written is True


# an unknown item type
def test_unknown_item_type_keeps_only_common_fields(project: Path) -> None:
    event = completed(
        {"type": "holoDeck", "id": "h1", "status": "completed", "secret": "SECRET", "path": "/x"}
    )
    outcome = record_turn(project, [event])
    item = items(outcome.turn_file)[0]
    assert set(item) == {
        "recordType",
        "clientTurnId",
        "seq",
        "itemId",
        "itemType",
        "status",
        "recordedAtMs",
        "source",
    }
    assert item["itemType"] == "holoDeck"
    assert "SECRET" not in outcome.turn_file.read_text()


# the run writers are unaffected by the ledger
def test_run_writers_unchanged_by_the_ledger(store: Path) -> None:
    with open_run("r1", store=store) as run:
        run.transcript.write({"role": "user", "content": "hi"})
    assert check_run("r1", store).complete
