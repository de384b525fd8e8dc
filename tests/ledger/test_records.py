"""Tests for agc.ledger._records: per-type fields and limits."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agc.ledger import FORBIDDEN_KEYS, CompletedItem, parse_policy, preset_policy
from agc.ledger._events.appserver import pick_fields
from agc.ledger._project import FileHash
from agc.ledger._records import RecordContext, item_record, turn_start_record
from agc.ledger._sanitize import PathSanitizer

REACHES_INSIDE = {
    "agc.ledger._events.appserver": "the app-server field picker, on hand-built notifications",
    "agc.ledger._project": "attachment hashing (FileHash, Project) on its own",
    "agc.ledger._records": "builds records from items directly",
    "agc.ledger._sanitize": "the sanitizer's rules on single values",
}

ROOT = "/home/alice/proj"


def _ctx(hashes: dict[str, FileHash] | None = None) -> RecordContext:
    table = hashes or {}
    return RecordContext(
        client_turn_id="Abc123-def",
        sanitizer=PathSanitizer([ROOT]),
        hash_file=lambda p: table.get(p, FileHash(hash_skipped="missing")),
        policy=preset_policy("direct-project"),
    )


def _item(item_type: str, **fields: Any) -> dict[str, Any]:
    record = item_record(
        _ctx(),
        CompletedItem("app-server", item_type, item_type, "id-1", "completed", fields),
        seq=1,
        recorded_at_ms=5,
    )
    assert record is not None
    return record


def test_common_fields() -> None:
    record = item_record(
        _ctx(),
        CompletedItem("exec", "webSearch", "web_search", "bad id!", "weird status!!", {}),
        seq=4,
        recorded_at_ms=9,
    )
    assert record == {
        "recordType": "direct.codex.item",
        "clientTurnId": "Abc123-def",
        "seq": 4,
        "itemId": None,
        "itemType": "webSearch",
        "status": None,
        "recordedAtMs": 9,
        "source": "exec",
        "sourceType": "web_search",
    }


@pytest.mark.parametrize(
    "kind", ["agentMessage", "userMessage", "plan", "reasoning", "contextCompaction", "hookPrompt"]
)
def test_skipped_types_give_no_record(kind: str) -> None:
    item = CompletedItem("app-server", kind, kind, "i", "completed", {"text": "x"})
    assert item_record(_ctx(), item, seq=1, recorded_at_ms=1) is None


def test_command_fields_actions_and_limits() -> None:
    actions = [{"type": "listFiles", "path": f"{ROOT}/assets"}] * 70
    actions[0] = {"type": "search", "query": "fast_gdd", "path": "assets"}
    actions[1] = {"type": "unknown", "command": "weird /etc/x"}
    actions[2] = {"type": "listFiles"}
    record = _item(
        "commandExecution",
        command="echo " + "x" * 300,
        exitCode=-1,
        durationMs=12,
        commandActions=actions,
    )
    assert len(record["command"]) == 240
    assert record["commandTruncated"] is True
    assert record["exitCode"] == -1
    assert record["durationMs"] == 12
    assert len(record["actions"]) == 64
    assert record["actionsOmitted"] == 6
    assert record["actions"][:4] == [
        {"type": "search", "query": "fast_gdd", "path": "assets"},
        {"type": "unknown"},
        {"type": "listFiles", "path": None},
        {"type": "listFiles", "path": "assets"},
    ]


def test_read_action_of_control_plane_path_is_rejected_and_not_hashed() -> None:
    seen: list[str] = []

    def hash_file(path: str) -> FileHash:
        seen.append(path)
        return FileHash(content_sha256="0" * 64)

    ctx = RecordContext(
        "Abc123-def", PathSanitizer([ROOT]), hash_file, preset_policy("direct-project")
    )
    item = CompletedItem(
        "app-server",
        "commandExecution",
        "commandExecution",
        "i",
        "completed",
        {"commandActions": [{"type": "read", "path": f"{ROOT}/.agent/agent.db"}]},
    )
    record = item_record(ctx, item, seq=1, recorded_at_ms=1)
    assert record is not None
    assert record["actions"] == [
        {"type": "read", "pathRejected": True, "pathRejectedReason": "control-plane"}
    ]
    assert seen == []


def test_mcp_error_kind_and_default_server() -> None:
    record = _item(
        "mcpToolCall",
        server="agc_tools",
        tool="agc_browser_playtest",
        hasError=True,
        arguments={"attempt": 2},
    )
    assert record["errorKind"] == "error"
    assert "server" not in record
    assert record["arguments"] == {"attempt": 2}
    other = _item("mcpToolCall", server="other", tool="x", resultIsError=True)
    assert other["server"] == "other"
    assert other["errorKind"] == "resultIsError"
    redacted = _item("mcpToolCall", tool="bad tool name")
    assert redacted["tool"] is None
    assert redacted["toolRedacted"] is True


def test_mcp_list_arguments_are_bounded_and_cleaned() -> None:
    record = _item(
        "mcpToolCall",
        tool="agc_import_account_assets",
        arguments={
            "assetIds": [f"a{i}" for i in range(10)] + ["bad id"],
            "localPaths": [f"{ROOT}/a.png", "../escape.png", "b.png"],
        },
    )
    assert record["arguments"] == {
        "assetIds": [f"a{i}" for i in range(8)],
        "assetIdsOmitted": 3,
        "localPaths": ["a.png", "b.png"],
        "localPathsRejected": 1,
    }


def test_mcp_arguments_given_as_json_text_are_parsed() -> None:
    record = _item(
        "mcpToolCall",
        tool="agc_web_search",
        arguments=json.dumps({"query": "q" * 500, "maxResults": 3}),
    )
    assert record["arguments"] == {"query": "q" * 400, "queryTruncated": True, "maxResults": 3}


def test_file_change_move_path_outside_drops_the_path() -> None:
    record = _item(
        "fileChange",
        changes=[
            {"path": "a.md", "kind": "update", "movePath": "/etc/a.md"},
            {"path": "b.md", "kind": "update", "movePath": "c.md"},
            {"path": "d.md", "kind": "rename"},
        ],
    )
    assert record["changes"] == [
        {"kind": "update", "pathRejected": True},
        {"path": "b.md", "kind": "update", "movePath": "c.md"},
        {"path": "d.md", "kind": "unknown"},
    ]


def test_image_view_is_hashed_web_search_cut_function_and_dynamic_tools() -> None:
    ctx = _ctx({"shot.png": FileHash(content_sha256="a" * 64)})
    image = item_record(
        ctx,
        CompletedItem(
            "app-server", "imageView", "imageView", "i", "completed", {"path": f"{ROOT}/shot.png"}
        ),
        seq=1,
        recorded_at_ms=1,
    )
    assert image is not None
    assert (image["path"], image["contentSha256"]) == ("shot.png", "a" * 64)
    assert _item("webSearch", query="w" * 500)["query"] == "w" * 400
    assert _item("functionCallOutput", name="read_skill", namespace="skills", output="OUT") == {
        **_item("functionCallOutput"),
        "name": "read_skill",
        "namespace": "skills",
    }
    dynamic = _item(
        "dynamicToolCall", tool="t", namespace="n", durationMs=3, success=False, arguments={"x": 1}
    )
    assert {k: dynamic[k] for k in ("tool", "namespace", "durationMs", "success")} == {
        "tool": "t",
        "namespace": "n",
        "durationMs": 3,
        "success": False,
    }
    assert "arguments" not in dynamic


def test_oversized_record_keeps_structure_only() -> None:
    # 64 read actions with ~1020-character paths of 4-byte characters: over 256 KiB.
    long = "\U0001f600" * 1020
    record = _item(
        "commandExecution",
        commandActions=[{"type": "read", "path": long + str(i)} for i in range(64)],
    )
    assert record["fieldsOmitted"] == "too-large"
    assert "actions" not in record


def test_turn_start_keeps_eight_attachments_and_counts_the_rest() -> None:
    attachments: list[object] = [{"name": f"f{i}.md", "localPath": f"f{i}.md"} for i in range(10)]
    attachments[0] = "not an object"
    record = turn_start_record(
        _ctx(), prompt="hi", attachments=attachments, attempt=1, recorded_at_ms=1
    )
    assert len(record["attachments"]) == 8
    assert record["attachmentsOmitted"] == 2
    assert record["attachments"][0] == {
        "name": None,
        "localPath": None,
        "mediaType": None,
        "size": None,
        "status": None,
    }
    assert record["sidecarPresent"] is True
    assert record["promptSha256"] == hashlib.sha256(b"hi").hexdigest()


def test_turn_start_attachment_with_status_only_is_a_sidecar() -> None:
    record = turn_start_record(
        _ctx(),
        prompt="",
        attachments=[{"name": "x", "status": "failed"}],
        attempt=1,
        recorded_at_ms=1,
    )
    assert record["sidecarPresent"] is True
    assert record["attachments"][0]["localPath"] is None


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=12,
)


@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    st.sampled_from(
        [
            "commandExecution",
            "mcpToolCall",
            "fileChange",
            "imageView",
            "webSearch",
            "functionCall",
            "dynamicToolCall",
            "zzz",
        ]
    ),
    st.dictionaries(
        st.sampled_from(
            [
                "command",
                "commandActions",
                "arguments",
                "changes",
                "path",
                "query",
                "tool",
                "server",
                "name",
                "namespace",
                "durationMs",
                "exitCode",
                "hasError",
            ]
        ),
        JSON,
    ),
    st.sampled_from(
        [
            "agc_write_file",
            "taonier_prepare_game_art",
            "agc_import_account_assets",
            "agc_generate_image",
        ]
    ),
)
def test_property_any_fields_give_a_json_record_without_forbidden_keys(
    kind: str, fields: dict[str, Any], tool: str
) -> None:
    if kind == "mcpToolCall" and "tool" not in fields:
        fields["tool"] = tool
    item = CompletedItem("app-server", kind, kind, "i", "completed", fields)
    record = item_record(_ctx(), item, seq=1, recorded_at_ms=1)
    assert record is not None
    text = json.dumps(record, allow_nan=False, ensure_ascii=False)
    text.encode("utf-8")  # no lone surrogates

    def keys(value: object) -> set[str]:
        if isinstance(value, dict):
            return set(value) | {k for v in value.values() for k in keys(v)}
        if isinstance(value, list):
            return {k for v in value for k in keys(v)}
        return set()

    assert not keys(record) & FORBIDDEN_KEYS


def test_oversized_mcp_record_cuts_texts_and_keeps_structure() -> None:
    rules = "\n".join(
        f'a{i} = {{ kind = "text", max_chars = 4000, chars = true }}' for i in range(40)
    )
    policy = parse_policy(f"schema_version = 1\n[tools.big]\n{rules}\n".encode(), name="big.toml")
    ctx = RecordContext("Abc123-def", PathSanitizer([ROOT]), lambda _path: FileHash(), policy)
    args = {f"a{i}": "\U0001f600" * 4000 for i in range(40)}
    record = item_record(
        ctx,
        CompletedItem(
            "app-server",
            "mcpToolCall",
            "mcpToolCall",
            "i",
            "completed",
            {"tool": "big", "arguments": args},
        ),
        seq=1,
        recorded_at_ms=1,
    )
    assert record is not None
    assert "fieldsOmitted" not in record
    assert record["arguments"]["a0"] == "\U0001f600" * 240
    assert record["arguments"]["a0Truncated"] is True
    assert record["arguments"]["a0Chars"] == 4000


@pytest.mark.parametrize("kind", [["add"], {"type": ["add"]}, {"type": {"x": 1}}, 3])
def test_file_change_kind_of_unexpected_shape_is_unknown(kind: object) -> None:
    # An app-server change whose kind is not a word (a list, an object whose "type" is
    # not a string) keeps its path with kind "unknown"; it never drops the item.
    fields = pick_fields(
        "fileChange", {"changes": [{"path": "game/a.js", "kind": kind, "diff": "D"}]}
    )
    assert _item("fileChange", **fields)["changes"] == [{"path": "game/a.js", "kind": "unknown"}]


def test_record_of_64_long_ascii_reads_keeps_its_actions() -> None:
    # docs/ledger.md: a record is cut only when its line would exceed 256 KiB; 64 read
    # actions of ~1000-character ASCII paths (about 70 KB) keep their read evidence.
    long = "d/" * 495 + "x"
    record = _item(
        "commandExecution",
        commandActions=[{"type": "read", "path": f"{long}{i}.md"} for i in range(64)],
    )
    assert "fieldsOmitted" not in record
    assert len(record["actions"]) == 64
    assert 64 * 1024 < len(json.dumps(record)) <= 256 * 1024
