"""Tests for agc.ledger._policy: the presets and policy files (MCP argument allow-list,
first design action)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from agc.errors import InputError, PolicyInvalidError
from agc.ledger import (
    POLICY_PRESETS,
    check_turn_file,
    default_policy,
    load_policy,
    parse_policy,
    preset_policy,
    show_turn_file,
)
from agc.ledger._policy import DIRECT_PROJECT_POLICY_TOML, GENERIC_POLICY_TOML
from tests.ledger.helpers import completed, items, mcp, record_turn, records, turn_end

REACHES_INSIDE = {
    "agc.ledger._policy": "the built-in presets' TOML texts, whose digests the presets carry",
}


def test_the_default_policy_is_the_generic_preset() -> None:
    policy = default_policy()
    assert policy.name == "generic"
    assert policy == load_policy(None) == load_policy("generic")
    assert policy.tools == {}
    assert policy.default_server is None
    assert policy.design_tools == frozenset()


def test_the_direct_project_preset_knows_its_deployments_tools() -> None:
    policy = load_policy("direct-project")
    assert policy.name == "direct-project"
    assert set(policy.tools) == {
        "agc_list_project_files",
        "agc_write_file",
        "taonier_prepare_game_art",
        "agc_generate_image",
        "agc_edit_image",
        "agc_create_or_derive_resource",
        "agc_list_registered_assets",
        "agc_list_account_assets",
        "agc_import_account_assets",
        "agc_remove_background",
        "agc_browser_playtest",
        "agc_web_search",
    }
    brief = {r.key: r for r in policy.tools["taonier_prepare_game_art"]}["brief"]
    assert (brief.kind, brief.max_chars, brief.chars, brief.sha256) == ("text", 4000, True, True)
    assert policy.default_server == "agc_tools"
    assert policy.is_design_path("game/main.js")
    assert policy.is_design_path("web/index.html")
    assert not policy.is_design_path("assets/index.htm")


def test_custom_policy_file_changes_what_is_kept(project: Path, tmp_path: Path) -> None:
    path = tmp_path / "policy.toml"
    path.write_text(
        'schema_version = 1\n[design]\ntools = ["my_designer"]\n'
        '[tools.my_designer]\nidea = { kind = "text", max_chars = 5 }\n'
    )
    policy = load_policy(path)
    assert policy.name == "policy.toml"
    outcome = record_turn(
        project,
        [mcp("m1", "my_designer", {"idea": "abcdefgh", "secret": "S3CRET"})],
        policy=policy,
    )
    item = items(outcome.turn_file)[0]
    assert item["arguments"] == {"idea": "abcde", "ideaTruncated": True}
    assert item["server"] == "agc_tools"  # no default server in this policy
    assert "S3CRET" not in outcome.turn_file.read_text()


def test_unknown_tool_keeps_no_arguments(project: Path) -> None:
    outcome = record_turn(project, [mcp("m1", "mystery_tool", {"path": "a", "x": "SECRET"})])
    item = items(outcome.turn_file)[0]
    assert "arguments" not in item
    assert item["tool"] == "mystery_tool"
    assert item["status"] == "completed"


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("schema_version = 2", "schema_version"),
        ("not toml ===", "not valid TOML"),
        ("schema_version = 1\nsurprise = 1", "unknown key"),
        ("schema_version = 1\n[tools.t]\nx = 'content'", "kind 'content'"),
        ("schema_version = 1\n[tools.t]\nx = { kind = 'text', max_chars = 5000 }", "max_chars"),
        ("schema_version = 1\n[tools.t]\nx = { kind = 'paths', max_items = 9 }", "max_items"),
        ("schema_version = 1\n[tools.t]\nx = { kind = 'text', chars = 'yes' }", "chars"),
        ("schema_version = 1\n[tools.t]\nx = { kind = 'int', other = 1 }", "unknown field"),
        ("schema_version = 1\n[tools.'bad name']\nx = 'int'", "not a name"),
        ("schema_version = 1\n[design]\ntools = 'x'", "list of strings"),
        ("schema_version = 1\ndefault_server = 'a b'", "default_server"),
    ],
)
def test_invalid_policies_are_rejected_naming_the_problem(text: str, words: str) -> None:
    with pytest.raises(PolicyInvalidError, match=words):
        parse_policy(text.encode(), name="p.toml")


@pytest.mark.parametrize("key", ["content", "output", "result", "diff", "error", "stdout"])
@pytest.mark.parametrize("kind", ["text", "token", "path"])
def test_a_policy_cannot_keep_a_forbidden_argument(key: str, kind: str) -> None:
    # File content, outputs, results, diffs and error text are never written; a policy
    # that kept them would make records that `check` rejects (forbidden-field).
    text = f"schema_version = 1\n[tools.agc_write_file]\n{key} = '{kind}'"
    with pytest.raises(PolicyInvalidError, match=f"{key}.*never"):
        parse_policy(text.encode(), name="p.toml")
    allowed = parse_policy(
        f"schema_version = 1\n[tools.agc_write_file]\n{key} = 'chars'".encode(), name="p.toml"
    )
    assert allowed.tools["agc_write_file"][0].kind == "chars"


def test_policy_not_utf8_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(PolicyInvalidError, match="UTF-8"):
        parse_policy(b"\xff\xfe", name="p.toml")
    with pytest.raises(InputError, match="does not exist"):
        load_policy(tmp_path / "missing.toml")


def test_preset_hashes_are_of_their_toml() -> None:
    direct = hashlib.sha256(DIRECT_PROJECT_POLICY_TOML.encode()).hexdigest()
    assert preset_policy("direct-project").sha256 == direct
    assert (
        preset_policy("generic").sha256 == hashlib.sha256(GENERIC_POLICY_TOML.encode()).hexdigest()
    )
    assert set(POLICY_PRESETS) == {"direct-project", "generic"}


def test_unknown_preset_names_the_presets() -> None:
    with pytest.raises(PolicyInvalidError, match="direct-project, generic"):
        preset_policy("game")


def test_a_file_named_like_a_preset_is_read_with_a_path(tmp_path: Path) -> None:
    path = tmp_path / "generic"
    path.write_text('schema_version = 1\ndefault_server = "mine"\n')
    assert load_policy("generic").default_server is None
    assert load_policy(path).default_server == "mine"
    assert load_policy(str(path)).name == "generic"


def test_generic_preset_keeps_no_arguments_and_any_file_change_is_the_first_design(
    project: Path,
) -> None:
    generic = preset_policy("generic")
    assert generic.tools == {}
    assert generic.default_server is None
    events = [
        mcp("m1", "taonier_prepare_game_art", {"brief": "KEEP-OUT"}),
        completed(
            {"type": "fileChange", "id": "f1", "changes": [{"path": "src/app.py", "kind": "add"}]}
        ),
    ]
    outcome = record_turn(project, events, policy=generic)
    mcp_item, _change = items(outcome.turn_file)
    assert "arguments" not in mcp_item
    assert mcp_item["server"] == "agc_tools"  # recorded: generic has no default server
    assert "KEEP-OUT" not in outcome.turn_file.read_text()
    assert turn_end(outcome.turn_file)["firstDesign"] == {"kind": "fileChange:src/app.py", "seq": 2}
    # the same events under direct-project: the art tool is the first design action
    direct = record_turn(project, events, turn_id="direct-1")
    assert turn_end(direct.turn_file)["firstDesign"]["kind"] == "mcp:taonier_prepare_game_art"


def test_check_and_show_recompute_each_attempt_with_the_preset_it_names(project: Path) -> None:
    change = completed(
        {"type": "fileChange", "id": "f1", "changes": [{"path": "src/a.py", "kind": "add"}]}
    )
    record_turn(project, [change], policy=preset_policy("generic"))
    outcome = record_turn(project, [change])  # second attempt: direct-project
    report = check_turn_file(outcome.turn_file)
    assert report.ok, report.findings
    assert not [f for f in report.findings if f.code == "policy-mismatch"]
    assert show_turn_file(outcome.turn_file, attempt=1).first_design == {
        "kind": "fileChange:src/a.py",
        "seq": 1,
    }
    assert show_turn_file(outcome.turn_file, attempt=2).first_design is None
    # an explicit policy is used for every attempt: attempt 1 then differs and warns
    forced = check_turn_file(outcome.turn_file, policy=preset_policy("direct-project"))
    assert {f.code for f in forced.findings} == {"policy-mismatch", "turn-end-mismatch"}


def test_a_turn_file_of_an_earlier_direct_project_digest_is_not_a_mismatch() -> None:
    # Recorded by an earlier agc, whose direct-project TOML had other comments (so
    # another digest): the file names the same preset and checks without a warning.
    path = Path(__file__).parent / "golden" / "earlier" / "Abc123-def.jsonl"
    digest = records(path)[0]["policySha256"]
    assert digest != preset_policy("direct-project").sha256
    assert preset_policy("direct-project").names_digest(digest)
    report = check_turn_file(path)
    assert report.ok
    assert report.findings == ()
