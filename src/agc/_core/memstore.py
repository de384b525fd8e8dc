"""A store in memory, for tests: the in-memory implementation of
:class:`~agc._core.storage.Store`.

It behaves as an S3 bucket does (the same contract, ``tests/_core/test_store_contract.py``)
without a server: versions and delete markers when ``versioning`` is on, conditional
writes, an Object Lock configuration given at creation. Tests reach what a writer of the
bucket could do through :meth:`MemoryStore.overwrite` and :meth:`MemoryStore.delete`,
which are not part of the store interface (agc never replaces or deletes evidence).

Time is a counter, not the clock: each write is one millisecond after the previous, so a
test's result never depends on when it ran.
"""

from __future__ import annotations

import hashlib
import itertools
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import BinaryIO, Final

from agc._core.storage import (
    BucketLock,
    ListedObject,
    ObjectInfo,
    ObjectVersion,
    Opened,
    PreconditionFailed,
    Retention,
    Store,
    check_store_path,
)
from agc.errors import StoreError

__all__ = ["MemoryStore"]

_CHUNK: Final = 1 << 20
_DAY_MS: Final = 86_400_000
_START_MS: Final = 1_767_225_600_000  # 2026-01-01T00:00:00Z, the counter's origin


@dataclass(frozen=True)
class _Version:
    version_id: str
    data: bytes | None  # None: a delete marker
    etag: str
    last_modified_ms: int
    lock_mode: str | None = None
    retain_until_ms: int | None = None
    legal_hold: bool | None = None


@dataclass(eq=False)
class MemoryStore(Store):
    """A bucket in memory, named ``memory://<name>/<prefix>`` in messages.

    Attributes:
        name: the bucket's name.
        prefix: the key prefix without a trailing ``/``.
        versioning: keep every version (as S3 with versioning on); off, a write replaces
            the object (version ``"null"``).
        lock: the Object Lock configuration (``enabled=False``: retention is refused).
        retention: the Object Lock retention asked of every object written (``None``:
            the bucket's default, if any).
        legal_hold: an Object Lock legal hold is asked of every object written.
    """

    name: str = "memory"
    prefix: str = ""
    versioning: bool = True
    lock: BucketLock = field(default_factory=lambda: BucketLock(enabled=False))
    retention: Retention | None = None
    legal_hold: bool = False
    _objects: dict[str, list[_Version]] = field(default_factory=dict, repr=False)
    _mutex: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _ids: Iterator[int] = field(default_factory=lambda: itertools.count(1), repr=False)

    @property
    def versioned(self) -> bool:
        return self.versioning

    @property
    def lock_scope(self) -> str:
        return self.name

    @property
    def url(self) -> str:
        return f"memory://{self.name}/{self.prefix}" if self.prefix else f"memory://{self.name}"

    def url_of(self, path: str) -> str:
        return f"memory://{self.name}/{self.key(path)}"

    def with_policy(self, *, retention: Retention | None, legal_hold: bool) -> MemoryStore:
        """The same bucket (the same objects) with another write policy."""
        return replace(self, retention=retention, legal_hold=legal_hold)

    def staging_name(self) -> str:
        return f"memory+{self.name}/{self.prefix.replace('/', '+') or '+'}"

    def key(self, path: str) -> str:
        check_store_path(path)
        return f"{self.prefix}/{path}" if self.prefix else path

    def relative(self, key: str) -> str:
        return key[len(self.prefix) + 1 :] if self.prefix else key

    # -- reading ---------------------------------------------------------------------------

    def _find(self, path: str, version_id: str | None) -> _Version | None:
        with self._mutex:
            versions = self._objects.get(self.key(path), [])
            if version_id is None:
                found = versions[-1] if versions else None
            else:
                found = next((v for v in versions if v.version_id == version_id), None)
        return None if found is None or found.data is None else found

    def _info(self, path: str, version: _Version) -> ObjectInfo:
        assert version.data is not None
        return ObjectInfo(
            key=self.key(path),
            etag=version.etag,
            version_id=version.version_id if self.versioning else None,
            size=len(version.data),
            last_modified_ms=version.last_modified_ms,
            lock_mode=version.lock_mode,
            retain_until_ms=version.retain_until_ms,
            legal_hold=version.legal_hold,
        )

    def get(
        self, path: str, *, max_bytes: int, version_id: str | None = None
    ) -> tuple[bytes, ObjectInfo] | None:
        found = self._find(path, version_id)
        if found is None:
            return None
        assert found.data is not None
        if len(found.data) > max_bytes:
            raise StoreError(f"{self.url_of(path)} is larger than {max_bytes} bytes")
        return found.data, self._info(path, found)

    def open(self, path: str, *, version_id: str | None = None) -> Opened:
        return self._opened(path, version_id)

    @contextmanager
    def _opened(
        self, path: str, version_id: str | None
    ) -> Iterator[tuple[Iterator[bytes], ObjectInfo] | None]:
        found = self._find(path, version_id)
        if found is None:
            yield None
            return
        data = found.data
        assert data is not None
        chunks = (data[i : i + _CHUNK] for i in range(0, len(data), _CHUNK))
        yield chunks, self._info(path, found)

    def exists(self, path: str) -> bool:
        return self._find(path, None) is not None

    def list_paths(self, path_prefix: str) -> Iterator[str]:
        start = self.key(path_prefix) if path_prefix else self.key_prefix
        with self._mutex:
            keys = sorted(
                key
                for key, versions in self._objects.items()
                if key.startswith(start) and versions and versions[-1].data is not None
            )
        for key in keys:
            yield self.relative(key)

    def list_objects(self, path_prefix: str) -> Iterator[ListedObject]:
        for path in self.list_paths(path_prefix):
            found = self._find(path, None)
            if found is not None and found.data is not None:
                yield ListedObject(path, len(found.data), found.last_modified_ms)

    @property
    def key_prefix(self) -> str:
        return f"{self.prefix}/" if self.prefix else ""

    def list_versions(self, path_prefix: str) -> Iterator[ObjectVersion]:
        start = self.key(path_prefix) if path_prefix else self.key_prefix
        with self._mutex:
            found = sorted((k, list(v)) for k, v in self._objects.items() if k.startswith(start))
        markers: list[ObjectVersion] = []
        for key, versions in found:
            for index, version in reversed(list(enumerate(versions))):
                entry = ObjectVersion(
                    key=key,
                    version_id=version.version_id,
                    is_latest=index == len(versions) - 1,
                    is_delete_marker=version.data is None,
                    last_modified_ms=version.last_modified_ms,
                    size=0 if version.data is None else len(version.data),
                    etag=None if version.data is None else version.etag,
                )
                if version.data is None:
                    markers.append(entry)
                else:
                    yield entry
        yield from markers

    def bucket_lock(self) -> BucketLock:
        return self.lock

    # -- writing ---------------------------------------------------------------------------

    def put_new(
        self,
        path: str,
        body: bytes | BinaryIO,
        *,
        retention: Retention | None = None,
        legal_hold: bool = False,
        now_ms: int | None = None,
    ) -> ObjectInfo:
        data = body if isinstance(body, bytes) else body.read()
        with self._mutex:
            if self._current(path) is not None:
                raise PreconditionFailed(self.key(path))
            version = self._add(path, data, retention, legal_hold, now_ms)
        return self._info(path, version)

    def put_swap(
        self,
        path: str,
        data: bytes,
        *,
        etag: str | None,
        retention: Retention | None = None,
        legal_hold: bool = False,
    ) -> str:
        with self._mutex:
            current = self._current(path)
            if (None if current is None else current.etag) != etag:
                raise PreconditionFailed(self.key(path))
            return self._add(path, data, retention, legal_hold, None).etag

    def _current(self, path: str) -> _Version | None:
        versions = self._objects.get(self.key(path), [])
        return versions[-1] if versions and versions[-1].data is not None else None

    def _add(
        self,
        path: str,
        data: bytes | None,
        retention: Retention | None,
        legal_hold: bool,
        now_ms: int | None,
    ) -> _Version:
        """Append a version (the caller holds the mutex)."""
        if (retention is not None or legal_hold) and not self.lock.enabled:
            raise StoreError(
                f"cannot write {self.url_of(path)}: the service answered InvalidRequest"
            )
        serial = next(self._ids)
        stamp = _START_MS + serial if now_ms is None else now_ms
        until = None
        if retention is not None:
            until = stamp + retention.days * _DAY_MS
        version = _Version(
            version_id=f"v{serial:08d}" if self.versioning else "null",
            data=data,
            etag=""
            if data is None
            else f'"{hashlib.md5(data, usedforsecurity=False).hexdigest()}"',
            last_modified_ms=stamp,
            lock_mode=None if retention is None else retention.mode,
            retain_until_ms=until,
            legal_hold=True if legal_hold else None,
        )
        key = self.key(path)
        if self.versioning:
            self._objects.setdefault(key, []).append(version)
        else:
            self._objects[key] = [version]
        return version

    # -- what a writer of the bucket could do (tests) --------------------------------------

    def overwrite(self, path: str, data: bytes) -> None:
        """Write ``data`` at ``path`` unconditionally (a new version when versioning)."""
        with self._mutex:
            self._add(path, data, None, False, None)

    def delete_versions(self, path: str) -> None:
        """Delete every version of ``path`` (a writer allowed to delete versions, on an
        object no retention holds): no version and no delete marker is left."""
        with self._mutex:
            self._objects.pop(self.key(path), None)

    def delete(self, path: str) -> None:
        """Delete ``path``: a delete marker when versioning, else the object is gone."""
        with self._mutex:
            if self.versioning:
                self._add(path, None, None, False, None)
            else:
                self._objects.pop(self.key(path), None)
