"""Projection: the enabled items as an isolated Codex home, and a sealed record of it.

``project(repo, codex_home)`` writes, under the repository lock:

* a skill root (default ``<codex_home>/extension-skills``) rebuilt from scratch: it is
  built beside the old one and swapped in, so disabled, removed or changed items leave
  nothing behind. Each enabled skill is a copy of its stored folder, in a folder named
  after the item (``_names.skill_folder_name``: a portable file name), whose ``SKILL.md``
  frontmatter ``name`` is the item's name (a renamed skill's
  copy is renamed; the stored original never changes). Nested ``SKILL.md`` files and
  plugin manifests are left out of the copy, so Codex sees exactly one skill per item.
  The launcher registers the root with the app-server's ``skills/extraRoots/set``;
* ``<codex_home>/config.toml``: the base configuration (``--base-config``: model
  provider, the built-in ``agc_tools`` server …), each enabled MCP item as
  ``[mcp_servers.<name>]`` with only the fields Codex reads (``_mcp``), ``enabled =
  true``, ``required = false``, and ``mcp_optional_startup_grace_ms`` written
  explicitly. A server of the base configuration is never overridden: a third-party
  item whose name collides with one is skipped with ``lastError``;
* ``<store>/extensions/projections/<projectionId>.jsonl``: the record of what was
  projected (every item with its content fingerprint, what was skipped and why),
  sealed with a BLAKE3 sidecar (``b3sum --check``), written before the Codex home is
  swapped, so no projection is ever used without its record.

Before an item is projected its stored content is fingerprinted again; an item whose
bytes changed since import is skipped with ``lastError``. agc refuses to replace a
``config.toml`` or skill root it did not write.
"""

from __future__ import annotations

import contextlib
import copy
import errno
import os
import secrets
import shutil
import stat
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

import tomli_w

from agc._core.digest import digests_equal
from agc._core.fs import atomic_write_bytes, store_write_error
from agc._core.json import exceeds_depth
from agc._core.jsonl import JsonlFileWriter, describe_os_error, make_dirs
from agc._core.sidecar import sidecar_paths
from agc.errors import AgcError, InputError, ProjectionRefusedError, UnsafePathError
from agc.extensions._documents import MAX_DOCUMENT_DEPTH
from agc.extensions._fingerprint import (
    bytes_fingerprint,
    json_fingerprint,
    jsonable,
    tree_fingerprint,
)
from agc.extensions._mcp import (
    MAX_NUMBER,
    EnvBlocklist,
    credential_warnings,
    forwards,
    project_server,
    stored_credential_warnings,
)
from agc.extensions._model import ExtensionIndex, ExtensionItem
from agc.extensions._names import collision_key, skill_folder_name
from agc.extensions._private import PRIVATE_FILE_MODE, private_dir, private_file
from agc.extensions._repo import ExtensionRepository
from agc.extensions._skill import parse_skill_file, rename_frontmatter

__all__ = [
    "CONFIG_HEADER",
    "DEFAULT_SKILL_ROOT_NAME",
    "DEFAULT_STARTUP_GRACE_MS",
    "ProjectedMcpServer",
    "ProjectedSkill",
    "ProjectionResult",
    "SkippedItem",
    "project",
]

DEFAULT_STARTUP_GRACE_MS: Final = 120_000
"""How long Codex waits for optional MCP servers before the first turn, in ms."""
DEFAULT_SKILL_ROOT_NAME: Final = "extension-skills"
CONFIG_HEADER: Final = (
    "# Written by `agc ext project` from the extension index; rebuilt on every projection.\n"
)
SKILL_ROOT_MARKER: Final = ".agc-skill-root"
_CODEX_STATE: Final = ("auth.json", "sessions", "archived_sessions", "history.jsonl")
"""What a Codex writes in its own home (its login, its sessions, its history)."""
RECORD_SCHEMA_VERSION: Final = 1
_PLUGIN_DIRS: Final = frozenset({".codex-plugin", ".claude-plugin"})
_BASE_CONFIG_HINT: Final = (
    "Give --base-config a Codex config.toml: its [mcp_servers.<name>] tables are kept as written."
)


@dataclass(frozen=True)
class ProjectedSkill:
    """A skill in the skill root: item id, its name, and the path of its ``SKILL.md``."""

    id: str
    name: str
    path: Path


@dataclass(frozen=True)
class ProjectedMcpServer:
    """An MCP server in ``config.toml``: item id, its name (the table key), the client
    secrets it asked for and was not given, the variables it is given (``forwarded``)
    and one warning per credential sent to a remote server."""

    id: str
    name: str
    not_forwarded: tuple[str, ...] = ()
    forwarded: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class SkippedItem:
    """An enabled item that was not projected, and why."""

    id: str
    type: str
    name: str
    reason: str


@dataclass(frozen=True)
class ProjectionResult:
    """One projection.

    Attributes:
        projection_id: ``projection-<Unix ms>-<8 hex>``, the record's name.
        skill_root: the folder to pass to ``skills/extraRoots/set``.
        config_toml: the ``config.toml`` written.
        fingerprint: ``blake3:`` over the enabled set (item and source ids, names,
            source paths, content fingerprints, projected tables): the launcher's pool
            key changes whenever what the agent gets changes.
        skills, mcp_servers: what was projected, in index order.
        skipped: enabled items left out, with the reason.
        record: the sealed projection record.
    """

    projection_id: str
    skill_root: Path
    config_toml: Path
    fingerprint: str
    skills: tuple[ProjectedSkill, ...]
    mcp_servers: tuple[ProjectedMcpServer, ...]
    skipped: tuple[SkippedItem, ...]
    record: Path

    def to_dict(self) -> dict[str, Any]:
        """``{skillRoot, configToml, fingerprint, skills, mcpServers}`` plus
        ``projectionId``, ``record`` and ``skipped``."""
        return {
            "skillRoot": str(self.skill_root),
            "configToml": str(self.config_toml),
            "fingerprint": self.fingerprint,
            "skills": [
                {"id": skill.id, "name": skill.name, "path": str(skill.path)}
                for skill in self.skills
            ],
            "mcpServers": [
                {
                    "id": server.id,
                    "name": server.name,
                    "forwarded": list(server.forwarded),
                    "warnings": list(server.warnings),
                }
                for server in self.mcp_servers
            ],
            "projectionId": self.projection_id,
            "record": str(self.record),
            "skipped": [
                {"id": item.id, "type": item.type, "name": item.name, "reason": item.reason}
                for item in self.skipped
            ],
        }


def _check_target(codex_home: Path, skill_root: Path) -> Path:
    if (codex_home.exists() or codex_home.is_symlink()) and not codex_home.is_dir():
        raise ProjectionRefusedError(
            f"--codex-home {codex_home} exists and is not a folder (or a link to one)"
        )
    if skill_root in {codex_home, codex_home / "skills"}:
        raise ProjectionRefusedError(
            f"the skill root {skill_root} is a folder Codex manages itself",
            hint="Leave --skill-root out (default: <codex-home>/extension-skills).",
        )
    config_toml = codex_home / "config.toml"
    if config_toml.is_symlink() or (config_toml.exists() and not _written_by_agc(config_toml)):
        raise ProjectionRefusedError(
            f"{config_toml} exists and was not written by `agc ext project`; agc does not "
            "replace it",
            hint="Give the settings to keep with --base-config FILE and project into a new folder.",
        )
    if not config_toml.exists() and codex_home.is_dir():
        # No projection of agc's yet: a folder holding a Codex's own state (its login,
        # sessions, history) is someone's Codex home, not agc's to configure.
        state = sorted(name for name in _CODEX_STATE if (codex_home / name).exists())
        if state:
            raise ProjectionRefusedError(
                f"--codex-home {codex_home} holds a Codex's own state ({', '.join(state)}) "
                "and no config.toml agc wrote: agc does not configure another Codex home",
                hint="Project into a new folder, and keep that home's settings with "
                "--base-config FILE.",
            )
    if skill_root.is_symlink() or (skill_root.exists() and not _is_our_skill_root(skill_root)):
        raise ProjectionRefusedError(
            f"{skill_root} exists and is not a skill root agc made; agc does not delete it"
        )
    return config_toml


def _check_nesting(home: Path, root: Path, repository: Path) -> None:
    """Refuse targets that one rebuild would delete or that lie in the repository.

    The skill root is replaced whole at every projection, so a Codex home (its
    credentials, sessions and config.toml) or the repository inside it would be deleted
    each time; and a target inside ``<store>/extensions`` would change stored sources.

    Raises:
        ProjectionRefusedError: naming both folders.
    """
    real_home, real_root = home.resolve(), root.resolve()
    if real_home == real_root or real_home.is_relative_to(real_root):
        raise ProjectionRefusedError(
            f"--codex-home {home} is inside the skill root {root}, which every projection "
            "rebuilds from scratch",
            hint="Leave --skill-root out (default: <codex-home>/extension-skills).",
        )
    real_repository = repository.resolve()
    if real_repository.is_relative_to(real_root):
        raise ProjectionRefusedError(
            f"the extension repository {repository} is inside the skill root {root}, which "
            "every projection rebuilds from scratch",
            hint="Give --skill-root a folder outside the store.",
        )
    for what, path in (("--codex-home", real_home), ("the skill root", real_root)):
        if path == real_repository or path.is_relative_to(real_repository):
            raise ProjectionRefusedError(
                f"{what} {path} is inside the extension repository {repository}",
                hint="Project into a folder outside the store.",
            )


def _written_by_agc(path: Path) -> bool:
    """Whether ``path`` is a regular file starting with :data:`CONFIG_HEADER`.

    Opened without following a link and without blocking (a FIFO put in its place has
    no writer: a plain open would wait forever), then checked to be a regular file.
    """
    header = CONFIG_HEADER.encode()
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        return os.read(fd, len(header)) == header
    except OSError:
        return False
    finally:
        os.close(fd)


def _is_our_skill_root(path: Path) -> bool:
    if not path.is_dir():
        return False
    try:
        entries = os.listdir(path)
    except OSError:
        return False
    return not entries or SKILL_ROOT_MARKER in entries


def _cleanup_leftovers(skill_root: Path) -> None:
    """Remove half-swapped roots a crash left beside ``skill_root``."""
    prefixes = (f".{skill_root.name}.new-", f".{skill_root.name}.old-")
    with contextlib.suppress(OSError):
        for entry in os.listdir(skill_root.parent):
            if entry.startswith(prefixes):
                shutil.rmtree(skill_root.parent / entry, ignore_errors=True)


def _copy_skill(source: Path, dest: Path, *, top: bool = True) -> None:
    """Copy a stored skill folder; nested ``SKILL.md`` and plugin manifests left out.

    Raises:
        UnsafePathError: a link or special file in the stored tree (it was altered).
    """
    dest.mkdir(mode=0o755)
    for name in sorted(os.listdir(source)):
        path = source / name
        info = path.lstat()
        if stat.S_ISDIR(info.st_mode):
            if name in _PLUGIN_DIRS:
                continue
            _copy_skill(path, dest / name, top=False)
        elif stat.S_ISREG(info.st_mode):
            if name == "SKILL.md" and not top:
                continue
            mode = 0o755 if info.st_mode & 0o100 else 0o644
            shutil.copyfile(path, dest / name, follow_symlinks=False)
            (dest / name).chmod(mode)
        else:
            raise UnsafePathError(f"{path} is a link or special file in a stored source")


def _same_fingerprint(expected: str, actual: str) -> bool:
    return digests_equal(expected.removeprefix("blake3:"), actual.removeprefix("blake3:"))


@dataclass
class _Run:
    repo: ExtensionRepository
    index: ExtensionIndex
    blocklist: EnvBlocklist

    def __post_init__(self) -> None:
        self.updated: dict[str, ExtensionItem] = {}
        self.skipped: list[SkippedItem] = []

    def skip(self, item: ExtensionItem, reason: str, *, record_error: bool) -> None:
        self.skipped.append(SkippedItem(item.id, item.type, item.name, reason))
        if record_error:
            self.updated[item.id] = replace(
                item.with_error(reason, "projection"), startup_status=None
            )

    def settle(self, item: ExtensionItem, error: str | None) -> None:
        """Record the outcome of a projected item (clears an older one)."""
        if error is not None:
            self.updated[item.id] = replace(
                item.with_error(error, "forwarding"), startup_status=None
            )
        elif item.error_origin != "import" and (
            item.last_error is not None or item.startup_status is not None
        ):
            self.updated[item.id] = replace(item.with_error(None, None), startup_status=None)

    def tree(self, item: ExtensionItem) -> Path:
        return self.repo.tree_dir(self.index.source(item.source_id))


def _require_utf8_path(what: str, path: Path) -> None:
    """Refuse a folder whose path is not UTF-8 (undecodable bytes, PEP 383): Codex reads
    ``CODEX_HOME`` and the skill root as UTF-8 text and the sealed projection record
    keeps them as JSON strings, which have no form for such bytes.

    Raises:
        InputError: naming the folder by its bytes.
    """
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InputError(
            f"the {what} {os.fsencode(path)!r} is not UTF-8",
            hint="Choose a folder whose path is UTF-8: Codex and the projection record "
            "keep it as UTF-8 text.",
        ) from exc


def project(
    repo: ExtensionRepository,
    codex_home: str | os.PathLike[str],
    *,
    skill_root: str | os.PathLike[str] | None = None,
    base_config: Mapping[str, Any] | None = None,
    startup_grace_ms: int = DEFAULT_STARTUP_GRACE_MS,
    blocklist: EnvBlocklist | None = None,
) -> ProjectionResult:
    """Project the enabled items into ``codex_home`` (see the module docstring).

    Args:
        repo: the repository.
        codex_home: the isolated ``CODEX_HOME`` (created if absent).
        skill_root: where the skill root goes (default ``<codex_home>/extension-skills``).
        base_config: a parsed ``config.toml`` to build on; its ``mcp_servers`` win.
        startup_grace_ms: ``mcp_optional_startup_grace_ms`` (milliseconds, 0 to 2^53).
        blocklist: the client's secret env names (default :class:`EnvBlocklist`).

    Raises:
        ProjectionRefusedError: the target holds a ``config.toml`` or skill root agc
            did not write.
        InputError: the Codex home or the skill root has a path that is not UTF-8,
            ``base_config`` nests deeper than 64 levels, or ``startup_grace_ms`` is
            outside 0 to 2^53.
        StoreError: writing failed (disk full …); the previous projection stays whole.
        ExtensionIndexInvalidError: the index is damaged.
    """
    if not 0 <= startup_grace_ms <= MAX_NUMBER:
        raise InputError(
            f"the startup grace {startup_grace_ms} ms is not between 0 and 2^53 ms",
            hint="Give --startup-grace-ms a number of milliseconds (default 120000).",
        )
    home = Path(codex_home).absolute()
    root = Path(skill_root).absolute() if skill_root is not None else home / DEFAULT_SKILL_ROOT_NAME
    for what, path in (("Codex home", home), ("skill root", root)):
        _require_utf8_path(what, path)
    _check_nesting(home, root, repo.root)
    config_toml = _check_target(home, root)
    if base_config is not None and exceeds_depth(base_config, MAX_DOCUMENT_DEPTH):
        raise InputError(
            f"the base configuration nests tables or arrays deeper than {MAX_DOCUMENT_DEPTH} "
            "levels",
            hint=_BASE_CONFIG_HINT,
        )
    base = copy.deepcopy(dict(base_config or {}))
    base_servers = base.pop("mcp_servers", {}) or {}
    if not isinstance(base_servers, dict):
        raise ProjectionRefusedError(
            "the base configuration's mcp_servers is not a table", hint=_BASE_CONFIG_HINT
        )
    with repo.locked() as index:
        run = _Run(repo=repo, index=index, blocklist=blocklist or EnvBlocklist())
        created_at = repo.clock()
        projection_id = f"projection-{created_at:013d}-{secrets.token_hex(4)}"
        try:
            fresh = not home.exists()
            make_dirs(home, root.parent)
            if fresh:  # a Codex home holds credentials: private to the user
                home.chmod(0o700)
        except OSError as exc:
            raise store_write_error(
                f"cannot prepare {home}: {describe_os_error(exc)}", home, exc
            ) from exc
        _cleanup_leftovers(root)
        staging = root.parent / f".{root.name}.new-{secrets.token_hex(4)}"
        try:
            skills = _build_skill_root(run, staging, root)
            servers, tables = _build_servers(run, base_servers)
            document: dict[str, Any] = {**base, "mcp_optional_startup_grace_ms": startup_grace_ms}
            document["mcp_servers"] = {**tables, **base_servers}
            text = CONFIG_HEADER + tomli_w.dumps(document)
            if tomllib.loads(text) != document:  # pragma: no cover - a writer bug guard
                raise AgcError("config.toml did not read back as written")
            fingerprint = _fingerprint(run, skills, servers, tables, base_servers, startup_grace_ms)
            record = repo.projections_dir / f"{projection_id}.jsonl"
            # The record names no value, but it lives in the owner-only repository:
            # created 0600 before the writer opens it (which keeps an existing mode).
            private_dir(repo.projections_dir)
            private_file(record)
            _write_record(
                record,
                run,
                header={
                    "record": "projection",
                    "schemaVersion": RECORD_SCHEMA_VERSION,
                    "projectionId": projection_id,
                    "createdAt": created_at,
                    "codexHome": str(home),
                    "skillRoot": str(root),
                    "configToml": str(config_toml),
                    "configTomlFingerprint": bytes_fingerprint(text.encode("utf-8")),
                    "fingerprint": fingerprint,
                    "startupGraceMs": startup_grace_ms,
                },
                skills=skills,
                servers=servers,
                tables=tables,
                base_servers=base_servers,
            )
            _private_beside(record)
            _swap(staging, root)
            try:
                atomic_write_bytes(config_toml, text.encode("utf-8"), overwrite=True, mode=0o600)
            except OSError as exc:
                raise store_write_error(
                    f"writing {config_toml} failed: {describe_os_error(exc)}", config_toml, exc
                ) from exc
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        items = tuple(run.updated.get(item.id, item) for item in index.items)
        repo.save(replace(index, items=items, last_projection_id=projection_id))
    return ProjectionResult(
        projection_id=projection_id,
        skill_root=root,
        config_toml=config_toml,
        fingerprint=fingerprint,
        skills=tuple(skills),
        mcp_servers=tuple(servers),
        skipped=tuple(run.skipped),
        record=record,
    )


def _build_skill_root(run: _Run, staging: Path, root: Path) -> list[ProjectedSkill]:
    try:
        staging.mkdir(mode=0o755)
        (staging / SKILL_ROOT_MARKER).write_text(
            "This folder is rebuilt by `agc ext project`; changes here are lost.\n"
        )
    except OSError as exc:
        raise store_write_error(
            f"cannot create {staging}: {describe_os_error(exc)}", staging, exc
        ) from exc
    projected: list[ProjectedSkill] = []
    used: set[str] = set()
    folders: set[str] = set()
    for item in run.index.items:
        if item.type != "skill" or not item.enabled:
            continue
        if not item.launchable:
            run.skip(item, item.last_error or "it cannot be launched", record_error=False)
            continue
        key = collision_key("skill", item.name)
        if key in used:
            run.skip(
                item, f"another projected skill is already named {item.name!r}", record_error=True
            )
            continue
        source = run.tree(item) / (item.skill_dir or ".")
        folder = _free_folder(skill_folder_name(item.name), folders)
        target = staging / folder
        try:
            if not _same_fingerprint(item.fingerprint, tree_fingerprint(source)):
                run.skip(
                    item,
                    "its stored content changed since import (fingerprint mismatch)",
                    record_error=True,
                )
                folders.discard(folder.casefold())
                continue
            _copy_skill(source, target)
            skill_file = target / "SKILL.md"
            data = skill_file.read_bytes()
            if parse_skill_file(data).name != item.name:
                skill_file.write_bytes(rename_frontmatter(data, item.name))
        except (UnsafePathError, ValueError, UnicodeDecodeError) as exc:
            run.skip(item, f"its stored copy cannot be projected ({exc})", record_error=True)
            shutil.rmtree(target, ignore_errors=True)
            folders.discard(folder.casefold())
            continue
        except OSError as exc:
            if exc.errno in {errno.ENOSPC, errno.EFBIG}:  # the disk, not the item
                raise store_write_error(
                    f"copying skill {item.name} failed: {describe_os_error(exc)}",
                    target,
                    exc,
                ) from exc
            run.skip(
                item,
                f"its stored copy cannot be read ({describe_os_error(exc)})",
                record_error=True,
            )
            shutil.rmtree(target, ignore_errors=True)
            folders.discard(folder.casefold())
            continue
        used.add(key)
        run.settle(item, None)
        projected.append(
            ProjectedSkill(id=item.id, name=item.name, path=root / folder / "SKILL.md")
        )
    return projected


def _free_folder(wanted: str, taken: set[str]) -> str:
    """``wanted``, or the first ``wanted-2``, ``wanted-3`` … not in ``taken`` (compared
    case-folded: Windows and default macOS file systems ignore case); then taken."""
    folder, number = wanted, 1
    while folder.casefold() in taken:
        number += 1
        folder = f"{wanted}-{number}"
    taken.add(folder.casefold())
    return folder


def _build_servers(
    run: _Run, base_servers: Mapping[str, Any]
) -> tuple[list[ProjectedMcpServer], dict[str, dict[str, Any]]]:
    base_keys = {collision_key("mcp", str(name)) for name in base_servers}
    projected: list[ProjectedMcpServer] = []
    tables: dict[str, dict[str, Any]] = {}
    used: set[str] = set()
    for item in run.index.items:
        if item.type != "mcp" or not item.enabled:
            continue
        if not item.launchable or item.mcp is None:
            run.skip(item, item.last_error or "it cannot be launched", record_error=False)
            continue
        key = collision_key("mcp", item.name)
        if key in base_keys:
            run.skip(
                item,
                f"the name {item.name!r} is taken by a built-in server of the base configuration",
                record_error=True,
            )
            continue
        if key in used:
            run.skip(
                item, f"another projected server is already named {item.name!r}", record_error=True
            )
            continue
        if not _same_fingerprint(item.fingerprint, json_fingerprint(item.mcp.config)):
            run.skip(
                item,
                "its stored configuration changed since import (fingerprint mismatch)",
                record_error=True,
            )
            continue
        tree = run.tree(item)
        plugin_root = tree / item.mcp.plugin_root if item.mcp.plugin_root is not None else None
        server = project_server(
            item.mcp.config,
            config_dir=tree / item.mcp.config_dir,
            plugin_root=plugin_root,
            blocklist=run.blocklist,
        )
        error = None
        if server.dropped:
            error = "not forwarded (the client's own secrets): " + ", ".join(server.dropped)
        used.add(key)
        run.settle(item, error)
        tables[item.name] = server.table
        given = forwards(item.mcp.config, run.blocklist)
        projected.append(
            ProjectedMcpServer(
                id=item.id,
                name=item.name,
                not_forwarded=server.dropped,
                forwarded=tuple(f.variable for f in given if not f.blocked),
                warnings=(
                    *credential_warnings(item.name, item.mcp.config, run.blocklist),
                    *stored_credential_warnings(item.name, item.mcp.config),
                ),
            )
        )
    return projected, tables


def _fingerprint(
    run: _Run,
    skills: list[ProjectedSkill],
    servers: list[ProjectedMcpServer],
    tables: Mapping[str, Any],
    base_servers: Mapping[str, Any],
    grace_ms: int,
) -> str:
    by_id = {item.id: item for item in run.index.items}

    def entry(item_id: str) -> dict[str, Any]:
        item = by_id[item_id]
        return {
            "id": item.id,
            "sourceId": item.source_id,
            "name": item.name,
            "sourceRelativePath": item.source_relative_path,
            "fingerprint": item.fingerprint,
        }

    return json_fingerprint(
        {
            "skills": [entry(skill.id) for skill in skills],
            "mcpServers": [
                {**entry(server.id), "table": json_fingerprint(tables[server.name])}
                for server in servers
            ],
            "builtin": {
                str(name): json_fingerprint(jsonable(table)) for name, table in base_servers.items()
            },
            "startupGraceMs": grace_ms,
        }
    )


def _write_record(
    path: Path,
    run: _Run,
    *,
    header: dict[str, Any],
    skills: list[ProjectedSkill],
    servers: list[ProjectedMcpServer],
    tables: Mapping[str, Any],
    base_servers: Mapping[str, Any],
) -> None:
    by_id = {item.id: item for item in run.index.items}
    with JsonlFileWriter(path, fsync="close") as writer:
        writer.write(header)
        for skill in skills:
            item = by_id[skill.id]
            writer.write({"record": "skill", **_describe(item), "path": str(skill.path)})
        for server in servers:
            item = by_id[server.id]
            writer.write(
                {
                    "record": "mcp",
                    **_describe(item),
                    "tableFingerprint": json_fingerprint(tables[server.name]),
                    "notForwarded": list(server.not_forwarded),
                    "forwarded": list(server.forwarded),
                }
            )
        for name, table in base_servers.items():
            writer.write(
                {
                    "record": "builtin",
                    "name": str(name),
                    "tableFingerprint": json_fingerprint(jsonable(table)),
                }
            )
        for skipped in run.skipped:
            writer.write(
                {
                    "record": "skipped",
                    "id": skipped.id,
                    "type": skipped.type,
                    "name": skipped.name,
                    "reason": skipped.reason,
                }
            )


def _private_beside(record: Path) -> None:
    """Make the checksum sidecar the sealed writer put beside ``record`` owner-only, as
    everything in the repository is (the writer removes its checkpoint file at sealing).

    Raises:
        StoreError: it cannot be changed.
    """
    for path in sidecar_paths(record).values():
        try:
            if path.exists():
                path.chmod(PRIVATE_FILE_MODE)
        except OSError as exc:
            raise store_write_error(
                f"cannot make {path} private: {describe_os_error(exc)}", path, exc
            ) from exc


def _describe(item: ExtensionItem) -> dict[str, Any]:
    return {
        "id": item.id,
        "sourceId": item.source_id,
        "name": item.name,
        "originalName": item.original_name,
        "sourceRelativePath": item.source_relative_path,
        "fingerprint": item.fingerprint,
    }


def _swap(staging: Path, root: Path) -> None:
    """Put the new skill root in place of the old one (two renames, old one removed)."""
    old = root.parent / f".{root.name}.old-{secrets.token_hex(4)}"
    try:
        if root.exists():
            os.rename(root, old)
        os.rename(staging, root)
    except OSError as exc:
        if old.exists() and not root.exists():
            with contextlib.suppress(OSError):
                os.rename(old, root)
        raise store_write_error(
            f"cannot put the skill root in place at {root}: {describe_os_error(exc)}", root, exc
        ) from exc
    shutil.rmtree(old, ignore_errors=True)
