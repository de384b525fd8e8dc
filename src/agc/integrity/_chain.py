"""The store-wide chain: every closed run manifest links to the one closed before it.

When a run's manifest becomes closed (all artifacts sealed), it gets
``"chain": {"position": n, "prev": <digest of the previous closed manifest>}`` and,
under the store's chain lock, one line is appended to ``audit/chain.jsonl``::

    {"position": n, "run_id": "...", "manifest_digest": "<sha256 hex>", "prev": "<hex>"|null}

and ``audit/chain-head.json`` is replaced with ``{"position": n, "digest": "<hex>",
"run_id": "..."}``. A deleted run, a reordered or replaced manifest, or a store rolled
back behind a head pinned from outside (``agc-verify --all --expect-head``) is then
detectable, as a transparency-log client detects a fork from a pinned checkpoint.

The manifest digest is the SHA-256 of the manifest's RFC 8785 canonical JSON, signature
included.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from agc._core.fs import (
    MACHINE_ERRNOS,
    append_whole,
    atomic_write_bytes,
    open_nofollow,
    read_small_file,
    write_error,
)
from agc._core.store import StoreLayout, validate_run_id
from agc.errors import RunIdInvalidError, StoreError, UnsafePathError
from agc.integrity._manifest import RunManifest

__all__ = [
    "ChainEntry",
    "ChainHead",
    "append_link",
    "chain_head_path",
    "chain_lock_path",
    "chain_log_path",
    "manifest_digest",
    "read_chain",
    "read_head",
    "write_head",
]

_MAX_HEAD_BYTES: Final = 4096


def chain_log_path(layout: StoreLayout) -> Path:
    return layout.audit_dir / "chain.jsonl"


def chain_head_path(layout: StoreLayout) -> Path:
    return layout.audit_dir / "chain-head.json"


def chain_lock_path(layout: StoreLayout) -> Path:
    return layout.audit_dir / ".chain.lock"


def manifest_digest(manifest: RunManifest | Mapping[str, Any]) -> str:
    """SHA-256 hex of the manifest's RFC 8785 canonical JSON (signature included)."""
    data = manifest.document() if isinstance(manifest, RunManifest) else manifest
    import rfc8785  # noqa: PLC0415 - only when a digest is needed: agc-verify starts faster

    canonical: bytes = rfc8785.dumps(data)
    return hashlib.sha256(canonical).hexdigest()


@dataclass(frozen=True)
class ChainEntry:
    """One link of the chain: the ``position``-th closed manifest of the store."""

    position: int
    run_id: str
    manifest_digest: str
    prev: str | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "position": self.position,
            "run_id": self.run_id,
            "manifest_digest": self.manifest_digest,
            "prev": self.prev,
        }


@dataclass(frozen=True)
class ChainHead:
    """The head of the chain: the last link's position and manifest digest."""

    position: int
    digest: str | None
    run_id: str | None = None


def read_head(layout: StoreLayout) -> ChainHead | None:
    """The stored head, ``ChainHead(0, None)`` for a store with no chain yet, or
    ``None`` when the head file exists but is damaged."""
    try:
        data = read_small_file(chain_head_path(layout), max_bytes=_MAX_HEAD_BYTES)
    except FileNotFoundError:
        return ChainHead(position=0, digest=None)
    except (UnsafePathError, StoreError):
        return None  # a symlink, folder or FIFO in its place, or far too large
    try:
        raw = json.loads(data)
        position, digest = raw["position"], raw["digest"]
        if not isinstance(position, int) or not isinstance(digest, str | None):
            return None
        return ChainHead(position=position, digest=digest, run_id=raw.get("run_id"))
    except (ValueError, KeyError, TypeError):
        return None


def read_chain(layout: StoreLayout) -> tuple[list[ChainEntry], int]:
    """All links in ``audit/chain.jsonl`` and the number of unusable lines."""
    try:
        data = read_small_file(chain_log_path(layout), max_bytes=1 << 34)
    except FileNotFoundError:
        return [], 0
    entries: list[ChainEntry] = []
    unusable = 0
    for line in data.split(b"\n"):
        if not line:
            continue
        try:
            raw = json.loads(line)
            position, run_id, digest, prev = (
                raw["position"],
                raw["run_id"],
                raw["manifest_digest"],
                raw["prev"],
            )
        except (ValueError, KeyError, TypeError):
            unusable += 1
            continue
        if (
            isinstance(position, int)
            and not isinstance(position, bool)
            and isinstance(run_id, str)
            and _is_run_id(run_id)
            and isinstance(digest, str)
            and (prev is None or isinstance(prev, str))
        ):
            entries.append(
                ChainEntry(position=position, run_id=run_id, manifest_digest=digest, prev=prev)
            )
        else:
            unusable += 1  # a field of the wrong type: never coerced
    return entries, unusable


def _is_run_id(run_id: str) -> bool:
    try:
        validate_run_id(run_id)
    except RunIdInvalidError:
        return False  # agc never links such a run; it would also reach messages raw
    return True


def append_link(layout: StoreLayout, manifest: RunManifest) -> ChainEntry:
    """Append the link for a closed, already written manifest and move the head.

    Must be called under the chain lock, after ``manifest`` (with its ``chain`` member
    set from :func:`read_head`) has been written.

    Raises:
        FileWriteError: the disk is full (or read-only …); the chain log is as it was,
            and ``agc recover`` adds the link once the disk can be written again.
    """
    assert manifest.chain is not None
    entry = ChainEntry(
        position=int(manifest.chain["position"]),
        run_id=manifest.run_id,
        manifest_digest=manifest_digest(manifest),
        prev=manifest.chain.get("prev"),
    )
    path = chain_log_path(layout)
    try:
        fd = open_nofollow(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    except OSError as exc:
        if exc.errno in MACHINE_ERRNOS:
            raise write_error(path, exc, doing="open") from exc
        raise
    try:
        # Whole or not at all: a full disk never leaves half a link to glue the next to.
        line = json.dumps(entry.to_dict(), separators=(",", ":")).encode() + b"\n"
        append_whole(fd, line, path=path)
    finally:
        os.close(fd)
    write_head(layout, entry)
    return entry


def write_head(layout: StoreLayout, entry: ChainEntry) -> None:
    """Replace ``audit/chain-head.json`` so it names ``entry`` (under the chain lock)."""
    head = {"position": entry.position, "digest": entry.manifest_digest, "run_id": entry.run_id}
    atomic_write_bytes(chain_head_path(layout), json.dumps(head).encode() + b"\n", overwrite=True)
