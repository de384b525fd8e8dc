"""The extension index: imported sources, their items, and how they read as JSON.

``<store>/extensions/index.json`` (documented in ``docs/extensions.md``)::

    {"schemaVersion": 1, "lastProjectionId": null | "projection-…",
     "sources": [ImportedSource…], "items": [ExtensionItem…]}

Reading is strict: a field of the wrong type, an id of the wrong form, a path with
``..`` or an unknown ``schemaVersion`` is :class:`~agc.errors.ExtensionIndexInvalidError`
(exit 3), so that a damaged or edited index is never half-used and never rewritten.
Ids and stored paths are checked because deletion and projection turn them into paths.
"""

from __future__ import annotations

import json
import re
import secrets
from dataclasses import dataclass, field, replace
from typing import Any, Final, Literal, cast

from agc.errors import ExtensionIndexInvalidError
from agc.extensions._documents import MAX_DOCUMENT_DEPTH, load_json
from agc.extensions._names import ItemType

__all__ = [
    "INDEX_SCHEMA_VERSION",
    "ErrorOrigin",
    "ExtensionIndex",
    "ExtensionItem",
    "ImportedSource",
    "ItemStatus",
    "McpDetails",
    "SourceKind",
    "StartupStatus",
    "is_projection_id",
    "new_item_id",
    "new_source_id",
    "safe_relative_path",
]

INDEX_SCHEMA_VERSION: Final = 1

SourceKind = Literal["file", "folder", "zip"]
ErrorOrigin = Literal["import", "projection", "forwarding", "startup"]
StartupStatus = Literal["starting", "ready", "failed", "cancelled"]
ItemStatus = Literal["enabled", "disabled", "unknown", "unavailable", "failed"]

# The index holds MCP configurations (at most MAX_DOCUMENT_DEPTH deep) a few levels down.
_INDEX_DEPTH: Final = MAX_DOCUMENT_DEPTH + 8
_ITEM_ID_RE: Final = re.compile(r"extension-[0-9a-f]{16}")
_SOURCE_ID_RE: Final = re.compile(r"source-[0-9a-f]{16}")
_PROJECTION_ID_RE: Final = re.compile(r"projection-[0-9]{13}-[0-9a-f]{8}")
_FINGERPRINT_RE: Final = re.compile(r"blake3:[0-9a-f]{64}")
_TYPES: Final = ("skill", "mcp", "unknown")
_KINDS: Final = ("file", "folder", "zip")
_ORIGINS: Final = ("import", "projection", "forwarding", "startup")
_STARTUP: Final = ("starting", "ready", "failed", "cancelled")


def new_item_id() -> str:
    return f"extension-{secrets.token_hex(8)}"


def new_source_id() -> str:
    return f"source-{secrets.token_hex(8)}"


def safe_relative_path(text: str) -> bool:
    """A POSIX path relative to a source tree that cannot leave it: no ``..``, not
    absolute, no backslash or NUL (``.`` is the tree itself)."""
    if not text or text.startswith("/") or "\\" in text or "\x00" in text:
        return False
    return all(part not in {"", ".."} for part in text.split("/")) or text == "."


@dataclass(frozen=True)
class McpDetails:
    """Where an MCP item's configuration came from and what it says.

    Attributes:
        config: the server reduced to the fields Codex reads (see ``_mcp``).
        config_dir: folder of the file it came from, relative to the source tree
            (``"."`` for the top); relative ``cwd`` values are resolved against it.
        plugin_root: the plugin's folder (``${CLAUDE_PLUGIN_ROOT}``), if from a plugin.
    """

    config: dict[str, Any]
    config_dir: str
    plugin_root: str | None = None


@dataclass(frozen=True)
class ImportedSource:
    """One import: a file, folder or zip, kept once byte for byte.

    Attributes:
        id: ``source-<16 hex>``.
        original_name: the file or folder name as imported.
        storage_path: ``sources/<id>``, relative to ``<store>/extensions``.
        fingerprint: ``blake3:`` of the file or archive bytes, or of the folder tree.
        kind: ``file``, ``folder`` or ``zip``.
        imported_at: Unix time in ms.
        notes: what discovery ignored (hooks, apps, bad manifest paths, links …).
    """

    id: str
    original_name: str
    storage_path: str
    fingerprint: str
    kind: SourceKind
    imported_at: int
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "originalName": self.original_name,
            "storagePath": self.storage_path,
            "fingerprint": self.fingerprint,
            "kind": self.kind,
            "importedAt": self.imported_at,
            "notes": list(self.notes),
        }


@dataclass(frozen=True)
class ExtensionItem:
    """One Skill, MCP server or unknown content found in a source.

    Attributes:
        id: ``extension-<16 hex>``.
        source_id: the :class:`ImportedSource` it came from (provenance only).
        type: ``skill``, ``mcp`` or ``unknown``.
        name: the one name, shown in lists and used at runtime.
        original_name: the name the extension gave itself; never changes.
        source_relative_path: the ``SKILL.md``, configuration or file it came from,
            relative to the source tree.
        enabled: projected at the next launch (never true for ``unknown``).
        fingerprint: ``blake3:`` of its content (skill folder tree, server JSON).
        last_error: why it is unavailable or failed, ``None`` if fine.
        error_origin: ``import`` (permanent: never launched), ``projection`` (left out
            of the last projection), ``forwarding`` (projected, but some environment
            variables it asked for are the client's secrets and were not forwarded) or
            ``startup`` (Codex reported a failed start).
        startup_status: the last Codex startup status seen, if any.
        imported_at: Unix time in ms.
        skill_dir: a skill's folder, relative to the source tree.
        mcp: an MCP server's configuration.
        notes: what was converted or left out.
    """

    id: str
    source_id: str
    type: ItemType
    name: str
    original_name: str
    source_relative_path: str
    enabled: bool
    fingerprint: str
    last_error: str | None
    imported_at: int
    error_origin: ErrorOrigin | None = None
    startup_status: StartupStatus | None = None
    skill_dir: str | None = None
    mcp: McpDetails | None = None
    notes: tuple[str, ...] = field(default=())

    @property
    def status(self) -> ItemStatus:
        """``unknown``, ``disabled``, ``failed`` (Codex could not start it),
        ``unavailable`` (it cannot be launched as imported or projected) or ``enabled``."""
        if self.type == "unknown":
            return "unknown"
        if not self.enabled:
            return "disabled"
        if self.error_origin == "startup" or self.startup_status in {"failed", "cancelled"}:
            return "failed"
        if self.last_error is not None and self.error_origin != "forwarding":
            return "unavailable"
        return "enabled"

    @property
    def launchable(self) -> bool:
        """Enabled, not unknown, and without a permanent (import) error."""
        return self.type != "unknown" and self.enabled and self.error_origin != "import"

    def with_error(self, message: str | None, origin: ErrorOrigin | None) -> ExtensionItem:
        """A copy with ``last_error`` set (or cleared when ``message`` is ``None``)."""
        return replace(self, last_error=message, error_origin=origin if message else None)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": self.id,
            "sourceId": self.source_id,
            "type": self.type,
            "name": self.name,
            "originalName": self.original_name,
            "sourceRelativePath": self.source_relative_path,
            "enabled": self.enabled,
            "fingerprint": self.fingerprint,
            "lastError": self.last_error,
            "errorOrigin": self.error_origin,
            "startupStatus": self.startup_status,
            "importedAt": self.imported_at,
            "notes": list(self.notes),
        }
        if self.skill_dir is not None:
            data["skillDir"] = self.skill_dir
        if self.mcp is not None:
            data["mcp"] = {
                "config": self.mcp.config,
                "configDir": self.mcp.config_dir,
                "pluginRoot": self.mcp.plugin_root,
            }
        return data

    def dto(self, source_name: str) -> dict[str, Any]:
        """The item as the import/list interface returns it (camelCase)."""
        return {
            "id": self.id,
            "name": self.name,
            "originalName": self.original_name,
            "extensionType": self.type,
            "sourceName": source_name,
            "sourceRelativePath": self.source_relative_path,
            "enabled": self.enabled,
            "status": self.status,
            "lastError": self.last_error,
        }


@dataclass(frozen=True)
class ExtensionIndex:
    """The whole index. Immutable: changes make a new index (see ``_repo``)."""

    sources: tuple[ImportedSource, ...] = ()
    items: tuple[ExtensionItem, ...] = ()
    last_projection_id: str | None = None

    def source(self, source_id: str) -> ImportedSource:
        for source in self.sources:
            if source.id == source_id:
                return source
        raise KeyError(source_id)

    def source_name(self, item: ExtensionItem) -> str:
        try:
            return self.source(item.source_id).original_name
        except KeyError:
            return ""

    def to_bytes(self) -> bytes:
        document = {
            "schemaVersion": INDEX_SCHEMA_VERSION,
            "lastProjectionId": self.last_projection_id,
            "sources": [source.to_dict() for source in self.sources],
            "items": [item.to_dict() for item in self.items],
        }
        return (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode("utf-8")

    @classmethod
    def from_bytes(cls, data: bytes, *, where: str) -> ExtensionIndex:
        """Parse index bytes strictly.

        Raises:
            ExtensionIndexInvalidError: not JSON, a newer ``schemaVersion``, or any
                field of the wrong shape (the message names the field).
        """
        try:
            document = load_json(data, limit=_INDEX_DEPTH)
        except (UnicodeDecodeError, ValueError) as exc:
            raise ExtensionIndexInvalidError(f"{where} is not valid JSON ({exc})") from exc
        reader = _Reader(where)
        if not isinstance(document, dict):
            raise reader.fail("", "is not a JSON object")
        version = document.get("schemaVersion")
        if version != INDEX_SCHEMA_VERSION:
            raise ExtensionIndexInvalidError(
                f"{where} has schemaVersion {version!r}; this agc reads {INDEX_SCHEMA_VERSION}",
                hint="Upgrade agc to read an index a newer version wrote.",
            )
        last = document.get("lastProjectionId")
        if last is not None and (
            not isinstance(last, str) or not _PROJECTION_ID_RE.fullmatch(last)
        ):
            raise reader.fail("lastProjectionId", "is not a projection id")
        sources = tuple(
            reader.source(entry, f"sources[{index}]")
            for index, entry in enumerate(reader.array(document, "sources", ""))
        )
        items = tuple(
            reader.item(entry, f"items[{index}]")
            for index, entry in enumerate(reader.array(document, "items", ""))
        )
        known = {source.id for source in sources}
        if len(known) != len(sources):
            raise reader.fail("sources", "holds one id twice")
        if len({item.id for item in items}) != len(items):
            raise reader.fail("items", "holds one id twice")
        for index, item in enumerate(items):
            if item.source_id not in known:
                raise reader.fail(f"items[{index}].sourceId", "names no source")
        return cls(sources=sources, items=items, last_projection_id=last)


class _Reader:
    """Typed field access with errors that name the field."""

    def __init__(self, where: str) -> None:
        self.where = where

    def fail(self, path: str, problem: str) -> ExtensionIndexInvalidError:
        at = f" at {path}" if path else ""
        return ExtensionIndexInvalidError(f"{self.where}{at} {problem}")

    def array(self, obj: dict[str, Any], key: str, path: str) -> list[Any]:
        value = obj.get(key)
        if not isinstance(value, list):
            raise self.fail(f"{path}{key}", "is not a list")
        return value

    def text(
        self, obj: dict[str, Any], key: str, path: str, *, pattern: re.Pattern[str] | None = None
    ) -> str:
        value = obj.get(key)
        if not isinstance(value, str) or (pattern is not None and not pattern.fullmatch(value)):
            raise self.fail(f"{path}.{key}", "is missing or malformed")
        return value

    def opt_str(self, obj: dict[str, Any], key: str, path: str) -> str | None:
        value = obj.get(key)
        if value is not None and not isinstance(value, str):
            raise self.fail(f"{path}.{key}", "is not a string or null")
        return value

    def choice(
        self,
        obj: dict[str, Any],
        key: str,
        path: str,
        choices: tuple[str, ...],
        *,
        optional: bool = False,
    ) -> Any:
        value = obj.get(key)
        if (value is None and optional) or value in choices:
            return value
        raise self.fail(f"{path}.{key}", f"is not one of {', '.join(choices)}")

    def number(self, obj: dict[str, Any], key: str, path: str) -> int:
        value = obj.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise self.fail(f"{path}.{key}", "is not a whole number")
        return value

    def notes(self, obj: dict[str, Any], path: str) -> tuple[str, ...]:
        value = obj.get("notes", [])
        if not isinstance(value, list) or not all(isinstance(note, str) for note in value):
            raise self.fail(f"{path}.notes", "is not a list of strings")
        return tuple(value)

    def rel(self, obj: dict[str, Any], key: str, path: str) -> str:
        value = self.text(obj, key, path)
        if not safe_relative_path(value):
            raise self.fail(f"{path}.{key}", f"{value!r} is not a path inside the source")
        return value

    def source(self, entry: Any, path: str) -> ImportedSource:
        if not isinstance(entry, dict):
            raise self.fail(path, "is not an object")
        source_id = self.text(entry, "id", path, pattern=_SOURCE_ID_RE)
        storage = self.text(entry, "storagePath", path)
        if storage != f"sources/{source_id}":
            raise self.fail(f"{path}.storagePath", f"must be sources/{source_id}")
        return ImportedSource(
            id=source_id,
            original_name=self.text(entry, "originalName", path),
            storage_path=storage,
            fingerprint=self.text(entry, "fingerprint", path, pattern=_FINGERPRINT_RE),
            kind=cast(SourceKind, self.choice(entry, "kind", path, _KINDS)),
            imported_at=self.number(entry, "importedAt", path),
            notes=self.notes(entry, path),
        )

    def item(self, entry: Any, path: str) -> ExtensionItem:
        if not isinstance(entry, dict):
            raise self.fail(path, "is not an object")
        item_type = cast(ItemType, self.choice(entry, "type", path, _TYPES))
        enabled = entry.get("enabled")
        if not isinstance(enabled, bool):
            raise self.fail(f"{path}.enabled", "is not true or false")
        skill_dir = None
        mcp = None
        if item_type == "skill":
            skill_dir = self.rel(entry, "skillDir", path)
        if item_type == "mcp":
            details = entry.get("mcp")
            if not isinstance(details, dict) or not isinstance(details.get("config"), dict):
                raise self.fail(f"{path}.mcp", "is not an object with a config")
            plugin_root = self.opt_str(details, "pluginRoot", f"{path}.mcp")
            if plugin_root is not None and not safe_relative_path(plugin_root):
                raise self.fail(f"{path}.mcp.pluginRoot", "is not a path inside the source")
            mcp = McpDetails(
                config=details["config"],
                config_dir=self.rel(details, "configDir", f"{path}.mcp"),
                plugin_root=plugin_root,
            )
        return ExtensionItem(
            id=self.text(entry, "id", path, pattern=_ITEM_ID_RE),
            source_id=self.text(entry, "sourceId", path, pattern=_SOURCE_ID_RE),
            type=item_type,
            name=self.text(entry, "name", path),
            original_name=self.text(entry, "originalName", path),
            source_relative_path=self.rel(entry, "sourceRelativePath", path),
            enabled=enabled and item_type != "unknown",
            fingerprint=self.text(entry, "fingerprint", path, pattern=_FINGERPRINT_RE),
            last_error=self.opt_str(entry, "lastError", path),
            error_origin=cast(
                ErrorOrigin | None, self.choice(entry, "errorOrigin", path, _ORIGINS, optional=True)
            ),
            startup_status=cast(
                StartupStatus | None,
                self.choice(entry, "startupStatus", path, _STARTUP, optional=True),
            ),
            imported_at=self.number(entry, "importedAt", path),
            skill_dir=skill_dir,
            mcp=mcp,
            notes=self.notes(entry, path),
        )


def is_projection_id(text: str) -> bool:
    """Whether ``text`` is ``projection-<13-digit Unix ms>-<8 hex>``."""
    return _PROJECTION_ID_RE.fullmatch(text) is not None
