"""The acceptance lines of extension import, each as one behaviour, end to end through
``agc ext`` (import, list, change, project) with inputs the tests build."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path
from typing import Any

import pytest

from agc.cli.app import main
from agc.exitcodes import ExitCode
from tests.extensions.builders import (
    RUN_MARKER,
    codex_config_two_servers,
    plugin_with_two_skills_and_mcp,
    tree_bytes,
    write_script,
    write_skill,
    zip_entries,
    zip_folder,
)


class Agc:
    """``agc ext …`` in process against one store."""

    def __init__(self, store: Path, capsys: pytest.CaptureFixture[str]) -> None:
        self.store = store
        self.capsys = capsys

    def run(self, *argv: str) -> tuple[int, str, str]:
        code = main(["ext", *argv, "--store", str(self.store)])
        out, err = self.capsys.readouterr()
        return code, out, err

    def json(self, *argv: str, code: int = 0) -> Any:
        got, out, err = self.run(*argv, "--json")
        assert got == code, err
        return json.loads(out)

    def items(self) -> list[dict[str, Any]]:
        return list(self.json("list")["items"])

    def names(self, item_type: str | None = None) -> list[str]:
        return [i["name"] for i in self.items() if item_type in {None, i["extensionType"]}]

    def project(self, home: Path) -> dict[str, Any]:
        return dict(self.json("project", "--codex-home", str(home)))


@pytest.fixture
def agc(store: Path, capsys: pytest.CaptureFixture[str]) -> Agc:
    return Agc(store, capsys)


def _servers(home: Path) -> dict[str, Any]:
    return dict(tomllib.loads((home / "config.toml").read_text())["mcp_servers"])


def _projected_skills(home: Path) -> dict[str, str]:
    """Folder name -> frontmatter name of every projected skill."""
    root = home / "extension-skills"
    names = {}
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        head = (folder / "SKILL.md").read_text().split("---")[1]
        names[folder.name] = next(
            line.split(":", 1)[1].strip() for line in head.splitlines() if line.startswith("name:")
        )
    return names


# -- import and list ------------------------------------------------------------------------


def test_a_source_with_several_skills_and_servers_lists_each_as_its_own_item(
    tmp_path: Path, agc: Agc
) -> None:
    agc.json(
        "import",
        str(zip_folder(plugin_with_two_skills_and_mcp(tmp_path / "s"), tmp_path / "p.zip")),
    )
    agc.json("import", str(codex_config_two_servers(tmp_path / "cfg")))
    assert [(i["name"], i["extensionType"]) for i in agc.items()] == [
        ("art-skill", "skill"),
        ("code-skill", "skill"),
        ("search", "mcp"),
        ("search-2", "mcp"),
        ("filesystem", "mcp"),
        ("docs", "mcp"),
    ]


def test_importing_the_same_source_again_keeps_the_earlier_items(tmp_path: Path, agc: Agc) -> None:
    plugin = plugin_with_two_skills_and_mcp(tmp_path)
    first = agc.json("import", str(plugin))["imported"]
    agc.json("import", str(plugin))
    items = agc.items()
    assert [i["id"] for i in items[:3]] == [i["id"] for i in first]
    assert [i["name"] for i in items[:3]] == ["art-skill", "code-skill", "search"]
    assert len(items) == 6


def test_same_name_and_duplicate_content_both_take_numbered_suffixes(
    tmp_path: Path, agc: Agc
) -> None:
    write_skill(tmp_path / "one" / "art-skill", "art-skill", description="first")
    write_skill(tmp_path / "two" / "art-skill", "art-skill", description="different")
    same = agc.json("import", str(tmp_path / "one"))
    other = agc.json("import", str(tmp_path / "two"))
    dup = agc.json("import", str(tmp_path / "one"))
    assert [d["imported"][0]["name"] for d in (same, other, dup)] == [
        "art-skill",
        "art-skill-2",
        "art-skill-3",
    ]
    assert [(d["renamed"], d["duplicate"]) for d in (same, other, dup)] == [
        (False, False),
        (True, False),
        (True, True),
    ]


def test_a_lone_binary_or_script_is_kept_and_never_run_or_launched(
    tmp_path: Path, agc: Agc
) -> None:
    marker_dir = tmp_path / "markers"
    marker_dir.mkdir()
    for name in ("server.py", "start.sh", "mcp-server"):
        script = write_script(tmp_path / name, marker_dir)
        # Nothing recognised: kept, disabled, and the import says so (exit 2).
        item = agc.json("import", str(script), code=ExitCode.USAGE)["imported"][0]
        assert (item["extensionType"], item["enabled"], item["status"]) == (
            "unknown",
            False,
            "unknown",
        )
    code, _, err = agc.run("enable", "server.py")
    assert code == ExitCode.USAGE
    assert "cannot be enabled" in err
    home = tmp_path / "home"
    result = agc.project(home)
    assert (result["skills"], result["mcpServers"], _servers(home)) == ([], [], {})
    assert not (marker_dir / RUN_MARKER).exists()


def test_the_imported_source_is_never_rewritten(tmp_path: Path, agc: Agc) -> None:
    plugin = plugin_with_two_skills_and_mcp(tmp_path / "in")
    original = tree_bytes(plugin)
    dto = agc.json("import", str(plugin))
    source_id = agc.json("list")["items"][0]["sourceId"]
    stored = agc.store / "extensions" / "sources" / source_id / "tree"
    agc.json("rename", dto["imported"][0]["id"], "pixel-art-skill")
    agc.json("rename", "search", "finder")
    agc.json("disable", "code-skill")
    agc.project(tmp_path / "home")
    assert tree_bytes(stored) == original
    assert tree_bytes(plugin) == original


# -- skills at runtime ------------------------------------------------------------------------


def test_several_skills_are_discovered_independently(tmp_path: Path, agc: Agc) -> None:
    folder = tmp_path / "my-package"
    write_skill(folder / "skills" / "art-skill", "art-skill")
    write_skill(folder / "skills" / "code-skill", "code-skill")
    agc.json("import", str(folder))
    assert _projected_skills_after(agc, tmp_path) == {
        "art-skill": "art-skill",
        "code-skill": "code-skill",
    }


def _projected_skills_after(agc: Agc, tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    agc.project(home)
    return _projected_skills(home)


def test_a_renamed_skill_is_projected_under_its_new_name(tmp_path: Path, agc: Agc) -> None:
    agc.json("import", str(plugin_with_two_skills_and_mcp(tmp_path)))
    agc.json("rename", "art-skill", "pixel-art-skill")
    assert agc.names("skill") == ["pixel-art-skill", "code-skill"]
    assert _projected_skills_after(agc, tmp_path) == {
        "code-skill": "code-skill",
        "pixel-art-skill": "pixel-art-skill",
    }


def test_disabling_one_skill_does_not_affect_the_others(tmp_path: Path, agc: Agc) -> None:
    agc.json("import", str(plugin_with_two_skills_and_mcp(tmp_path)))
    agc.json("disable", "art-skill")
    assert _projected_skills_after(agc, tmp_path) == {"code-skill": "code-skill"}
    assert set(_servers(tmp_path / "home")) == {"search"}


def test_a_change_takes_effect_only_at_the_next_projection(tmp_path: Path, agc: Agc) -> None:
    agc.json("import", str(plugin_with_two_skills_and_mcp(tmp_path)))
    home = tmp_path / "home"
    first = agc.project(home)
    before = tree_bytes(home)
    agc.json("disable", "art-skill")
    agc.json("rename", "search", "finder")
    assert tree_bytes(home) == before
    second = agc.project(home)
    assert second["fingerprint"] != first["fingerprint"]
    assert set(_servers(home)) == {"finder"}


def test_built_in_skills_are_not_affected(tmp_path: Path, agc: Agc) -> None:
    home = tmp_path / "home"
    write_skill(home / "agc-builtin-skills" / "agc-project-files", "agc-project-files")
    before = tree_bytes(home / "agc-builtin-skills")
    write_skill(tmp_path / "pkg" / "skills" / "agc-project-files", "agc-project-files")
    agc.json("import", str(tmp_path / "pkg"))
    agc.project(home)
    assert tree_bytes(home / "agc-builtin-skills") == before
    assert _projected_skills(home) == {"agc-project-files": "agc-project-files"}


# -- MCP servers and plugins ------------------------------------------------------------------


def test_a_config_with_several_servers_lists_each_as_its_own_item(tmp_path: Path, agc: Agc) -> None:
    agc.json("import", str(codex_config_two_servers(tmp_path)))
    assert agc.names("mcp") == ["search", "filesystem", "docs"]


def test_each_server_is_enabled_disabled_and_renamed_on_its_own(tmp_path: Path, agc: Agc) -> None:
    agc.json("import", str(codex_config_two_servers(tmp_path / "cfg")))
    home = tmp_path / "home"
    agc.json("disable", "docs")
    agc.project(home)
    assert set(_servers(home)) == {"search", "filesystem"}
    agc.json("rename", "filesystem", "files")
    agc.json("enable", "docs")
    agc.json("disable", "search")
    agc.project(home)
    assert list(_servers(home)) == ["files", "docs"]


def test_colliding_server_names_get_stable_unique_keys(
    tmp_path: Path, agc: Agc, store: Path
) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "config.toml").write_text(
        '[mcp_servers.web-search]\ncommand = "a"\n[mcp_servers.web_search]\ncommand = "b"\n'
    )
    agc.json("import", str(tmp_path / "a" / "config.toml"))
    agc.json("import", str(tmp_path / "a" / "config.toml"))
    names = agc.names("mcp")
    assert names == ["web-search", "web_search-2", "web-search-3", "web_search-4"]
    again = Agc(tmp_path / "other-store", agc.capsys)
    again.json("import", str(tmp_path / "a" / "config.toml"))
    again.json("import", str(tmp_path / "a" / "config.toml"))
    assert again.names("mcp") == names
    agc.project(tmp_path / "home")
    assert list(_servers(tmp_path / "home")) == names


def test_a_plugin_never_turns_on_hooks_apps_or_a_plugin_runtime(tmp_path: Path, agc: Agc) -> None:
    plugin = plugin_with_two_skills_and_mcp(tmp_path)
    code, _, err = agc.run("import", str(plugin))
    assert code == 0
    assert "hooks ignored" in err
    assert "apps ignored" in err
    home = tmp_path / "home"
    agc.project(home)
    config = tomllib.loads((home / "config.toml").read_text())
    assert set(config) == {"mcp_optional_startup_grace_ms", "mcp_servers"}
    files = [p.relative_to(home).as_posix() for p in home.rglob("*") if p.is_file()]
    assert not [f for f in files if "hooks" in f or ".app.json" in f or "plugin.json" in f]


def test_a_lone_executable_is_never_made_an_mcp_entry(tmp_path: Path, agc: Agc) -> None:
    write_script(tmp_path / "bin" / "my-mcp-server", tmp_path)
    agc.json("import", str(tmp_path / "bin" / "my-mcp-server"), code=ExitCode.USAGE)
    agc.json("import", str(tmp_path / "bin"), code=ExitCode.USAGE)
    assert [i["extensionType"] for i in agc.items()] == ["unknown", "unknown"]
    agc.project(tmp_path / "home")
    assert _servers(tmp_path / "home") == {}


# -- archives -----------------------------------------------------------------------------------


def test_a_zip_never_writes_outside_its_staging_folder(tmp_path: Path, agc: Agc) -> None:
    work = tmp_path / "deep" / "work"
    work.mkdir(parents=True)
    archive = zip_entries(
        work / "evil.zip",
        [
            ("ok/SKILL.md", b"---\nname: ok\ndescription: d\n---\n"),
            ("../../../escaped.txt", b"pwned"),
        ],
    )

    def outside_the_store() -> list[str]:
        paths = (p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*"))
        return sorted(path for path in paths if path.split("/")[0] != "store")

    before = outside_the_store()
    code, _, err = agc.run("import", str(archive))
    assert code == ExitCode.USAGE
    assert "'../../../escaped.txt'" in err
    assert outside_the_store() == before
    assert agc.items() == []
    assert not list((agc.store / "extensions").rglob("escaped.txt"))
    assert not os.path.exists(tmp_path / "escaped.txt")
