"""Tests for agc.ledger._policy: the TOML allow-list (seed 000 §5.3)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from agc.errors import InputError, PolicyInvalidError
from agc.ledger._policy import BUILTIN_POLICY_TOML, builtin_policy, load_policy, parse_policy
from tests.ledger.helpers import items, mcp, record_turn


def test_builtin_policy_is_the_seed_table() -> None:
    policy = builtin_policy()
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
    # §5: file content, outputs, results, diffs and error text are never written; a
    # policy that kept them would make records that `check` rejects (forbidden-field).
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


def test_builtin_policy_hash_is_of_its_toml() -> None:
    assert builtin_policy().sha256 == hashlib.sha256(BUILTIN_POLICY_TOML.encode()).hexdigest()
