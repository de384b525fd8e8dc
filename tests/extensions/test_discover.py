"""Discovery: every Skill and MCP server of a source is its own item; the rest is noted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agc.extensions import ExtensionRepository
from tests.extensions.builders import (
    access_plugins,
    bare_map_mcp_json,
    codex_config_two_servers,
    plugin_with_two_skills_and_mcp,
    write_script,
    write_skill,
    zip_folder,
)


def _summary(items: object) -> list[tuple[str, str, str]]:
    return [(item.type, item.name, item.source_relative_path) for item in items]  # type: ignore[attr-defined]


@pytest.mark.parametrize("manifest", [".codex-plugin", ".claude-plugin"])
def test_a_plugin_gives_its_skills_and_servers_and_nothing_else(
    tmp_path: Path, store: Path, manifest: str
) -> None:
    plugin = plugin_with_two_skills_and_mcp(tmp_path, manifest=manifest)
    result = ExtensionRepository(store).import_path(plugin)
    assert _summary(result.items) == [
        ("skill", "art-skill", "skills/art-skill/SKILL.md"),
        ("skill", "code-skill", "skills/code-skill/SKILL.md"),
        ("mcp", "search", ".mcp.json"),
    ]
    assert all(item.enabled and item.status == "enabled" for item in result.items)
    notes = " | ".join(result.notes)
    assert "hooks ignored" in notes
    assert "apps ignored" in notes
    search = result.items[2]
    assert search.mcp is not None
    assert search.mcp.config == {
        "command": "node",
        "args": ["./server/index.js", "--port", "0"],
        "env": {"SEARCH_MODE": "fast"},
    }
    assert search.mcp.plugin_root == "."


def test_a_zipped_plugin_in_a_top_folder_is_found_inside_it(tmp_path: Path, store: Path) -> None:
    plugin = plugin_with_two_skills_and_mcp(tmp_path / "src")
    archive = zip_folder(plugin, tmp_path / "my-plugin.zip", top="my-plugin")
    result = ExtensionRepository(store).import_path(archive)
    assert _summary(result.items) == [
        ("skill", "art-skill", "my-plugin/skills/art-skill/SKILL.md"),
        ("skill", "code-skill", "my-plugin/skills/code-skill/SKILL.md"),
        ("mcp", "search", "my-plugin/.mcp.json"),
    ]
    assert result.source.original_name == "my-plugin.zip"
    assert result.source.kind == "zip"


@pytest.mark.parametrize("wrapped", [True, False])
def test_inline_plugin_servers_are_items(tmp_path: Path, store: Path, wrapped: bool) -> None:
    plugin = tmp_path / "inline"
    servers = {"db": {"command": "uvx", "args": ["db-mcp"]}, "_note": "x"}
    (plugin / ".codex-plugin").mkdir(parents=True)
    (plugin / ".codex-plugin" / "plugin.json").write_text(
        json.dumps(
            {"name": "inline", "mcpServers": {"mcpServers": servers} if wrapped else servers}
        )
    )
    result = ExtensionRepository(store).import_path(plugin)
    assert _summary(result.items) == [("mcp", "db", ".codex-plugin/plugin.json")]
    assert result.items[0].mcp is not None
    assert result.items[0].mcp.config_dir == "."


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("skills", "must start with ./"),
        ("/abs/skills", "must start with ./"),
        ("./../outside", "stay inside the plugin"),
        ("./", "must not be ./ itself"),
        (7, "expected a ./ path"),
        ("./skills\x00/../../outside", "cannot hold a NUL"),
        (["./a\x00b"], "cannot hold a NUL"),
    ],
)
def test_a_manifest_path_that_is_not_dot_slash_inside_is_ignored_with_a_note(
    tmp_path: Path, store: Path, value: object, why: str
) -> None:
    plugin = tmp_path / "p"
    write_skill(plugin / "elsewhere" / "hidden", "hidden")
    (plugin / ".codex-plugin").mkdir(parents=True)
    (plugin / ".codex-plugin" / "plugin.json").write_text(json.dumps({"skills": value}))
    (tmp_path / "outside").mkdir()
    write_skill(tmp_path / "outside" / "escaped", "escaped")
    result = ExtensionRepository(store).import_path(plugin)
    assert [item.type for item in result.items] == ["unknown"]
    assert any(why in note for note in result.notes), result.notes


def test_a_plugin_with_only_hooks_and_apps_is_kept_as_unknown(tmp_path: Path, store: Path) -> None:
    plugin = tmp_path / "hooks-only"
    (plugin / ".codex-plugin").mkdir(parents=True)
    (plugin / ".codex-plugin" / "plugin.json").write_text(
        json.dumps({"name": "hooks-only", "hooks": "./hooks.json", "apps": "./.app.json"})
    )
    result = ExtensionRepository(store).import_path(plugin)
    assert [(item.type, item.enabled, item.status) for item in result.items] == [
        ("unknown", False, "unknown")
    ]
    assert any("hooks ignored" in note for note in result.notes)


def test_a_broken_manifest_is_noted_and_the_default_places_searched(
    tmp_path: Path, store: Path
) -> None:
    plugin = tmp_path / "p"
    write_skill(plugin / "skills" / "still-found", "still-found")
    (plugin / ".codex-plugin").mkdir(parents=True)
    (plugin / ".codex-plugin" / "plugin.json").write_text("{ not json")
    result = ExtensionRepository(store).import_path(plugin)
    assert [item.name for item in result.items] == ["still-found"]
    assert any("not valid JSON" in note for note in result.notes)


def test_a_codex_config_toml_gives_one_item_per_server(tmp_path: Path, store: Path) -> None:
    config = codex_config_two_servers(tmp_path / "cfg")
    result = ExtensionRepository(store).import_path(config)
    assert _summary(result.items) == [
        ("mcp", "search", "config.toml"),
        ("mcp", "filesystem", "config.toml"),
        ("mcp", "docs", "config.toml"),
    ]
    search, filesystem, docs = (item.mcp for item in result.items)
    assert search is not None
    assert filesystem is not None
    assert docs is not None
    assert search.config["env"] == {"SEARCH_REGION": "eu"}
    assert search.config["startup_timeout_sec"] == 20
    assert "required" not in filesystem.config
    assert "enabled" not in filesystem.config
    assert docs.config["url"] == "https://docs.example.com/mcp"


def test_the_bare_map_mcp_json_gives_its_servers_and_skips_the_comment(
    tmp_path: Path, store: Path
) -> None:
    path = bare_map_mcp_json(tmp_path)
    result = ExtensionRepository(store).import_path(path)
    assert _summary(result.items) == [
        ("mcp", "github", ".mcp.json"),
        ("mcp", "sqlite", ".mcp.json"),
    ]
    github, sqlite = (item.mcp for item in result.items)
    assert github is not None
    assert sqlite is not None
    assert github.config["bearer_token_env_var"] == "GITHUB_TOKEN"
    assert github.config["http_headers"] == {"X-Client": "agc"}
    assert sqlite.config["env_vars"] == ["SQLITE_KEY"]


def test_a_folder_with_root_and_nested_skills_and_an_mcp_json(tmp_path: Path, store: Path) -> None:
    folder = tmp_path / "my-package"
    write_skill(folder, "package-skill")
    write_skill(folder / "skills" / "art-skill", "art-skill")
    write_skill(folder / "direct", "direct")
    write_skill(folder / "skills" / "art-skill" / "deeper" / "nested", "nested")
    (folder / "mcp.json").write_text(json.dumps({"mcpServers": {"search": {"command": "s"}}}))
    result = ExtensionRepository(store).import_path(folder)
    assert _summary(result.items) == [
        ("skill", "package-skill", "SKILL.md"),
        ("skill", "direct", "direct/SKILL.md"),
        ("skill", "art-skill", "skills/art-skill/SKILL.md"),
        ("mcp", "search", "mcp.json"),
    ]


def test_a_skill_with_broken_frontmatter_is_an_item_with_last_error(
    tmp_path: Path, store: Path
) -> None:
    folder = tmp_path / "pkg"
    write_skill(folder / "skills" / "fine", "fine")
    broken = folder / "skills" / "broken"
    broken.mkdir(parents=True)
    (broken / "SKILL.md").write_text("---\nname: [oops\ndescription: x\n---\nbody\n")
    result = ExtensionRepository(store).import_path(folder)
    by_name = {item.name: item for item in result.items}
    assert set(by_name) == {"fine", "broken"}
    assert by_name["broken"].last_error is not None
    assert "not valid YAML" in by_name["broken"].last_error
    assert by_name["broken"].status == "unavailable"
    assert by_name["fine"].last_error is None


@pytest.mark.parametrize(
    "name", ["PDF Processing", "crafter:onboard-repo", "名前", "x/y", "a_b", "#tag", "true"]
)
def test_a_skill_name_codex_loads_is_kept_as_it_is(tmp_path: Path, store: Path, name: str) -> None:
    folder = tmp_path / "pkg"
    write_skill(folder / "skills" / "pdf", json.dumps(name))
    item = ExtensionRepository(store).import_path(folder).items[0]
    assert (item.name, item.original_name) == (name, name)
    assert not any("not a native skill name" in note for note in item.notes)


@pytest.mark.parametrize(
    ("raw", "kept"),
    [
        ("b" * 65, "b" * 64),  # Codex: "exceeds maximum length of 64 characters"
        ("é" * 70, "é" * 64),  # characters, not bytes
        (r"esc\u001bhere", "esc-here"),  # a control character (agc's own rule)
        (r"rtl\u202eoverride", "rtl-override"),  # a format character
    ],
)
def test_a_skill_name_codex_would_refuse_is_rewritten_and_kept_as_original(
    tmp_path: Path, store: Path, raw: str, kept: str
) -> None:
    folder = tmp_path / "pkg"
    write_skill(folder / "skills" / "pdf", f'"{raw}"')
    item = ExtensionRepository(store).import_path(folder).items[0]
    assert item.name == kept
    assert item.original_name == json.loads(f'"{raw}"')
    assert any("not a native skill name" in note for note in item.notes)


def test_a_skill_without_a_name_takes_its_folder_name(tmp_path: Path, store: Path) -> None:
    folder = tmp_path / "pkg"
    write_skill(folder / "skills" / "from-folder", None)
    assert ExtensionRepository(store).import_path(folder).items[0].name == "from-folder"


@pytest.mark.parametrize("name", ["server.py", "tool.exe", "run.js", "package.json", "README.md"])
def test_a_lone_script_or_file_is_one_unknown_item_never_an_mcp_entry(
    tmp_path: Path, store: Path, name: str
) -> None:
    path = write_script(tmp_path / name, tmp_path)
    if name == "package.json":
        path.write_text(json.dumps({"name": "x", "scripts": {"start": "node ."}}))
    result = ExtensionRepository(store).import_path(path)
    assert [(item.type, item.name, item.enabled) for item in result.items] == [
        ("unknown", name, False)
    ]


def test_a_folder_with_nothing_recognised_is_one_unknown_item(tmp_path: Path, store: Path) -> None:
    folder = tmp_path / "misc"
    (folder / "docs").mkdir(parents=True)
    (folder / "docs" / "a.txt").write_text("hello")
    (folder / "bin").mkdir()
    (folder / "bin" / "tool").write_bytes(b"\x7fELF\x02\x01\x01")
    result = ExtensionRepository(store).import_path(folder)
    assert [(item.type, item.name, item.source_relative_path) for item in result.items] == [
        ("unknown", "misc", ".")
    ]


def test_three_plugins_each_shipping_access_get_access_2_and_3(tmp_path: Path, store: Path) -> None:
    repo = ExtensionRepository(store)
    results = [repo.import_path(plugin) for plugin in access_plugins(tmp_path / "src")]
    assert [r.items[0].name for r in results] == ["access", "access-2", "access-3"]
    assert [r.renamed for r in results] == [False, True, True]
    assert [r.duplicate for r in results] == [False, False, False]
    assert (
        results[2].notice
        == 'Duplicate or same-name extensions found; named automatically: "access-3".'
    )
    assert {item.original_name for item in repo.items()} == {"access"}


def test_three_plugins_in_one_zip_are_three_items(tmp_path: Path, store: Path) -> None:
    access_plugins(tmp_path / "bundle")
    archive = zip_folder(tmp_path / "bundle", tmp_path / "bundle.zip")
    result = ExtensionRepository(store).import_path(archive)
    assert [item.name for item in result.items] == ["access", "access-2", "access-3"]
    assert result.notice is not None
    assert "access-2" in result.notice
    assert "access-3" in result.notice
