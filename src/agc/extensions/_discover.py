"""Finding the Skills and MCP servers inside a staged source (nothing is ever run).

On a folder (or an extracted zip; a single top folder is looked into):

* a plugin is a folder with ``.codex-plugin/plugin.json`` (or ``.claude-plugin/
  plugin.json``, the other standard manifest Codex also reads). Only its skills and MCP
  servers are taken: ``skills`` (a ``./`` path or a list of them, default ``./skills``)
  and ``mcpServers`` (a ``./`` path to an ``.mcp.json``, or the servers inline, default
  ``./.mcp.json``). Manifest paths must start with ``./`` and stay inside the plugin
  (as Codex's ``resolve_manifest_path`` requires); others are ignored with a note, and
  so are hooks, apps, commands, agents and every other component;
* otherwise: a ``SKILL.md`` at the top, every ``*/SKILL.md`` of the folder itself and of
  ``skills/``, the servers of ``config.toml``, ``.codex/config.toml``, ``.mcp.json`` and
  ``mcp.json``, and every plugin directly inside the folder or inside ``plugins/``.

A lone file is a skill (``SKILL.md``), a Codex configuration (``*.toml`` with
``mcp_servers``) or an MCP configuration (``.mcp.json``/``mcp.json``, or any ``*.json``
in the wrapped ``mcpServers`` form). Anything else, and a source in which nothing is
recognised, is one ``unknown`` item.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Any, Final

from agc._core.fs import read_small_file
from agc.errors import AgcError
from agc.extensions._documents import load_json
from agc.extensions._fingerprint import json_fingerprint, jsonable, tree_fingerprint
from agc.extensions._mcp import (
    LiteralValue,
    RawServer,
    normalize_server,
    read_codex_config,
    read_mcp_json,
    reference_literals,
    servers_from_map,
    stays_inside,
)
from agc.extensions._model import McpDetails, SourceKind
from agc.extensions._names import ItemType, normalize_name
from agc.extensions._skill import MAX_SKILL_FILE_BYTES, SkillFrontmatter, parse_skill_file

__all__ = ["Discovery", "Found", "discover"]

_MAX_CONFIG_BYTES: Final = 16 * 1024 * 1024
_PLUGIN_MANIFESTS: Final = (".codex-plugin/plugin.json", ".claude-plugin/plugin.json")
_MCP_FILES: Final = ("config.toml", ".codex/config.toml", ".mcp.json", "mcp.json")
_BARE_MAP_NAMES: Final = frozenset({".mcp.json", "mcp.json"})
_IGNORED_NOISE: Final = frozenset({"__MACOSX", ".DS_Store", "Thumbs.db"})
_PLUGIN_METADATA: Final = frozenset(
    {
        "$schema",
        "name",
        "version",
        "description",
        "keywords",
        "author",
        "homepage",
        "repository",
        "license",
        "interface",
        "category",
        "tags",
        "strict",
        "skills",
        "mcpServers",
    }
)


@dataclass(frozen=True)
class Found:
    """One item discovery found (not yet named or stored).

    Attributes:
        type: ``skill``, ``mcp`` or ``unknown``.
        original_name: the name the extension gives itself.
        wanted_name: that name in native form.
        source_relative_path: the ``SKILL.md``/configuration/file, relative to the tree.
        fingerprint: ``blake3:`` of its content.
        last_error: why it cannot be launched, or ``None``.
    """

    type: ItemType
    original_name: str
    wanted_name: str
    source_relative_path: str
    fingerprint: str
    last_error: str | None = None
    skill_dir: str | None = None
    mcp: McpDetails | None = None
    notes: tuple[str, ...] = ()
    references: tuple[LiteralValue, ...] = ()


def keep_references(entry: Found, taken: set[str] | None = None) -> Found:
    """``entry`` with the literal ``env``/``http_headers`` values of its server turned
    into references to the launching environment (``_mcp.reference_literals``), its
    fingerprint taken over the new configuration, and what was converted in
    ``references`` and the notes (names only); a header's variable is none of ``taken``
    (see ``reference_literals``). Other items are returned as they are.

    A server imported with an error keeps the fingerprint of its published object (it
    is never projected, so that fingerprint only tells duplicates).
    """
    if entry.type != "mcp" or entry.mcp is None:
        return entry
    config, converted = reference_literals(entry.mcp.config, entry.original_name, taken)
    if not converted:
        return entry
    notes = [
        f"{'env' if value.field == 'env' else 'header'} {value.key}: the literal value is not "
        f"kept; Codex takes it from ${value.reference} of the environment it is launched in"
        for value in converted
    ]
    return replace(
        entry,
        mcp=replace(entry.mcp, config=config),
        fingerprint=json_fingerprint(config) if entry.last_error is None else entry.fingerprint,
        notes=(*entry.notes, *notes),
        references=converted,
    )


@dataclass
class Discovery:
    """What a source holds: its items, and notes on what was ignored and why."""

    found: list[Found] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)


def _label(plugin: PurePosixPath) -> str:
    return f"plugin {plugin}" if str(plugin) not in {"", "."} else "plugin"


def _rel(path: PurePosixPath) -> str:
    text = str(path)
    return text if text else "."


def _is_file(path: Path) -> bool:
    try:
        return stat.S_ISREG(path.lstat().st_mode)
    except OSError:
        return False


def _is_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(path.lstat().st_mode)
    except OSError:
        return False


def _subdirs(path: Path) -> list[str]:
    try:
        names = sorted(os.listdir(path))
    except OSError:
        return []
    return [name for name in names if not name.startswith(".") and _is_dir(path / name)]


def discover(
    tree: Path, *, source_name: str, kind: SourceKind, source_fingerprint: str
) -> Discovery:
    """Find the items of the source staged at ``tree`` (see the module docstring).

    Args:
        tree: the staged content (a lone file sits directly in it).
        source_name: the file or folder name as imported.
        kind: ``file``, ``folder`` or ``zip``.
        source_fingerprint: the source's fingerprint (the ``unknown`` item's).
    """
    found = Discovery()
    if kind == "file":
        _discover_file(tree, source_name, found)
    else:
        top = PurePosixPath()
        while True:
            entries = [
                name for name in sorted(os.listdir(tree / top)) if name not in _IGNORED_NOISE
            ]
            if (
                len(entries) == 1
                and _is_dir(tree / top / entries[0])
                and not entries[0].startswith(".")
            ):
                top = top / entries[0]
                continue
            break
        fallback = top.name or (PurePosixPath(source_name).stem if kind == "zip" else source_name)
        _discover_folder(tree, top, fallback, found, look_for_plugins=True)
    _dedupe(found)
    if not found.found:
        reason = "; ".join(found.errors) if found.errors else None
        found.found.append(
            Found(
                type="unknown",
                original_name=source_name,
                wanted_name=normalize_name("unknown", source_name),
                source_relative_path=source_name if kind == "file" else ".",
                fingerprint=source_fingerprint,
                last_error=f"no Skill or MCP server recognised: {reason}" if reason else None,
            )
        )
    return found


def _dedupe(found: Discovery) -> None:
    seen: set[tuple[str, str]] = set()
    unique = []
    for item in found.found:
        key = (item.type, item.skill_dir or f"{item.source_relative_path}#{item.original_name}")
        if key not in seen:
            seen.add(key)
            unique.append(item)
    found.found = unique


def _discover_file(tree: Path, name: str, found: Discovery) -> None:
    relative = PurePosixPath(name)
    if name == "SKILL.md":
        _add_skill(tree, PurePosixPath(), "skill", found)
    elif name.lower().endswith(".toml") or name.lower().endswith(".json"):
        _add_config_file(tree, relative, PurePosixPath(), found, plugin_root=None)


# -- folders and plugins ----------------------------------------------------------------


def _discover_folder(
    tree: Path, top: PurePosixPath, fallback_name: str, found: Discovery, *, look_for_plugins: bool
) -> None:
    if _plugin_manifest(tree / top) is not None:
        _discover_plugin(tree, top, found)
        return
    base = tree / top
    if _is_file(base / "SKILL.md"):
        _add_skill(tree, top, fallback_name, found)
    for name in _subdirs(base):
        if _is_file(base / name / "SKILL.md"):
            _add_skill(tree, top / name, name, found)
    if _is_dir(base / "skills"):
        for name in _subdirs(base / "skills"):
            if _is_file(base / "skills" / name / "SKILL.md"):
                _add_skill(tree, top / "skills" / name, name, found)
    for config in _MCP_FILES:
        if _is_file(base / config):
            _add_config_file(tree, top / config, top, found, plugin_root=None)
    if look_for_plugins:
        for parent in (top, top / "plugins"):
            for name in _subdirs(tree / parent):
                if _plugin_manifest(tree / parent / name) is not None:
                    _discover_plugin(tree, parent / name, found)


def _plugin_manifest(folder: Path) -> str | None:
    for manifest in _PLUGIN_MANIFESTS:
        if _is_file(folder / manifest):
            return manifest
    return None


def _manifest_path(
    value: Any, field_name: str, plugin: PurePosixPath, found: Discovery
) -> PurePosixPath | None:
    """A manifest path resolved under the plugin, or ``None`` with a note."""
    where = f"{_label(plugin)}: {field_name}"
    if not isinstance(value, str) or not value:
        found.note(f"{where} ignored: expected a ./ path")
        return None
    if not value.startswith("./"):
        found.note(f"{where} {value!r} ignored: a plugin path must start with ./")
        return None
    parts = [part for part in value[2:].split("/") if part not in {"", "."}]
    if not parts:
        found.note(f"{where} {value!r} ignored: the path must not be ./ itself")
        return None
    if "\x00" in value:
        found.note(f"{where} {value!r} ignored: a path cannot hold a NUL character")
        return None
    if any(part == ".." or "\\" in part or ":" in part for part in parts):
        found.note(f"{where} {value!r} ignored: the path must stay inside the plugin")
        return None
    return plugin.joinpath(*parts)


def _discover_plugin(tree: Path, plugin: PurePosixPath, found: Discovery) -> None:
    manifest_name = _plugin_manifest(tree / plugin)
    assert manifest_name is not None
    manifest_rel = plugin / manifest_name
    if _is_file(tree / plugin / _PLUGIN_MANIFESTS[0]) and _is_file(
        tree / plugin / _PLUGIN_MANIFESTS[1]
    ):
        found.note(
            f"{_label(plugin)}: .codex-plugin/plugin.json used; .claude-plugin/plugin.json ignored"
        )
    manifest: dict[str, Any] = {}
    try:
        document = load_json(read_small_file(tree / manifest_rel, max_bytes=_MAX_CONFIG_BYTES))
    except (ValueError, UnicodeDecodeError, OSError) as exc:
        found.note(
            f"{_rel(manifest_rel)} is not valid JSON ({exc}); default places searched instead"
        )
        document = {}
    if isinstance(document, dict):
        manifest = document
    else:
        found.note(f"{_rel(manifest_rel)} is not a JSON object; default places searched instead")
    for key in manifest:
        if key not in _PLUGIN_METADATA:
            found.note(f"{_label(plugin)}: {key} ignored (agc imports only skills and MCP servers)")
    for default, label in (("hooks/hooks.json", "hooks"), (".app.json", "apps")):
        if _is_file(tree / plugin / default) and label not in manifest:
            found.note(
                f"{_label(plugin)}: {label} ({default}) ignored "
                "(agc imports only skills and MCP servers)"
            )
    _plugin_skills(tree, plugin, manifest, found)
    _plugin_servers(tree, plugin, manifest_rel, manifest, found)


def _plugin_skills(
    tree: Path, plugin: PurePosixPath, manifest: dict[str, Any], found: Discovery
) -> None:
    declared = manifest.get("skills")
    if declared is None:
        roots = [plugin / "skills"] if _is_dir(tree / plugin / "skills") else []
    else:
        values = declared if isinstance(declared, list) else [declared]
        roots = [
            path for value in values if (path := _manifest_path(value, "skills", plugin, found))
        ]
    for root in roots:
        if _is_file(tree / root / "SKILL.md"):
            _add_skill(tree, root, root.name, found)
        elif root.name == "SKILL.md" and _is_file(tree / root):
            _add_skill(tree, root.parent, root.parent.name, found)
        elif _is_dir(tree / root):
            for name in _subdirs(tree / root):
                if _is_file(tree / root / name / "SKILL.md"):
                    _add_skill(tree, root / name, name, found)
        else:
            found.note(f"{_label(plugin)}: skills path ./{root.relative_to(plugin)} does not exist")


def _plugin_servers(
    tree: Path,
    plugin: PurePosixPath,
    manifest_rel: PurePosixPath,
    manifest: dict[str, Any],
    found: Discovery,
) -> None:
    declared = manifest.get("mcpServers")
    if declared is None:
        if _is_file(tree / plugin / ".mcp.json"):
            _add_config_file(
                tree, plugin / ".mcp.json", plugin, found, plugin_root=plugin, bare_map=True
            )
        return
    if isinstance(declared, dict):
        servers, error = servers_from_map(declared)
        if error is not None:
            found.note(f"{_rel(manifest_rel)}: mcpServers {error}")
            found.errors.append(f"{_rel(manifest_rel)}: mcpServers {error}")
        _add_servers(servers, manifest_rel, plugin, found, json_form=True, plugin_root=plugin)
        return
    path = _manifest_path(declared, "mcpServers", plugin, found)
    if path is None:
        return
    if not _is_file(tree / path):
        found.note(f"{_label(plugin)}: mcpServers path ./{path.relative_to(plugin)} does not exist")
        return
    _add_config_file(tree, path, path.parent, found, plugin_root=plugin, bare_map=True)


# -- items ------------------------------------------------------------------------------


def _add_skill(tree: Path, skill_dir: PurePosixPath, fallback_name: str, found: Discovery) -> None:
    skill_file = skill_dir / "SKILL.md"
    try:
        data = read_small_file(tree / skill_file, max_bytes=MAX_SKILL_FILE_BYTES)
    except (OSError, AgcError) as exc:
        front = SkillFrontmatter(None, None, f"SKILL.md cannot be read ({exc})")
    else:
        front = parse_skill_file(data, label=_rel(skill_file))
    original = front.name or fallback_name
    wanted = normalize_name("skill", original)
    notes = list(front.notes)
    if wanted != original:
        notes.append(f"name {original!r} is not a native skill name; the item is named {wanted!r}")
    found.found.append(
        Found(
            type="skill",
            original_name=original,
            wanted_name=wanted,
            source_relative_path=_rel(skill_file),
            fingerprint=tree_fingerprint(tree / skill_dir),
            last_error=front.error,
            skill_dir=_rel(skill_dir),
            notes=tuple(notes),
        )
    )


def _add_config_file(
    tree: Path,
    path: PurePosixPath,
    config_dir: PurePosixPath,
    found: Discovery,
    *,
    plugin_root: PurePosixPath | None,
    bare_map: bool = False,
) -> None:
    try:
        data = read_small_file(tree / path, max_bytes=_MAX_CONFIG_BYTES)
    except (OSError, AgcError) as exc:
        found.note(f"{_rel(path)} cannot be read ({exc})")
        found.errors.append(f"{_rel(path)} cannot be read")
        return
    is_toml = path.name.lower().endswith(".toml")
    if is_toml:
        servers, error = read_codex_config(data)
    elif bare_map or path.name in _BARE_MAP_NAMES:
        servers, error = read_mcp_json(data)
    else:
        servers, error = _wrapped_only(data)
    if error is not None:
        found.note(f"{_rel(path)} is {error}")
        found.errors.append(f"{_rel(path)} is {error}")
        return
    _add_servers(servers, path, config_dir, found, json_form=not is_toml, plugin_root=plugin_root)


def _wrapped_only(data: bytes) -> tuple[list[RawServer], str | None]:
    """A JSON file of another name counts only in the wrapped ``mcpServers`` form."""
    try:
        document = load_json(data)
    except (UnicodeDecodeError, ValueError):
        return [], None
    if isinstance(document, dict) and isinstance(document.get("mcpServers"), dict):
        return servers_from_map(document)
    return [], None


def _add_servers(
    servers: list[RawServer],
    path: PurePosixPath,
    config_dir: PurePosixPath,
    found: Discovery,
    *,
    json_form: bool,
    plugin_root: PurePosixPath | None,
) -> None:
    for server in servers:
        where = f"{_rel(path)}: server {server.name!r}"
        spec = normalize_server(server.value, json_form=json_form, where=where)
        if spec.error is None:
            escape = stays_inside(spec.config, config_dir, plugin_root)
            if escape is not None:
                spec = replace(spec, error=f"`cwd`/`command` {escape}")
        wanted = normalize_name("mcp", server.name)
        notes = list(spec.notes)
        if wanted != server.name:
            notes.append(
                f"name {server.name!r} is not a native MCP server name; "
                f"the item is named {wanted!r}"
            )
        content: Any = spec.config if spec.error is None else jsonable(server.value)
        found.found.append(
            Found(
                type="mcp",
                original_name=server.name,
                wanted_name=wanted,
                source_relative_path=_rel(path),
                fingerprint=json_fingerprint(content),
                last_error=spec.error,
                mcp=McpDetails(
                    config=spec.config,
                    config_dir=_rel(config_dir),
                    plugin_root=_rel(plugin_root) if plugin_root is not None else None,
                ),
                notes=tuple(notes),
            )
        )
