"""Real-shaped extension inputs, built by the tests (nothing is downloaded).

The shapes follow what is published: an Agent Skills ``SKILL.md`` (YAML frontmatter),
a Codex plugin (``.codex-plugin/plugin.json`` with ``./`` paths), a Claude Code plugin,
a Codex ``config.toml`` and the ``.mcp.json`` bare map plugins ship.
"""

from __future__ import annotations

import json
import stat
import zipfile
from collections.abc import Iterable
from pathlib import Path

RUN_MARKER = "ran.txt"


def write_skill(
    folder: Path,
    name: str | None,
    *,
    description: str = "Use this skill when the user asks for it.",
    body: str = "# Instructions\n\nDo the thing step by step.\n",
    extra: str = "",
) -> Path:
    """``folder/SKILL.md`` with frontmatter ``name``/``description`` (``name=None``
    leaves the field out)."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = ["---"]
    if name is not None:
        lines.append(f"name: {name}")
    lines.append(f"description: {description}")
    if extra:
        lines.append(extra.rstrip("\n"))
    lines.append("---")
    path = folder / "SKILL.md"
    path.write_text("\n".join(lines) + "\n" + body, encoding="utf-8")
    return path


def write_script(path: Path, marker_dir: Path) -> Path:
    """An executable script that, if anything ever ran it, would leave a marker file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\necho ran > '{marker_dir / RUN_MARKER}'\n", encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def plugin_with_two_skills_and_mcp(
    root: Path, *, name: str = "my-plugin", manifest: str = ".codex-plugin"
) -> Path:
    """A plugin: skills ``art-skill`` and ``code-skill``, MCP server ``search`` in a
    bare-map ``.mcp.json`` (with a ``_comment``), plus hooks and apps that must be
    ignored."""
    plugin = root / name
    write_skill(plugin / "skills" / "art-skill", "art-skill", description="Draw pixel art.")
    (plugin / "skills" / "art-skill" / "references").mkdir()
    (plugin / "skills" / "art-skill" / "references" / "palette.md").write_text("# Palette\n")
    write_skill(plugin / "skills" / "code-skill", "code-skill", description="Write code.")
    (plugin / manifest).mkdir(parents=True)
    (plugin / manifest / "plugin.json").write_text(
        json.dumps(
            {
                "name": name,
                "version": "1.2.0",
                "description": "Art and code helpers.",
                "skills": "./skills/",
                "mcpServers": "./.mcp.json",
                "hooks": "./hooks/hooks.json",
                "apps": "./.app.json",
                "interface": {"displayName": "My Plugin"},
            },
            indent=2,
        )
    )
    (plugin / ".mcp.json").write_text(
        json.dumps(
            {
                "_comment": "servers of my-plugin",
                "search": {
                    "command": "node",
                    "args": ["./server/index.js", "--port", "0"],
                    "env": {"SEARCH_MODE": "fast"},
                },
            },
            indent=2,
        )
    )
    (plugin / "server").mkdir()
    (plugin / "server" / "index.js").write_text("console.log('search server');\n")
    (plugin / "hooks").mkdir()
    (plugin / "hooks" / "hooks.json").write_text(
        json.dumps(
            {"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "./x.sh"}]}]}}
        )
    )
    (plugin / ".app.json").write_text(json.dumps({"apps": {"calendar": {"id": "connector_1"}}}))
    return plugin


CONFIG_TOML_TWO_SERVERS = """\
model = "gpt-5-codex"
approval_policy = "never"

[mcp_servers.search]
command = "npx"
args = ["-y", "@example/search-mcp"]
startup_timeout_sec = 20
tool_timeout_sec = 90
enabled_tools = ["search", "fetch"]

[mcp_servers.search.env]
SEARCH_REGION = "eu"

[mcp_servers.filesystem]
command = "./bin/fs-server"
args = ["--root", "."]
cwd = "work"
env_vars = ["HOME_DIR", "OPENAI_API_KEY"]
required = true
enabled = false

[mcp_servers.docs]
url = "https://docs.example.com/mcp"
bearer_token_env_var = "DOCS_TOKEN"
http_headers = { "X-Team" = "blue" }
env_http_headers = { "X-Codex" = "CODEX_HOME", "X-Trace" = "TRACE_ID" }
"""
"""A Codex ``config.toml``: two stdio servers and one streamable-HTTP server."""


def codex_config_two_servers(folder: Path) -> Path:
    """``folder/config.toml`` with ``search`` and ``filesystem`` (stdio) and ``docs``
    (HTTP); ``filesystem`` asks for ``OPENAI_API_KEY`` and ``docs`` for ``CODEX_HOME``."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "config.toml"
    path.write_text(CONFIG_TOML_TWO_SERVERS, encoding="utf-8")
    return path


def bare_map_mcp_json(folder: Path) -> Path:
    """The bare-map ``.mcp.json`` plugins ship: two servers and a ``_comment`` string."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / ".mcp.json"
    path.write_text(
        json.dumps(
            {
                "_comment": "not a server",
                "github": {
                    "type": "http",
                    "url": "https://api.example.com/mcp/",
                    "headers": {"Authorization": "Bearer ${GITHUB_TOKEN}", "X-Client": "agc"},
                },
                "sqlite": {
                    "command": "uvx",
                    "args": ["mcp-server-sqlite", "--db-path", "./data.db"],
                    "env": {"SQLITE_KEY": "${SQLITE_KEY}"},
                },
            },
            indent=2,
        )
    )
    return path


def access_plugins(root: Path, count: int = 3) -> list[Path]:
    """``count`` plugins (Codex and Claude manifests alternating), each with a skill
    named ``access`` of different content."""
    plugins = []
    for number in range(1, count + 1):
        plugin = root / f"vendor-{number}"
        manifest = ".codex-plugin" if number % 2 else ".claude-plugin"
        (plugin / manifest).mkdir(parents=True)
        (plugin / manifest / "plugin.json").write_text(
            json.dumps({"name": f"vendor-{number}", "skills": "./skills"})
        )
        write_skill(
            plugin / "skills" / "access",
            "access",
            description=f"Access control helper from vendor {number}.",
        )
        plugins.append(plugin)
    return plugins


def zip_folder(folder: Path, archive: Path, *, top: str | None = None) -> Path:
    """Zip ``folder`` (entries under ``top/`` when given), keeping executable bits."""
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(folder.rglob("*")):
            relative = path.relative_to(folder).as_posix()
            name = f"{top}/{relative}" if top else relative
            if path.is_dir():
                zf.writestr(zipfile.ZipInfo(name + "/"), b"")
            else:
                info = zipfile.ZipInfo(name)
                info.external_attr = (stat.S_IFREG | (path.stat().st_mode & 0o777)) << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                zf.writestr(info, path.read_bytes())
    return archive


def zip_entries(
    archive: Path,
    entries: Iterable[tuple[str, bytes] | zipfile.ZipInfo | tuple[zipfile.ZipInfo, bytes]],
) -> Path:
    """A zip with exactly the given entries (name and bytes, or a prepared ZipInfo)."""
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        for entry in entries:
            if isinstance(entry, zipfile.ZipInfo):
                zf.writestr(entry, b"")
            elif isinstance(entry[0], zipfile.ZipInfo):
                zf.writestr(entry[0], entry[1])
            else:
                name, data = entry
                assert isinstance(name, str)
                zf.writestr(name, data)
    return archive


def tree_bytes(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` by POSIX path: its bytes."""
    return {
        path.relative_to(root).as_posix(): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file() and not path.is_symlink()
    }
