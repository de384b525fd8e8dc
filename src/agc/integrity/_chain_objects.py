"""The layout of an object store's evidence, and its chain head object.

Paths inside an ``s3://bucket/prefix`` store (the same as a store folder's) and the
chain head ``audit/chain-head.json``, which holds the last link and the exact bytes of
its manifest: read by the verifier, written by :mod:`agc.integrity._upload` (which
gives the upload order and the compare-and-swap on the head).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Final

from agc._core import json as strict_json
from agc._core import store as store_layout
from agc._core.report import SCHEMA_VERSION
from agc._core.storage import Store
from agc._core.store import (
    CHAIN_HEAD,
    artifact_path,
    is_run_id,
    link_path,
    manifest_path,
)
from agc.errors import StoreError
from agc.integrity._chain import ChainEntry, ChainHead
from agc.integrity._manifest import MAX_MANIFEST_BYTES, RunManifest

__all__ = [
    "CHAIN_DIR",
    "HEAD_PATH",
    "MANIFESTS_DIR",
    "RemoteHead",
    "artifact_path",
    "link_bytes",
    "link_path",
    "manifest_path",
    "read_remote_head",
    "read_remote_manifest",
]

# The layout is the store's (agc._core.store); these are its folders as key prefixes.
CHAIN_DIR: Final = f"{store_layout.CHAIN_DIR}/"
HEAD_PATH: Final = CHAIN_HEAD
MANIFESTS_DIR: Final = f"{store_layout.MANIFESTS_DIR}/"
_MAX_HEAD_BYTES: Final = MAX_MANIFEST_BYTES + 4096


# -- reading small objects --------------------------------------------------------------


def read_remote_manifest(store: Store, run_id: str) -> RunManifest | None:
    """The run's manifest object, ``None`` if it has none.

    Raises:
        ManifestInvalidError: it is damaged or of another run.
        StoreError: it cannot be read (or is larger than a manifest can be).
    """
    found = store.get(manifest_path(run_id), max_bytes=MAX_MANIFEST_BYTES)
    if found is None:
        return None
    return RunManifest.from_bytes(found[0], expected_run_id=run_id)


@dataclass(frozen=True)
class RemoteHead:
    """The chain head object: the last link and the exact bytes of its manifest."""

    position: int
    digest: str
    run_id: str
    prev: str | None
    manifest: bytes

    @property
    def entry(self) -> ChainEntry:
        return ChainEntry(self.position, self.run_id, self.digest, self.prev)

    @property
    def head(self) -> ChainHead:
        return ChainHead(self.position, self.digest, self.run_id)

    def to_bytes(self) -> bytes:
        document = {
            "schema_version": SCHEMA_VERSION,
            "position": self.position,
            "digest": self.digest,
            "run_id": self.run_id,
            "prev": self.prev,
            "manifest": self.manifest.decode("utf-8"),
        }
        return (json.dumps(document, sort_keys=True, ensure_ascii=False) + "\n").encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> RemoteHead:
        """Parse a head object strictly.

        Raises:
            ValueError: not a head object of this shape.
        """
        raw = strict_json.loads(data)
        if not isinstance(raw, dict) or set(raw) != {
            "schema_version",
            "position",
            "digest",
            "run_id",
            "prev",
            "manifest",
        }:
            raise ValueError("not a chain head")
        position, digest, run_id = raw["position"], raw["digest"], raw["run_id"]
        prev, manifest = raw["prev"], raw["manifest"]
        if not (
            raw["schema_version"] == SCHEMA_VERSION
            and isinstance(position, int)
            and not isinstance(position, bool)
            and position >= 1
            and isinstance(digest, str)
            and isinstance(run_id, str)
            and is_run_id(run_id)
            and (prev is None or isinstance(prev, str))
            and isinstance(manifest, str)
        ):
            raise ValueError("a chain head field has the wrong type")
        return cls(position, digest, run_id, prev, manifest.encode("utf-8"))


def read_remote_head(store: Store) -> tuple[RemoteHead | None, str | None]:
    """The head object and its ETag; ``(None, None)`` for a store with no link yet.

    Raises:
        StoreError: the head exists but is damaged (no run can be linked until
            ``agc-verify --all`` has been read), or cannot be read.
    """
    found = store.get(HEAD_PATH, max_bytes=_MAX_HEAD_BYTES)
    if found is None:
        return None, None
    data, info = found
    try:
        return RemoteHead.from_bytes(data), info.etag
    except (ValueError, UnicodeDecodeError) as exc:  # JsonInvalidError is a ValueError
        raise StoreError(
            f"the chain head {store.url_of(HEAD_PATH)} is damaged; no run can be linked",
            hint="Run `agc-verify --all` on the store to see the chain's state.",
        ) from exc


def link_bytes(entry: ChainEntry) -> bytes:
    """A link object: the same JSON as a line of a folder store's ``chain.jsonl``."""
    return json.dumps(entry.to_dict(), separators=(",", ":")).encode() + b"\n"
