"""The extension repository under ``<store>/extensions/``: import, list, enable, rename, remove.

Layout (``docs/extensions.md``)::

    extensions/index.json              the index (``_model``), replaced atomically
    extensions/.lock                   flock serialising every read-modify-write
    extensions/sources/<sourceId>/     one import, kept once, files read-only:
        tree/                          the content (a lone file, a folder copy, an
                                       extracted zip), byte for byte
        archive.zip                    the archive as imported (zip sources)
    extensions/staging/                imports in progress (removed when done)
    extensions/projections/<id>.jsonl  sealed projection records (``_project``)

An import is staged and checked outside the lock (the slow part), then, under the
lock, named against the current index, moved into ``sources/`` and committed with one
atomic index write. A crash before that write leaves an unreferenced folder that the
next change under the lock removes; a crash after it leaves a complete import.

Each import holds an ``flock`` on its own staging folder from the moment it is created
(under the repository lock) until it is gone. A folder in ``staging/`` that nobody
holds is what a killed import left behind (up to the import limit in bytes, twice for a
zip) and is removed, under the repository lock, by the next import or removal.

Everything under ``extensions/`` is private to the user (folders ``0700``, files
``0600``, stored sources ``0400``): an MCP server's configuration may hold literal
secrets, in the source copy and, unless imported with ``env_ref``, in the index. A
repository an earlier agc left ``0755``/``0644`` is tightened when it is next opened
(:meth:`ExtensionRepository.make_private`, ``_private``).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hmac
import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

from agc._core.fs import atomic_write_bytes, exclusive_lock, read_small_file, store_write_error
from agc._core.jsonl import describe_os_error, unix_ms
from agc._core.store import resolve_store
from agc.errors import (
    ArchiveRefusedError,
    ExtensionNotFoundError,
    ExtensionUnrecognisedError,
    ExtensionValueError,
    FileUnreadableError,
    InputError,
    InputMissingError,
    StoreError,
    UsageError,
)
from agc.extensions._discover import Found, discover, keep_references
from agc.extensions._fingerprint import file_fingerprint, tree_fingerprint
from agc.extensions._mcp import LiteralValue, literal_values, referenced_variables
from agc.extensions._model import (
    ExtensionIndex,
    ExtensionItem,
    ImportedSource,
    SourceKind,
    new_item_id,
    new_source_id,
)
from agc.extensions._names import ItemType, NameAllocator, assign_name, check_manual_name
from agc.extensions._private import (
    PRIVATE_DIR_MODE,
    PRIVATE_FILE_MODE,
    PrivacyReport,
    private_dir,
    private_file,
    tighten_tree,
)
from agc.extensions._stage import (
    DEFAULT_LIMITS,
    ImportLimits,
    copy_file,
    copy_folder,
    extract_zip,
    is_zip_file,
)

__all__ = [
    "ExtensionRepository",
    "ImportResult",
    "RemoveResult",
    "RenameResult",
]

_MAX_INDEX_BYTES: Final = 64 * 1024 * 1024
_ID_PREFIX_MIN: Final = 4
_STAGING_PREFIX: Final = "import-"


@dataclass(frozen=True)
class ImportResult:
    """What one import added.

    Attributes:
        source: the stored source.
        items: its items, in discovery order.
        renamed: some item took a ``-2``, ``-3`` … suffix (a name collision or a
            duplicate).
        duplicate: some item's content was already in the repository.
        notice: the one notice of this import (``None`` when nothing was renamed).
        notes: what discovery ignored or converted.
        literals: each MCP server entry (``env`` variable or header) whose value is
            written out in the configuration, possibly a secret: kept (``reference``
            ``None``; only in owner-only files) or, with ``env_ref``, turned into a
            reference to a variable of the launching environment. Names only.
    """

    source: ImportedSource
    items: tuple[ExtensionItem, ...]
    renamed: bool
    duplicate: bool
    notice: str | None
    notes: tuple[str, ...]
    literals: tuple[tuple[ExtensionItem, LiteralValue], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The import interface's DTO: ``imported[]``, ``sourceName``, ``renamed``,
        ``duplicate`` (plus ``sourceId``, ``notice``, ``notes`` and ``literalValues``:
        ``{id, server, field, key, reference}`` per literal entry, never a value)."""
        return {
            "imported": [item.dto(self.source.original_name) for item in self.items],
            "sourceName": self.source.original_name,
            "renamed": self.renamed,
            "duplicate": self.duplicate,
            "sourceId": self.source.id,
            "notice": self.notice,
            "notes": list(self.notes),
            "literalValues": [
                {"id": item.id, "server": item.name, **value.to_dict()}
                for item, value in self.literals
            ],
        }

    def unrecognised(self) -> ExtensionUnrecognisedError | None:
        """The error to report when nothing of the source was recognised (its one item
        is ``unknown``: kept disabled, never run), else ``None``. It names the source,
        what agc reads in a source of its kind, and the item kept."""
        if not self.items or any(item.type != "unknown" for item in self.items):
            return None
        item = self.items[0]
        looked_for = _LOOKED_FOR[self.source.kind]
        why = f"; {item.last_error}" if item.last_error else ""
        return ExtensionUnrecognisedError(
            f"{self.source.original_name}: no Skill, MCP server or plugin recognised in it "
            f"({looked_for}{why}); it was kept as the disabled unknown item {item.name} "
            f"({item.id}), which is never run nor projected",
            hint=f"`agc ext rm {item.id}` removes it. " + ExtensionUnrecognisedError.default_hint,
        )


_LOOKED_FOR: Final[dict[str, str]] = {
    "file": "a lone file is read as a Skill when named SKILL.md, as MCP servers when it "
    "is a .toml with [mcp_servers], a .mcp.json or mcp.json, or a .json of the form "
    '{"mcpServers": …}',
    "folder": "a folder is read for SKILL.md files, config.toml, .mcp.json and mcp.json, "
    "and plugins (.codex-plugin/ or .claude-plugin/plugin.json)",
    "zip": "a zip archive is read as a folder: SKILL.md files, config.toml, .mcp.json "
    "and mcp.json, and plugins (.codex-plugin/ or .claude-plugin/plugin.json)",
}
"""What discovery reads in a source of each kind (see :mod:`agc.extensions._discover`)."""


@dataclass(frozen=True)
class RenameResult:
    """A manual rename: the item after it, the name asked for, and the notice if the
    name was taken and a suffix given."""

    item: ExtensionItem
    requested: str
    suffixed: bool
    notice: str | None


@dataclass(frozen=True)
class RemoveResult:
    """Items removed, and the sources deleted with their last item."""

    items: tuple[ExtensionItem, ...]
    sources: tuple[ImportedSource, ...]


def _notice(
    names: Sequence[str],
    *,
    before: ImportedSource | None = None,
    copy: Sequence[str] = (),
    literal: Sequence[str] = (),
) -> str | None:
    """The import's one notice: the names given a suffix; ``before``: a source of the
    same bytes imported earlier, whose second copy ``copy`` (item ids) this import is;
    ``literal``: the earlier import's item ids when they keep literal values (possibly
    secrets) that this import turned into references (``--env-ref``): the copy worth
    keeping is then this one."""
    if not names:
        return None
    quoted = ", ".join(f'"{name}"' for name in names)
    notice = f"Duplicate or same-name extensions found; named automatically: {quoted}."
    if before is not None and literal:
        notice += (
            f" The same source was imported before ({before.id}) with its literal values "
            "(possibly secrets) kept, which this import keeps as references; those "
            f"earlier items stay until removed; to keep only this import: "
            f"agc ext rm {' '.join(literal)}"
        )
    elif before is not None:
        notice += (
            f" The same source was imported before ({before.id}), so this import is a "
            f"second copy of it; to keep only the first: agc ext rm {' '.join(copy)}"
        )
    return notice


class ExtensionRepository:
    """The repository of one store (``--store``, ``$AGC_HOME`` or ``~/.agc``).

    Args:
        store: the store folder; see :func:`agc._core.store.resolve_store`.
        limits: caps for each import (zip bombs, huge folders).
        clock: Unix time in ms (tests pass a fixed clock).
    """

    def __init__(
        self,
        store: str | os.PathLike[str] | None = None,
        *,
        limits: ImportLimits = DEFAULT_LIMITS,
        clock: Callable[[], int] = unix_ms,
    ) -> None:
        # Absolute: projected MCP servers start in folders of the store.
        self.store = resolve_store(store).expanduser().absolute()
        self.root = self.store / "extensions"
        self.limits = limits
        self.clock = clock

    # -- paths ----------------------------------------------------------------------

    @property
    def index_path(self) -> Path:
        return self.root / "index.json"

    @property
    def lock_path(self) -> Path:
        return self.root / ".lock"

    @property
    def sources_dir(self) -> Path:
        return self.root / "sources"

    @property
    def projections_dir(self) -> Path:
        return self.root / "projections"

    def source_dir(self, source: ImportedSource) -> Path:
        """``sources/<id>`` (the id was checked when the index was read)."""
        return self.root / source.storage_path

    def tree_dir(self, source: ImportedSource) -> Path:
        return self.source_dir(source) / "tree"

    # -- index ----------------------------------------------------------------------

    def load(self) -> ExtensionIndex:
        """The current index (empty when none was written yet).

        Raises:
            ExtensionIndexInvalidError: damaged or of a newer schema.
            StoreError: unreadable.
        """
        self.make_private()
        try:
            data = read_small_file(self.index_path, max_bytes=_MAX_INDEX_BYTES)
        except FileNotFoundError:
            return ExtensionIndex()
        except OSError as exc:
            raise StoreError(f"{self.index_path} cannot be read: {describe_os_error(exc)}") from exc
        return ExtensionIndex.from_bytes(data, where=str(self.index_path))

    def make_private(self) -> PrivacyReport:
        """Make a repository an earlier agc wrote (folders ``0755``, files ``0644``)
        private: every group and world bit cleared (see ``_private``). Cheap when it is
        already private (one ``lstat``); never raises.

        Returns:
            how many files and folders were tightened, and those that could not be
            (another owner, a read-only file system): the caller reports them.
        """
        return tighten_tree(self.root)

    def _prepare(self) -> None:
        """The repository folder (``0700``) and its lock file (``0600``)."""
        private_dir(self.root)
        self.make_private()
        private_file(self.lock_path)

    @contextlib.contextmanager
    def locked(self) -> Iterator[ExtensionIndex]:
        """Hold the repository lock (blocking) and yield the index read under it."""
        self._prepare()
        with exclusive_lock(self.lock_path, blocking=True, what="the extension index"):
            yield self.load()

    def save(self, index: ExtensionIndex) -> None:
        """Replace the index atomically; call only inside :meth:`locked`.

        Raises:
            StoreError: the write failed (disk full …), or the index would be larger
                than the 64 MiB :meth:`load` reads back (which would make every later
                command fail); the old index is intact.
        """
        data = index.to_bytes()
        if len(data) > _MAX_INDEX_BYTES:
            raise StoreError(
                f"{self.index_path} would be {len(data)} bytes, more than the "
                f"{_MAX_INDEX_BYTES} agc reads back; nothing was changed",
                hint="Remove items with `agc ext rm` (large MCP configurations take most room).",
            )
        try:
            atomic_write_bytes(self.index_path, data, overwrite=True, mode=PRIVATE_FILE_MODE)
        except OSError as exc:
            raise StoreError(
                f"writing {self.index_path} failed ({describe_os_error(exc)}); "
                "the index is unchanged"
            ) from exc

    def items(self) -> tuple[ExtensionItem, ...]:
        return self.load().items

    # -- import ---------------------------------------------------------------------

    def import_path(self, path: str | os.PathLike[str], *, env_ref: bool = False) -> ImportResult:
        """Import a file, folder or zip; every Skill and MCP server found is one item.

        Nothing inside is run, started or fetched. The source is kept once, byte for
        byte (owner-only, read-only); recognised items are enabled, unknown content is
        one disabled item. A literal ``env``/``http_headers`` value of an MCP server is
        kept in the (owner-only) index, or with ``env_ref`` replaced by a reference to a
        variable of the environment that launches Codex (``_mcp.reference_literals``),
        so that no value is kept outside the source copy. ``literals`` of the result
        names each one.

        Raises:
            InputMissingError: the path does not exist (exit 2).
            InputError: it is neither a file nor a folder, or cannot name one (exit 2).
            FileUnreadableError: it exists but cannot be read (permissions, I/O: exit 3).
            ArchiveRefusedError: an unsafe or oversized archive or folder (nothing kept).
            ExtensionValueError: a file holds a number agc cannot keep exactly (a
                frontmatter integer of over 1000 characters, an MCP timeout beyond 2^53;
                nothing kept).
            StoreError: the store cannot be written (disk full: nothing kept).
        """
        source_path = Path(path)
        kind = self._kind_of(source_path)
        # The name the user gave (a symlink's own name), unless it is "." or "..".
        name = source_path.absolute().name
        if name in {"", "..", "."}:
            name = source_path.resolve().name or str(source_path)
        staging, staging_fd = self._new_staging()
        try:
            fingerprint, stage_notes = self._stage(source_path, staging, kind, name)
            try:
                found = discover(
                    staging / "tree", source_name=name, kind=kind, source_fingerprint=fingerprint
                )
            except ExtensionValueError as exc:
                where = "" if exc.message.startswith(f"{name}:") else f"{name}: "
                raise ExtensionValueError(
                    f"{where}{exc.message}; nothing was imported", hint=exc.hint
                ) from None
            if len(found.found) > self.limits.max_entries:
                raise ArchiveRefusedError(
                    f"{name}: it holds {len(found.found)} skills and MCP servers; the limit "
                    f"is {self.limits.max_entries}; nothing was imported"
                )
            _make_read_only(staging)
            with self.locked() as index:
                entries = found.found
                if env_ref:  # under the lock: no variable another server reads is reused
                    taken = {
                        name
                        for item in index.items
                        if item.mcp is not None
                        for name in referenced_variables(item.mcp.config)
                    }
                    for entry in entries:
                        if entry.mcp is not None:
                            config = entry.mcp.config
                            taken |= referenced_variables(config) | set(config.get("env") or {})
                    entries = [keep_references(entry, taken) for entry in entries]
                result = self._commit(
                    index,
                    staging,
                    name,
                    kind,
                    fingerprint,
                    entries,
                    [*stage_notes, *found.notes],
                )
        finally:
            _remove_tree(staging)
            os.close(staging_fd)
        return result

    @property
    def staging_dir(self) -> Path:
        return self.root / "staging"

    def _new_staging(self) -> tuple[Path, int]:
        """A fresh staging folder and a descriptor holding its ``flock``.

        Created under the repository lock, so that :meth:`_remove_abandoned_staging`
        (also under it) never sees a folder before its importer holds it.

        Raises:
            StoreError: the store cannot be written.
        """
        self._prepare()
        private_dir(self.staging_dir)
        with exclusive_lock(self.lock_path, blocking=True, what="the extension index"):
            self._remove_abandoned_staging()
            try:
                staging = Path(tempfile.mkdtemp(prefix=_STAGING_PREFIX, dir=self.staging_dir))
                fd = os.open(staging, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            except OSError as exc:
                raise store_write_error(
                    f"cannot create a staging folder in {self.staging_dir}: "
                    f"{describe_os_error(exc)}",
                    self.staging_dir,
                    exc,
                ) from exc
            fcntl.flock(fd, fcntl.LOCK_EX)  # a fresh folder: nobody else holds it
        return staging, fd

    def _remove_abandoned_staging(self) -> None:
        """Delete staging folders no live import holds (a killed import's); call only
        under the repository lock."""
        try:
            names = os.listdir(self.staging_dir)
        except OSError:
            return
        for name in names:
            if not name.startswith(_STAGING_PREFIX):
                continue
            path = self.staging_dir / name
            try:
                fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    continue  # a running import holds it
                shutil.rmtree(path, ignore_errors=True)
            finally:
                os.close(fd)

    def _kind_of(self, path: Path) -> SourceKind:
        try:
            info = path.stat()
        except FileNotFoundError as exc:
            raise InputMissingError(f"{path} does not exist") from exc
        except OSError as exc:
            if exc.errno in (errno.ENAMETOOLONG, errno.ELOOP, errno.ENOTDIR):
                # What was typed cannot name a file: a usage problem, not the machine's.
                raise InputError(f"{path} cannot be read: {describe_os_error(exc)}") from exc
            raise FileUnreadableError(f"{path} cannot be read: {describe_os_error(exc)}") from exc
        if stat.S_ISDIR(info.st_mode):
            return "folder"
        if stat.S_ISREG(info.st_mode):
            return "zip" if is_zip_file(path) else "file"
        raise InputError(f"{path} is neither a file nor a folder")

    def _stage(
        self, source: Path, staging: Path, kind: SourceKind, name: str
    ) -> tuple[str, list[str]]:
        tree = staging / "tree"
        tree.mkdir(mode=PRIVATE_DIR_MODE)
        if kind == "folder":
            notes = copy_folder(source, tree, limits=self.limits, skip=self.root)
            return tree_fingerprint(tree), notes
        if kind == "zip":
            archive = staging / "archive.zip"
            copy_file(source, archive, limits=self.limits)
            # Extract from our own copy: the bytes checked are the bytes kept.
            notes = extract_zip(archive, tree, limits=self.limits, label=name)
            return file_fingerprint(archive), notes
        copy_file(source, tree / name, limits=self.limits)
        return file_fingerprint(tree / name), []

    def _commit(
        self,
        index: ExtensionIndex,
        staging: Path,
        name: str,
        kind: SourceKind,
        fingerprint: str,
        found: Sequence[Found],
        notes: Sequence[str],
    ) -> ImportResult:
        now = self.clock()
        existing_ids = {source.id for source in index.sources}
        source_id = new_source_id()
        while source_id in existing_ids:
            source_id = new_source_id()
        source = ImportedSource(
            id=source_id,
            original_name=name,
            storage_path=f"sources/{source_id}",
            fingerprint=fingerprint,
            kind=kind,
            imported_at=now,
            notes=tuple(notes),
        )
        taken: dict[ItemType, list[str]] = {"skill": [], "mcp": [], "unknown": []}
        contents: dict[ItemType, set[str]] = {"skill": set(), "mcp": set(), "unknown": set()}
        for item in index.items:
            taken[item.type].append(item.name)
            contents[item.type].add(item.fingerprint)
        item_ids = {item.id for item in index.items}
        items: list[ExtensionItem] = []
        literals: list[tuple[ExtensionItem, LiteralValue]] = []
        suffixed: list[str] = []
        duplicate = False
        allocators = {kind: NameAllocator(kind, names) for kind, names in taken.items()}
        for entry in found:
            final = allocators[entry.type].assign(entry.wanted_name)
            if final != entry.wanted_name:
                suffixed.append(final)
            if entry.fingerprint in contents[entry.type]:
                duplicate = True
            contents[entry.type].add(entry.fingerprint)
            item_id = new_item_id()
            while item_id in item_ids:
                item_id = new_item_id()
            item_ids.add(item_id)
            items.append(
                ExtensionItem(
                    id=item_id,
                    source_id=source_id,
                    type=entry.type,
                    name=final,
                    original_name=entry.original_name,
                    source_relative_path=entry.source_relative_path,
                    enabled=entry.type != "unknown",
                    fingerprint=entry.fingerprint,
                    last_error=entry.last_error,
                    error_origin="import" if entry.last_error and entry.type != "unknown" else None,
                    imported_at=now,
                    skill_dir=entry.skill_dir,
                    mcp=entry.mcp,
                    notes=entry.notes,
                )
            )
            if entry.mcp is not None:
                literals.extend((items[-1], value) for value in entry.references)
                literals.extend((items[-1], value) for value in literal_values(entry.mcp.config))
        self._remove_orphans(index)
        private_dir(self.sources_dir)
        final_dir = self.sources_dir / source_id
        try:
            os.rename(staging, final_dir)
        except OSError as exc:
            raise store_write_error(
                f"cannot move the import into {final_dir}: {describe_os_error(exc)}", final_dir, exc
            ) from exc
        try:
            self.save(
                replace(index, sources=(*index.sources, source), items=(*index.items, *items))
            )
        except BaseException:
            _remove_tree(final_dir)
            raise
        before = next(
            (
                earlier
                for earlier in index.sources
                if hmac.compare_digest(earlier.fingerprint, fingerprint)
            ),
            None,
        )
        referenced = any(value.reference is not None for _, value in literals)
        literal = [
            item.id
            for item in index.items
            if referenced
            and before is not None
            and item.source_id == before.id
            and item.mcp is not None
            and literal_values(item.mcp.config)
        ]
        return ImportResult(
            source=source,
            items=tuple(items),
            renamed=bool(suffixed),
            duplicate=duplicate,
            notice=_notice(
                suffixed, before=before, copy=[item.id for item in items], literal=literal
            ),
            notes=tuple(notes),
            literals=tuple(literals),
        )

    def _remove_orphans(self, index: ExtensionIndex) -> None:
        """Delete ``sources/*`` folders no source names (a crash between two steps)."""
        known = {source.id for source in index.sources}
        try:
            names = os.listdir(self.sources_dir)
        except OSError:
            return
        for entry in names:
            if entry.startswith("source-") and entry not in known:
                _remove_tree(self.sources_dir / entry)

    # -- changes --------------------------------------------------------------------

    def resolve(self, index: ExtensionIndex, ref: str) -> ExtensionItem:
        """The item an id, a unique id prefix (at least 4 hex digits) or a unique name
        names.

        Raises:
            ExtensionNotFoundError: none, or more than one.
        """
        for item in index.items:
            if item.id == ref:
                return item
        candidates: list[ExtensionItem] = []
        bare = ref.removeprefix("extension-")
        if len(bare) >= _ID_PREFIX_MIN:
            candidates = [
                item for item in index.items if item.id.removeprefix("extension-").startswith(bare)
            ]
        if not candidates:
            candidates = [item for item in index.items if item.name == ref]
        if len(candidates) == 1:
            return candidates[0]
        if not candidates:
            raise ExtensionNotFoundError(f"no extension item has the id or name {ref!r}")
        listed = ", ".join(f"{item.id} ({item.type} {item.name})" for item in candidates)
        raise ExtensionNotFoundError(
            f"{ref!r} matches {len(candidates)} items: {listed}", hint="Give the full id."
        )

    def set_enabled(self, refs: Iterable[str], enabled: bool) -> tuple[ExtensionItem, ...]:
        """Enable or disable items; takes effect at the next projection.

        A change forgets the item's last startup status (that connection is gone).

        Raises:
            ExtensionNotFoundError: an id or name matches no item (nothing changed).
            UsageError: enabling an ``unknown`` item (it has no launch entry).
        """
        with self.locked() as index:
            targets = [self.resolve(index, ref) for ref in refs]
            if enabled:
                for item in targets:
                    if item.type == "unknown":
                        raise UsageError(
                            f"{item.id} ({item.name}) is unknown content and cannot be enabled",
                            hint="Only recognised Skills and MCP servers are launched.",
                        )
            wanted = {item.id for item in targets}
            changed: list[ExtensionItem] = []
            new_items = []
            for item in index.items:
                if item.id in wanted and item.enabled != enabled:
                    toggled = _forget_runtime(replace(item, enabled=enabled))
                    changed.append(toggled)
                    new_items.append(toggled)
                else:
                    new_items.append(item)
            if changed:
                self.save(replace(index, items=tuple(new_items)))
            by_id = {item.id: item for item in new_items}
            return tuple(by_id[item.id] for item in targets)

    def rename(self, ref: str, new_name: str) -> RenameResult:
        """Give an item a new name (native form); a taken name gets ``-2``, ``-3`` ….

        Raises:
            ExtensionNotFoundError: no such item.
            ExtensionNameInvalidError: empty or not in native form.
        """
        with self.locked() as index:
            item = self.resolve(index, ref)
            requested = check_manual_name(item.type, new_name)
            taken = [
                other.name
                for other in index.items
                if other.type == item.type and other.id != item.id
            ]
            final = assign_name(item.type, requested, taken)
            if final == item.name:
                return RenameResult(item=item, requested=requested, suffixed=False, notice=None)
            renamed = _forget_runtime(replace(item, name=final))
            self.save(
                replace(
                    index,
                    items=tuple(renamed if other.id == item.id else other for other in index.items),
                )
            )
        suffixed = final != requested
        notice = _notice([final]) if suffixed else None
        return RenameResult(item=renamed, requested=requested, suffixed=suffixed, notice=notice)

    def remove(self, refs: Iterable[str]) -> RemoveResult:
        """Remove items; a source is deleted with its last item.

        Raises:
            ExtensionNotFoundError: an id or name matches no item (nothing removed).
        """
        with self.locked() as index:
            targets = {self.resolve(index, ref).id for ref in refs}
            removed = tuple(item for item in index.items if item.id in targets)
            kept = tuple(item for item in index.items if item.id not in targets)
            used = {item.source_id for item in kept}
            gone = tuple(source for source in index.sources if source.id not in used)
            self.save(
                replace(index, items=kept, sources=tuple(s for s in index.sources if s.id in used))
            )
            for source in gone:
                _remove_tree(self.source_dir(source))
            self._remove_orphans(
                replace(index, sources=tuple(s for s in index.sources if s.id in used))
            )
            self._remove_abandoned_staging()
        return RemoveResult(items=removed, sources=gone)


def _forget_runtime(item: ExtensionItem) -> ExtensionItem:
    """Drop the startup status and any projection/startup error (a new state begins)."""
    if item.error_origin in {"startup", "projection", "forwarding"}:
        item = item.with_error(None, None)
    return replace(item, startup_status=None)


def _make_read_only(root: Path) -> None:
    """Stored files are never modified: drop their write bits, and they stay private
    (``0400``, ``0500`` executable); folders stay ``0700`` so that a removal works."""
    for folder, _dirs, files in os.walk(root):
        for name in files:
            path = Path(folder) / name
            info = path.lstat()
            if stat.S_ISREG(info.st_mode):
                path.chmod(0o500 if info.st_mode & 0o100 else 0o400)


def _remove_tree(path: Path) -> None:
    """Delete a folder of the repository, best effort.

    A link or file found where agc keeps a folder (someone changed the store) is
    unlinked, never followed: its target is not agc's. Whatever cannot be deleted is
    an unreferenced folder that the next import or removal tries again; the index is
    already consistent when this runs.
    """
    try:
        info = path.lstat()
    except OSError:
        return
    if stat.S_ISDIR(info.st_mode):
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(OSError):
            path.unlink()
