"""Projection: the skill root rebuilt from scratch, config.toml with only what Codex
reads, secrets kept back, the fingerprint, the sealed record, refusals."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path
from typing import Any

import blake3
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from agc._core.sidecar import parse_sidecar
from agc.errors import InputError, ProjectionRefusedError
from agc.extensions import EnvBlocklist, ExtensionRepository, project
from agc.extensions._fingerprint import tree_fingerprint
from agc.extensions._project import CONFIG_HEADER
from tests.conftest import examples
from tests.extensions.builders import (
    codex_config_two_servers,
    plugin_with_two_skills_and_mcp,
    tree_bytes,
    write_skill,
)
from tests.extensions.test_mcp import CODEX_FIELDS
from tests.extensions.test_repo import _env

REACHES_INSIDE = {
    "agc.extensions._fingerprint": "the tree fingerprint, to compare projections byte for byte",
    "agc.extensions._project": "the header a projected config.toml starts with",
}


def _config(home: Path) -> dict[str, Any]:
    return tomllib.loads((home / "config.toml").read_text())


def _skill_dirs(root: Path) -> list[str]:
    return sorted(path.name for path in root.iterdir() if path.is_dir())


@pytest.fixture
def repo(store: Path) -> ExtensionRepository:
    return ExtensionRepository(store)


def test_enabled_items_are_written_as_a_skill_root_and_config_toml(
    tmp_path: Path, repo: ExtensionRepository
) -> None:
    repo.import_path(plugin_with_two_skills_and_mcp(tmp_path))
    home = tmp_path / "home"
    result = project(repo, home)
    assert result.skill_root == home / "extension-skills"
    assert _skill_dirs(result.skill_root) == ["art-skill", "code-skill"]
    assert [(s.name, s.path) for s in result.skills] == [
        ("art-skill", result.skill_root / "art-skill" / "SKILL.md"),
        ("code-skill", result.skill_root / "code-skill" / "SKILL.md"),
    ]
    text = (home / "config.toml").read_text()
    assert text.startswith(CONFIG_HEADER)
    config = _config(home)
    assert config["mcp_optional_startup_grace_ms"] == 120000
    assert list(config["mcp_servers"]) == ["search"]
    search = config["mcp_servers"]["search"]
    assert set(search) <= CODEX_FIELDS
    assert search["enabled"] is True
    assert search["required"] is False
    tree = repo.tree_dir(repo.load().sources[0])
    assert search["cwd"] == str(tree)
    assert search["args"] == ["./server/index.js", "--port", "0"]
    assert (home / "config.toml").stat().st_mode & 0o077 == 0


def test_only_the_fields_codex_reads_reach_config_toml(
    tmp_path: Path, repo: ExtensionRepository
) -> None:
    repo.import_path(codex_config_two_servers(tmp_path / "cfg"))
    home = tmp_path / "home"
    project(repo, home)
    config = _config(home)
    assert "model" not in config
    assert "approval_policy" not in config
    servers = config["mcp_servers"]
    assert list(servers) == ["search", "filesystem", "docs"]
    for table in servers.values():
        assert set(table) <= CODEX_FIELDS
        assert (table["enabled"], table["required"]) == (True, False)
    assert servers["filesystem"]["cwd"] == str(repo.tree_dir(repo.load().sources[0]) / "work")
    assert servers["filesystem"]["command"].endswith("/work/bin/fs-server")
    assert servers["search"]["env"] == {"SEARCH_REGION": "eu"}
    assert servers["search"]["startup_timeout_sec"] == 20
    assert servers["docs"]["http_headers"] == {"X-Team": "blue"}
    assert "cwd" not in servers["docs"]


def test_the_clients_secrets_are_dropped_and_reported(
    tmp_path: Path, repo: ExtensionRepository
) -> None:
    repo.import_path(codex_config_two_servers(tmp_path / "cfg"))
    home = tmp_path / "home"
    result = project(repo, home, blocklist=None)
    servers = _config(home)["mcp_servers"]
    assert servers["filesystem"]["env_vars"] == ["HOME_DIR"]
    assert servers["docs"]["env_http_headers"] == {"X-Trace": "TRACE_ID"}
    assert servers["docs"]["bearer_token_env_var"] == "DOCS_TOKEN"
    by_name = {item.name: item for item in repo.items()}
    assert "OPENAI_API_KEY" in (by_name["filesystem"].last_error or "")
    assert "CODEX_HOME" in (by_name["docs"].last_error or "")
    assert by_name["search"].last_error is None
    assert by_name["filesystem"].status == "enabled"  # still launched, without the secret
    assert {s.name: s.not_forwarded for s in result.mcp_servers}["docs"] == ("CODEX_HOME",)


def test_a_configured_secret_name_is_kept_back_too(
    tmp_path: Path, repo: ExtensionRepository
) -> None:
    repo.import_path(codex_config_two_servers(tmp_path / "cfg"))
    project(repo, tmp_path / "home", blocklist=EnvBlocklist.with_extra(["HOME_DIR", "TRACE_*"]))
    servers = _config(tmp_path / "home")["mcp_servers"]
    assert "env_vars" not in servers["filesystem"]
    assert "env_http_headers" not in servers["docs"]


def test_a_renamed_skill_is_a_renamed_copy_and_the_original_stays(
    tmp_path: Path, repo: ExtensionRepository
) -> None:
    result = repo.import_path(plugin_with_two_skills_and_mcp(tmp_path))
    stored_before = tree_bytes(repo.tree_dir(result.source))
    repo.rename(result.items[0].id, "pixel-art-skill")
    projection = project(repo, tmp_path / "home")
    assert _skill_dirs(projection.skill_root) == ["code-skill", "pixel-art-skill"]
    copy = (projection.skill_root / "pixel-art-skill" / "SKILL.md").read_text()
    assert copy.startswith("---\nname: pixel-art-skill\ndescription: Draw pixel art.\n---\n")
    assert (projection.skill_root / "pixel-art-skill" / "references" / "palette.md").is_file()
    assert tree_bytes(repo.tree_dir(result.source)) == stored_before


def test_the_skill_root_is_rebuilt_from_scratch(tmp_path: Path, repo: ExtensionRepository) -> None:
    items = repo.import_path(plugin_with_two_skills_and_mcp(tmp_path)).items
    home = tmp_path / "home"
    first = project(repo, home)
    (first.skill_root / "stray.txt").write_text("left by someone")
    (first.skill_root / "art-skill" / "extra.md").write_text("edited copy")
    repo.set_enabled([items[1].id], False)
    repo.rename(items[0].id, "art")
    second = project(repo, home)
    assert _skill_dirs(second.skill_root) == ["art"]
    assert not (second.skill_root / "stray.txt").exists()
    assert not (second.skill_root / "art" / "extra.md").exists()
    assert sorted(os.listdir(home)) == ["config.toml", "extension-skills"]


def test_disabled_and_removed_items_leave_nothing_behind(
    tmp_path: Path, repo: ExtensionRepository
) -> None:
    items = repo.import_path(plugin_with_two_skills_and_mcp(tmp_path)).items
    home = tmp_path / "home"
    project(repo, home)
    repo.set_enabled([items[2].id], False)
    repo.remove([items[0].id])
    result = project(repo, home)
    assert _skill_dirs(result.skill_root) == ["code-skill"]
    assert _config(home)["mcp_servers"] == {}
    assert result.mcp_servers == ()


def test_disabling_one_skill_leaves_the_others(tmp_path: Path, repo: ExtensionRepository) -> None:
    items = repo.import_path(plugin_with_two_skills_and_mcp(tmp_path)).items
    repo.set_enabled([items[0].id], False)
    result = project(repo, tmp_path / "home")
    assert [s.name for s in result.skills] == ["code-skill"]
    assert [s.name for s in result.mcp_servers] == ["search"]


def test_a_root_skill_copy_carries_no_nested_skill_or_plugin_manifest(
    tmp_path: Path, repo: ExtensionRepository
) -> None:
    folder = tmp_path / "pkg"
    write_skill(folder, "outer")
    write_skill(folder / "skills" / "inner", "inner")
    (folder / ".claude-plugin").mkdir()
    (folder / ".claude-plugin" / "marketplace.json").write_text("{}")
    items = repo.import_path(folder).items
    repo.set_enabled([items[1].id], False)
    result = project(repo, tmp_path / "home")
    outer = result.skill_root / "outer"
    assert sorted(path.relative_to(outer).as_posix() for path in outer.rglob("*")) == [
        "SKILL.md",
        "skills",
        "skills/inner",
    ]


def test_the_base_configuration_is_kept_and_its_servers_never_overridden(
    tmp_path: Path, repo: ExtensionRepository
) -> None:
    repo.import_path(plugin_with_two_skills_and_mcp(tmp_path))
    base: dict[str, Any] = {
        "model": "gpt-5-codex",
        "mcp_optional_startup_grace_ms": 5,
        "mcp_servers": {
            "agc_tools": {"command": "agc", "args": ["mcp"], "required": True},
            "search": {"url": "http://127.0.0.1:9/mcp"},
        },
    }
    result = project(repo, tmp_path / "home", base_config=base)
    config = _config(tmp_path / "home")
    assert config["model"] == "gpt-5-codex"
    assert config["mcp_optional_startup_grace_ms"] == 120000
    assert config["mcp_servers"] == base["mcp_servers"]
    assert [(s.name, s.reason) for s in result.skipped] == [
        ("search", "the name 'search' is taken by a built-in server of the base configuration")
    ]
    search = next(item for item in repo.items() if item.name == "search")
    assert search.status == "unavailable"
    assert base["mcp_servers"]["agc_tools"] == {"command": "agc", "args": ["mcp"], "required": True}


def test_the_startup_grace_is_written_explicitly(tmp_path: Path, repo: ExtensionRepository) -> None:
    project(repo, tmp_path / "home", startup_grace_ms=0)
    assert _config(tmp_path / "home")["mcp_optional_startup_grace_ms"] == 0


def test_broken_unknown_and_disabled_items_are_never_projected(
    tmp_path: Path, repo: ExtensionRepository
) -> None:
    folder = tmp_path / "pkg"
    (folder / "skills" / "broken").mkdir(parents=True)
    (folder / "skills" / "broken" / "SKILL.md").write_text("no frontmatter\n")
    write_skill(folder / "skills" / "fine", "fine")
    repo.import_path(folder)
    blob = tmp_path / "server.py"
    blob.write_text("print('would serve')\n")
    repo.import_path(blob)
    result = project(repo, tmp_path / "home")
    assert _skill_dirs(result.skill_root) == ["fine"]
    assert [s.name for s in result.skipped] == ["broken"]
    assert _config(tmp_path / "home")["mcp_servers"] == {}


def test_a_stored_skill_changed_after_import_is_skipped(
    tmp_path: Path, repo: ExtensionRepository
) -> None:
    result = repo.import_path(plugin_with_two_skills_and_mcp(tmp_path))
    stored = repo.tree_dir(result.source) / "skills" / "art-skill" / "SKILL.md"
    stored.chmod(0o644)
    stored.write_text("---\nname: art-skill\ndescription: now does something else\n---\n")
    projection = project(repo, tmp_path / "home")
    assert [s.name for s in projection.skills] == ["code-skill"]
    assert "fingerprint mismatch" in projection.skipped[0].reason
    art = repo.load().items[0]
    assert art.status == "unavailable"
    assert art.last_error is not None
    assert "fingerprint mismatch" in art.last_error


def test_an_edited_stored_server_configuration_is_skipped(
    tmp_path: Path, repo: ExtensionRepository
) -> None:
    repo.import_path(plugin_with_two_skills_and_mcp(tmp_path))
    document = json.loads(repo.index_path.read_text())
    document["items"][2]["mcp"]["config"]["command"] = "curl"
    repo.index_path.write_text(json.dumps(document))
    result = project(repo, tmp_path / "home")
    assert result.mcp_servers == ()
    assert "fingerprint mismatch" in result.skipped[0].reason


def test_the_fingerprint_follows_the_enabled_set(tmp_path: Path, repo: ExtensionRepository) -> None:
    plugin = plugin_with_two_skills_and_mcp(tmp_path)
    items = repo.import_path(plugin).items
    home = tmp_path / "home"
    first = project(repo, home).fingerprint
    assert project(repo, home).fingerprint == first
    repo.rename(items[0].id, "renamed")
    renamed = project(repo, home).fingerprint
    assert renamed != first
    repo.set_enabled([items[1].id], False)
    disabled = project(repo, home).fingerprint
    assert disabled not in {first, renamed}
    repo.set_enabled([items[1].id], True)
    assert project(repo, home).fingerprint == renamed
    # Removed and imported again, same content: new ids, so no pooled runtime is reused.
    repo.remove([item.id for item in repo.items()])
    repo.import_path(plugin)
    assert project(repo, home).fingerprint != first


def test_the_projection_record_is_sealed_and_lists_what_was_given(
    tmp_path: Path, repo: ExtensionRepository
) -> None:
    items = repo.import_path(plugin_with_two_skills_and_mcp(tmp_path)).items
    result = project(repo, tmp_path / "home")
    data = result.record.read_bytes()
    seal = parse_sidecar(
        result.record.with_name(result.record.name + ".b3").read_bytes(), algorithm="blake3"
    )
    assert seal.digest == blake3.blake3(data).hexdigest()
    assert seal.file_name == result.record.name
    records = [json.loads(line) for line in data.splitlines()]
    header = records[0]
    assert header["record"] == "projection"
    assert header["fingerprint"] == result.fingerprint
    assert (
        header["configTomlFingerprint"]
        == "blake3:" + blake3.blake3((tmp_path / "home" / "config.toml").read_bytes()).hexdigest()
    )
    listed = {(r["record"], r["id"], r["fingerprint"]) for r in records[1:]}
    assert listed == {(item.type, item.id, item.fingerprint) for item in items}
    assert repo.load().last_projection_id == result.projection_id


def test_a_config_toml_agc_did_not_write_is_never_replaced(
    tmp_path: Path, repo: ExtensionRepository
) -> None:
    home = tmp_path / "user-codex"
    home.mkdir()
    (home / "config.toml").write_text('model = "mine"\n')
    with pytest.raises(ProjectionRefusedError, match="was not written by"):
        project(repo, home)
    assert (home / "config.toml").read_text() == 'model = "mine"\n'
    assert sorted(os.listdir(home)) == ["config.toml"]


def test_a_folder_agc_did_not_make_is_never_deleted_as_skill_root(
    tmp_path: Path, repo: ExtensionRepository
) -> None:
    precious = tmp_path / "projects"
    (precious / "work").mkdir(parents=True)
    (precious / "work" / "file.txt").write_text("keep")
    with pytest.raises(ProjectionRefusedError, match="not a skill root agc made"):
        project(repo, tmp_path / "home", skill_root=precious)
    assert (precious / "work" / "file.txt").read_text() == "keep"
    with pytest.raises(ProjectionRefusedError, match="Codex manages itself"):
        project(repo, tmp_path / "home", skill_root=tmp_path / "home" / "skills")


def test_other_folders_of_the_codex_home_are_untouched(
    tmp_path: Path, repo: ExtensionRepository
) -> None:
    repo.import_path(plugin_with_two_skills_and_mcp(tmp_path))
    home = tmp_path / "home"
    builtin = home / "agc-skills" / "agc-builtin"
    write_skill(builtin, "agc-builtin")
    before = tree_bytes(home / "agc-skills")
    project(repo, home)
    project(repo, home)
    assert tree_bytes(home / "agc-skills") == before


def test_a_change_after_projection_does_not_touch_the_projected_home(
    tmp_path: Path, repo: ExtensionRepository
) -> None:
    items = repo.import_path(plugin_with_two_skills_and_mcp(tmp_path)).items
    home = tmp_path / "home"
    project(repo, home)
    before = tree_bytes(home)
    repo.set_enabled([item.id for item in items], False)
    repo.rename(items[0].id, "other")
    assert tree_bytes(home) == before


def test_a_crash_before_the_swap_keeps_the_previous_projection_whole(
    tmp_path: Path, repo: ExtensionRepository
) -> None:
    items = repo.import_path(plugin_with_two_skills_and_mcp(tmp_path)).items
    home = tmp_path / "home"
    project(repo, home)
    before = tree_bytes(home)
    repo.set_enabled([items[0].id], False)
    script = textwrap.dedent(
        f"""
        import os
        from agc.extensions import EnvBlocklist, ExtensionRepository, project
        from agc.extensions import _project
        def die(staging, root):
            os._exit(9)  # dies with the new root built and the record sealed
        _project._swap = die
        project(ExtensionRepository({str(repo.store)!r}), {str(home)!r})
        """
    )
    done = subprocess.run([sys.executable, "-c", script], env=_env(), check=False)
    assert done.returncode == 9
    now = tree_bytes(home)
    assert {path: data for path, data in now.items() if not path.startswith(".")} == before
    leftovers = [name for name in os.listdir(home) if name.startswith(".extension-skills.new-")]
    assert leftovers
    result = project(repo, home)
    assert [s.name for s in result.skills] == ["code-skill"]
    assert sorted(os.listdir(home)) == ["config.toml", "extension-skills"]


def test_a_fifo_in_place_of_config_toml_is_refused_without_hanging(
    tmp_path: Path, store: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    os.mkfifo(home / "config.toml")  # nobody writes it: a plain open would block forever
    script = textwrap.dedent(
        f"""
        from agc.errors import ProjectionRefusedError
        from agc.extensions import ExtensionRepository, project
        try:
            project(ExtensionRepository({str(store)!r}), {str(home)!r})
        except ProjectionRefusedError as exc:
            raise SystemExit(7 if "was not written by" in exc.message else 1)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], env=_env(), check=False, timeout=60)
    assert done.returncode == 7
    assert sorted(os.listdir(home)) == ["config.toml"]


def test_a_dangling_link_as_the_codex_home_is_refused_as_input(
    tmp_path: Path, repo: ExtensionRepository
) -> None:
    home = tmp_path / "home"
    home.symlink_to(tmp_path / "gone" / "codex")
    with pytest.raises(ProjectionRefusedError, match="not a folder") as caught:
        project(repo, home)
    assert caught.value.exit_code == 2
    assert not (tmp_path / "gone").exists()


def test_a_codex_home_inside_the_skill_root_is_refused_and_keeps_its_files(
    tmp_path: Path, repo: ExtensionRepository
) -> None:
    root = tmp_path / "root"
    home = root / "home"
    home.mkdir(parents=True)
    (root / ".agc-skill-root").write_text("")  # a root agc made before
    (home / "auth.json").write_text("the user's login")
    with pytest.raises(ProjectionRefusedError, match="inside the skill root") as caught:
        project(repo, home, skill_root=root)
    assert caught.value.exit_code == 2
    assert (home / "auth.json").read_text() == "the user's login"


@pytest.mark.parametrize("target", ["home", "root"])
def test_a_target_inside_the_extension_repository_is_refused(
    tmp_path: Path, repo: ExtensionRepository, target: str
) -> None:
    result = repo.import_path(write_skill(tmp_path / "s" / "empty-dir-skill", "lone").parent)
    inside = repo.tree_dir(result.source) / "sub"
    inside.mkdir()
    before = tree_fingerprint(repo.tree_dir(result.source))
    home, root = (inside, None) if target == "home" else (tmp_path / "h", inside)
    with pytest.raises(ProjectionRefusedError, match="inside the extension repository"):
        project(repo, home, skill_root=root)
    assert tree_fingerprint(repo.tree_dir(result.source)) == before


def test_a_skill_root_holding_the_store_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / ".agc-skill-root").write_text("")
    repo = ExtensionRepository(root / "store")
    repo.import_path(write_skill(tmp_path / "s" / "x", "x").parent)
    with pytest.raises(ProjectionRefusedError, match="inside the skill root"):
        project(repo, tmp_path / "home", skill_root=root)
    assert [item.name for item in repo.items()] == ["x"]


@settings(
    max_examples=examples(25),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    grace=st.one_of(
        st.integers(0, 2**53), st.integers(2**53 + 1, 10**400), st.integers(max_value=-1)
    ),
    builtin=st.integers(-(10**400), 10**400),
)
@example(grace=2**53, builtin=0)  # the edge: one past the integers RFC 8785 keeps exact
@example(grace=0, builtin=2**53)
def test_huge_numbers_in_the_grace_or_the_base_configuration_never_crash(
    tmp_path_factory: pytest.TempPathFactory, grace: int, builtin: int
) -> None:
    base = tmp_path_factory.mktemp("numbers")
    repo = ExtensionRepository(base / "store")
    repo.import_path(codex_config_two_servers(base / "cfg"))
    config = {"mcp_servers": {"agc_tools": {"command": "x", "tool_timeout_sec": builtin}}}
    if not 0 <= grace <= 2**53:
        with pytest.raises(InputError, match="startup grace"):
            project(repo, base / "home", base_config=config, startup_grace_ms=grace)
        return
    result = project(repo, base / "home", base_config=config, startup_grace_ms=grace)
    written = tomllib.loads((base / "home" / "config.toml").read_text())
    assert written["mcp_optional_startup_grace_ms"] == grace
    assert written["mcp_servers"]["agc_tools"]["tool_timeout_sec"] == builtin
    assert result.fingerprint.startswith("blake3:")


@pytest.mark.parametrize("state", ["auth.json", "sessions", "history.jsonl"])
def test_a_codex_home_of_someone_elses_is_not_configured(
    tmp_path: Path, repo: ExtensionRepository, state: str
) -> None:
    """A folder holding a Codex's own login, sessions or history and no config.toml agc
    wrote is a user's Codex home: projecting there would start third-party servers in
    their everyday Codex. Nothing is written."""
    repo.import_path(plugin_with_two_skills_and_mcp(tmp_path))
    home = tmp_path / "home"
    home.mkdir()
    (home / state).mkdir() if state == "sessions" else (home / state).write_text("{}")
    before = tree_bytes(home)
    with pytest.raises(ProjectionRefusedError, match="a Codex's own state"):
        project(repo, home)
    assert tree_bytes(home) == before
    assert not (home / "config.toml").exists()
