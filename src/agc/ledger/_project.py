"""The project folder: the only place the ledger reads files (to hash them) and the
control-plane folders it creates.

A file is hashed only when its real location (symlinks resolved) is inside the project
root and is not under ``.agent``/``.git`` or a sensitive file; it is then opened one
component at a time without following symlinks, so a link swapped in meanwhile is not
followed either. FIFOs and devices are never read.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

from agc.errors import StoreError, UnsafePathError
from agc.ledger._contract import AGENT_DB_PARTS, MAX_HASH_BYTES, TURNS_DIR_PARTS
from agc.ledger._sanitize import RejectReason, deny_reason

__all__ = ["FileHash", "HashSkipped", "Project"]

HashSkipped = Literal["missing", "too-large", "not-a-file", "unreadable"]
_O_NOFOLLOW: Final = getattr(os, "O_NOFOLLOW", 0)
_O_DIRECTORY: Final = getattr(os, "O_DIRECTORY", 0)
_O_CLOEXEC: Final = getattr(os, "O_CLOEXEC", 0)
_O_NONBLOCK: Final = getattr(os, "O_NONBLOCK", 0)


@dataclass(frozen=True)
class FileHash:
    """The outcome of hashing one project file.

    Exactly one of: ``content_sha256`` (lower-case hex SHA-256 of the bytes),
    ``hash_skipped`` (``missing``, ``too-large`` over 2 MiB, ``not-a-file``,
    ``unreadable``), or ``rejected`` (the real path leaves the project, or is
    control-plane or sensitive: the path must not be written at all).
    """

    content_sha256: str | None = None
    hash_skipped: HashSkipped | None = None
    rejected: RejectReason | None = None


class Project:
    """A project root on this host.

    Args:
        root: the project folder (must exist): the files the ledger hashes.
        ledger_root: the folder whose ``.agent/`` holds the turn files and ``agent.db``
            (default: ``root``). A service keeps it where the agent cannot write (a
            control plane outside the project).

    Raises:
        StoreError: a root does not exist or is not a folder.
    """

    def __init__(
        self, root: str | os.PathLike[str], *, ledger_root: str | os.PathLike[str] | None = None
    ) -> None:
        self.root = Path(os.path.abspath(root))
        self.ledger_root = self.root if ledger_root is None else Path(os.path.abspath(ledger_root))
        for folder in dict.fromkeys((self.root, self.ledger_root)):
            if not folder.is_dir():
                raise StoreError(
                    f"project folder {folder} does not exist or is not a folder",
                    hint="Give --project the root folder of an existing project.",
                )
        self.real_root = Path(os.path.realpath(self.root))

    @property
    def host_roots(self) -> tuple[str, ...]:
        """The root as given and as resolved (they differ behind a symlink)."""
        return tuple(dict.fromkeys((str(self.root), str(self.real_root))))

    def turn_file(self, client_turn_id: str) -> Path:
        """``<ledger root>/.agent/runtime/direct-codex/turns/<clientTurnId>.jsonl`` (not
        created)."""
        return self.ledger_root.joinpath(*TURNS_DIR_PARTS, f"{client_turn_id}.jsonl")

    @property
    def agent_db(self) -> Path:
        return self.ledger_root.joinpath(*AGENT_DB_PARTS)

    def ensure_dirs(self, parts: tuple[str, ...]) -> Path:
        """Create ``<ledger root>/parts…`` one folder at a time, refusing a symlink anywhere.

        Raises:
            UnsafePathError: a component is a symlink or not a folder.
            StoreError: a folder cannot be created.
        """
        current = self.ledger_root
        for part in parts:
            current = current / part
            try:
                os.mkdir(current, 0o755)
            except FileExistsError:
                pass
            except OSError as exc:
                raise StoreError(
                    f"cannot create {current}: {exc.strerror}",
                    hint="Check that you may write the project's .agent folder.",
                ) from exc
            info = current.lstat()
            if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
                raise UnsafePathError(f"{current} is a symlink or not a folder; not followed")
        return current

    def hash_file(self, relative: str) -> FileHash:
        """Hash the project file at ``relative`` (a path cleaned by ``PathSanitizer``).

        Never raises for what is on disk: a missing, large, special or unreadable file
        gives ``hash_skipped``; a symlink leading out or into the control plane gives
        ``rejected``.
        """
        parts = tuple(p for p in relative.split("/") if p not in {"", "."})
        if not parts:
            return FileHash(hash_skipped="not-a-file")
        if deny_reason(parts) is not None:
            return FileHash(rejected=deny_reason(parts))
        real = os.path.realpath(self.real_root.joinpath(*parts))
        try:
            inside = Path(real).relative_to(self.real_root)
        except ValueError:
            return FileHash(rejected="symlink-outside")
        real_parts = inside.parts
        if not real_parts:
            return FileHash(hash_skipped="not-a-file")
        reason = deny_reason(real_parts)
        if reason is not None:
            return FileHash(rejected=reason)
        return self._hash_beneath(real_parts)

    def _hash_beneath(self, parts: tuple[str, ...]) -> FileHash:
        try:
            fd = os.open(self.real_root, os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC)
        except OSError:
            return FileHash(hash_skipped="unreadable")
        try:
            for part in parts[:-1]:
                nxt = os.open(
                    part, os.O_RDONLY | _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC, dir_fd=fd
                )
                os.close(fd)
                fd = nxt
            leaf = os.open(
                parts[-1], os.O_RDONLY | _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC, dir_fd=fd
            )
        except OSError as exc:
            os.close(fd)
            return _skip_for(exc)
        os.close(fd)
        try:
            info = os.fstat(leaf)
            if not stat.S_ISREG(info.st_mode):
                return FileHash(hash_skipped="not-a-file")
            if info.st_size > MAX_HASH_BYTES:
                return FileHash(hash_skipped="too-large")
            hasher = hashlib.sha256()
            total = 0
            while chunk := os.read(leaf, 1024 * 1024):
                total += len(chunk)
                if total > MAX_HASH_BYTES:
                    return FileHash(hash_skipped="too-large")
                hasher.update(chunk)
            return FileHash(content_sha256=hasher.hexdigest())
        except OSError:
            return FileHash(hash_skipped="unreadable")
        finally:
            os.close(leaf)


def _skip_for(exc: OSError) -> FileHash:
    if exc.errno in {errno.ENOENT, errno.ENOTDIR}:
        return FileHash(hash_skipped="missing")
    if exc.errno in {errno.ELOOP, errno.EMLINK}:
        # A symlink swapped in after the path was resolved: not followed.
        return FileHash(rejected="symlink-outside")
    return FileHash(hash_skipped="unreadable")
