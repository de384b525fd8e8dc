"""The extensions ``agc serve`` launches Codex with: the enabled items of a store,
projected on change only, ``None`` without any, the fingerprint following what the
agent gets."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from agc.errors import InputError, ProjectionRefusedError
from agc.extensions import ExtensionRepository
from agc.flows import ServeExtensions
from tests.extensions.builders import plugin_with_two_skills_and_mcp


def _projections(store: Path) -> int:
    folder = store / "extensions" / "projections"
    return len(list(folder.glob("*.jsonl"))) if folder.exists() else 0


def test_enabled_items_are_projected_once_and_again_on_change(tmp_path: Path, store: Path) -> None:
    base = tmp_path / "served-home" / "config.toml"
    base.parent.mkdir()
    base.write_text('model = "served-model"\n', encoding="utf-8")
    source = ServeExtensions(
        store, codex_home=tmp_path / "ext-home", base_config=base, mcp_startup_wait_ms=5_000
    )
    assert source() is None  # an empty store: Codex as without extensions
    repo = ExtensionRepository(store)
    repo.import_path(plugin_with_two_skills_and_mcp(tmp_path / "in"))

    plan = source()
    assert plan is not None
    assert plan.codex_home == (tmp_path / "ext-home").absolute()
    (root,) = plan.skill_roots
    assert sorted(p.name for p in root.iterdir() if p.is_dir()) == ["art-skill", "code-skill"]
    assert plan.mcp_servers == ("search",)
    assert plan.codex_args == ("-c", "mcp_optional_startup_grace_ms=120000")
    assert plan.mcp_startup_wait_ms == 5_000
    config = tomllib.loads((tmp_path / "ext-home" / "config.toml").read_text())
    assert config["model"] == "served-model"  # the served home's configuration is the base
    assert config["mcp_optional_startup_grace_ms"] == 120_000
    assert set(config["mcp_servers"]) == {"search"}

    # Nothing changed: no new projection, the same extensions.
    count = _projections(store)
    assert source() is plan
    assert _projections(store) == count

    repo.set_enabled(["code-skill"], False)
    changed = source()
    assert changed is not None
    assert changed.fingerprint != plan.fingerprint
    assert sorted(p.name for p in root.iterdir() if p.is_dir()) == ["art-skill"]
    assert _projections(store) == count + 1

    base.write_text('model = "other"\n', encoding="utf-8")  # the base changed too
    again = source()
    assert again is not None
    assert again.fingerprint != changed.fingerprint

    repo.set_enabled(["art-skill", "search"], False)
    assert source() is None


def test_a_base_configuration_that_is_not_toml_is_refused(tmp_path: Path, store: Path) -> None:
    ExtensionRepository(store).import_path(plugin_with_two_skills_and_mcp(tmp_path / "in"))
    base = tmp_path / "config.toml"
    base.write_text("model = \n", encoding="utf-8")
    source = ServeExtensions(store, codex_home=tmp_path / "ext-home", base_config=base)
    with pytest.raises(InputError, match="not a TOML configuration"):
        source()


def test_a_codex_home_agc_did_not_write_is_refused(tmp_path: Path, store: Path) -> None:
    ExtensionRepository(store).import_path(plugin_with_two_skills_and_mcp(tmp_path / "in"))
    home = tmp_path / "user-home"
    home.mkdir()
    (home / "config.toml").write_text('model = "mine"\n', encoding="utf-8")
    source = ServeExtensions(store, codex_home=home, base_config=home / "config.toml")
    with pytest.raises(ProjectionRefusedError):
        source()
    assert (home / "config.toml").read_text() == 'model = "mine"\n'
