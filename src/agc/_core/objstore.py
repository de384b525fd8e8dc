"""Object storage: a store at ``s3://bucket/prefix`` (Amazon S3 or an S3-compatible service).

This module is the only one that talks to the S3 API. It holds no evidence logic: it
parses store URLs, carries the write policy (Object Lock retention, legal hold), and
wraps the few S3 operations agc uses so that every failure becomes an agc error:

* a missing key is ``None``, never an exception;
* a refused precondition (``If-None-Match: *`` on an existing key, ``If-Match`` on an
  ETag that changed) is :class:`PreconditionFailed`, which callers handle;
* a network failure, a refused permission, a missing bucket or missing credentials
  is :class:`~agc.errors.StoreError` (exit 3), with a hint.

The client is boto3 with the standard AWS configuration (environment variables, shared
config and credentials files, ``AWS_PROFILE``, ``AWS_ENDPOINT_URL`` /
``AWS_ENDPOINT_URL_S3`` for S3-compatible services, instance roles). boto3 is imported
only when an object store is actually used, so local commands (and ``agc-verify`` on a
folder store) never pay for it. No message this module makes contains a credential:
errors name the operation, the ``s3://`` URL of the key and the service's error code,
never the request, its headers or the service's free-text message.

Conditional writes follow the S3 documentation ("Add preconditions to S3 operations
with conditional requests"): ``If-None-Match: *`` makes ``PutObject`` fail with 412 when
the key exists, ``If-Match: <ETag>`` when its current ETag differs; a concurrent
conditional write to the same key may answer 409, which is retried as a conflict.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import os
import re
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, BinaryIO, Final

from agc._core.storage import (
    LOCK_MODES,
    MAX_RETENTION_DAYS,
    BucketLock,
    ListedObject,
    LockMode,
    ObjectInfo,
    ObjectVersion,
    PreconditionFailed,
    Retention,
    Store,
    check_store_path,
    is_store_path,
)
from agc.errors import MissingExtraError, StoreError, UsageError

if TYPE_CHECKING:
    from mypy_boto3_s3.client import S3Client

__all__ = [
    "LOCK_MODES",
    "MAX_RETENTION_DAYS",
    "S3_SCHEME",
    "BucketLock",
    "LockMode",
    "ObjectInfo",
    "ObjectStore",
    "ObjectVersion",
    "PreconditionFailed",
    "Retention",
    "is_object_store_url",
    "object_store_of",
    "sha256_b64",
]

S3_SCHEME: Final = "s3://"
_CHUNK: Final = 1 << 20
# S3 bucket naming rules (general purpose buckets): 3-63 characters, lower-case
# letters, digits, dots and hyphens, beginning and ending with a letter or digit.
_BUCKET_RE: Final = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
_PREFIX_SEGMENT_RE: Final = re.compile(r"[A-Za-z0-9._-]+")


def sha256_b64(data: bytes) -> str:
    """Base64 of the SHA-256 of ``data``: the ``x-amz-checksum-sha256`` value."""
    return base64.b64encode(hashlib.sha256(data).digest()).decode("ascii")


def _file_sha256_b64(handle: BinaryIO) -> str:
    hasher = hashlib.sha256()
    while chunk := handle.read(_CHUNK):
        hasher.update(chunk)
    handle.seek(0)
    return base64.b64encode(hasher.digest()).decode("ascii")


def is_object_store_url(store: object) -> bool:
    """Whether ``store`` is a string naming an object store (``s3://…``)."""
    return isinstance(store, str) and store.startswith(S3_SCHEME)


def _millis(value: Any) -> int:
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.UTC)
        return int(value.timestamp() * 1000)
    return 0


@dataclass(frozen=True, eq=False)
class ObjectStore(Store):
    """A store in object storage: ``s3://<bucket>/<prefix>``, and how agc writes there
    (the S3 implementation of :class:`~agc._core.storage.Store`).

    Keys are ``<prefix>/<path in the store layout>`` (``docs/object-store.md``).

    Attributes:
        bucket: the bucket name.
        prefix: the key prefix without a trailing ``/`` (``""`` for the bucket root).
        retention: the Object Lock retention set on every object written (``None``: the
            bucket's default retention, if it has one).
        legal_hold: set an Object Lock legal hold on every object written.
    """

    bucket: str
    prefix: str = ""
    retention: Retention | None = None
    legal_hold: bool = False
    _client: list[tuple[int, S3Client]] = field(default_factory=list, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def parse(
        cls, url: str, *, retention: Retention | None = None, legal_hold: bool = False
    ) -> ObjectStore:
        """``s3://bucket`` or ``s3://bucket/prefix/path`` as an :class:`ObjectStore`.

        Raises:
            UsageError: not an ``s3://`` URL, a bucket name S3 does not allow, or a prefix
                with an empty, ``.`` or ``..`` segment or a character outside
                ``[A-Za-z0-9._-]`` (a query, a fragment, credentials in the URL …).
        """
        if not is_object_store_url(url):
            raise UsageError(f"store {url!r} is not an s3:// URL")
        rest = url[len(S3_SCHEME) :]
        bucket, _, prefix = rest.partition("/")
        prefix = prefix.rstrip("/")
        if _BUCKET_RE.fullmatch(bucket) is None or ".." in bucket:
            raise UsageError(
                f"store {url!r}: {bucket!r} is not a valid S3 bucket name",
                hint="Bucket names are 3-63 lower-case letters, digits, dots and hyphens.",
            )
        for segment in prefix.split("/") if prefix else []:
            if _PREFIX_SEGMENT_RE.fullmatch(segment) is None or segment in {".", ".."}:
                raise UsageError(
                    f"store {url!r}: the key prefix segment {segment!r} is not allowed",
                    hint="Use segments of A-Z a-z 0-9 . _ - separated by single slashes.",
                )
        return cls(bucket=bucket, prefix=prefix, retention=retention, legal_hold=legal_hold)

    @property
    def url(self) -> str:
        """``s3://bucket/prefix`` (never holds a credential)."""
        return (
            f"{S3_SCHEME}{self.bucket}/{self.prefix}"
            if self.prefix
            else f"{S3_SCHEME}{self.bucket}"
        )

    def __str__(self) -> str:
        return self.url

    @property
    def lock_scope(self) -> str:
        """Object Lock is configured on the bucket."""
        return self.bucket

    @property
    def versioned(self) -> bool:
        """S3 keeps versions where the bucket's versioning is on; agc lists them."""
        return True

    def key(self, path: str) -> str:
        """The object key of ``path`` (a ``/``-separated path inside the store).

        Raises:
            ValueError: ``path`` is not a path inside a store
                (:func:`~agc._core.storage.check_store_path`), as in every store.
        """
        check_store_path(path)
        return f"{self.prefix}/{path}" if self.prefix else path

    def _list_prefix(self, path_prefix: str) -> str:
        """The key prefix to list for ``path_prefix`` (``""``: the whole store)."""
        if path_prefix:
            return self.key(path_prefix)
        return f"{self.prefix}/" if self.prefix else ""

    def relative(self, key: str) -> str:
        """The path inside the store of an object key under the prefix."""
        return key[len(self.prefix) + 1 :] if self.prefix else key

    def url_of(self, path: str) -> str:
        return f"{S3_SCHEME}{self.bucket}/{self.key(path)}"

    def staging_name(self) -> str:
        return f"{self.bucket}/{self.prefix.replace('/', '+') or '+'}"

    def with_policy(self, *, retention: Retention | None, legal_hold: bool) -> ObjectStore:
        """The same store with another write policy."""
        return ObjectStore(self.bucket, self.prefix, retention=retention, legal_hold=legal_hold)

    # -- the client -----------------------------------------------------------------

    @property
    def client(self) -> S3Client:
        """A boto3 S3 client for this process (created on first use; boto3 clients are
        thread-safe but must not cross a ``fork``)."""
        with self._lock:
            if self._client and self._client[0][0] == os.getpid():
                return self._client[0][1]
            client = _new_client()
            self._client[:] = [(os.getpid(), client)]
            return client

    def __getstate__(self) -> dict[str, Any]:
        # Sent to worker processes (``--jobs``, Dask): never the client or its credentials.
        return {
            "bucket": self.bucket,
            "prefix": self.prefix,
            "retention": self.retention,
            "legal_hold": self.legal_hold,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        for name, value in state.items():
            object.__setattr__(self, name, value)
        object.__setattr__(self, "_client", [])
        object.__setattr__(self, "_lock", threading.Lock())

    # -- operations -----------------------------------------------------------------

    def bucket_lock(self) -> BucketLock:
        """The bucket's Object Lock configuration.

        Raises:
            StoreError: the bucket does not exist or cannot be read.
        """
        try:
            answer = self.client.get_object_lock_configuration(Bucket=self.bucket)
        except Exception as exc:
            if _code(exc) in {"ObjectLockConfigurationNotFoundError", "NotImplemented"}:
                return BucketLock(enabled=False)
            raise self._error(exc, "read the Object Lock configuration of", "") from exc
        config = answer.get("ObjectLockConfiguration", {})
        enabled = config.get("ObjectLockEnabled") == "Enabled"
        rule = config.get("Rule", {}).get("DefaultRetention")
        default = None
        if enabled and rule:
            days = int(rule.get("Days") or 0) or int(rule.get("Years") or 0) * 365
            mode = rule.get("Mode")
            if mode in LOCK_MODES and days:
                default = Retention(mode, min(days, MAX_RETENTION_DAYS))
        return BucketLock(enabled=enabled, default=default)

    def put_new(
        self,
        path: str,
        body: bytes | BinaryIO,
        *,
        retention: Retention | None = None,
        legal_hold: bool = False,
        now_ms: int | None = None,
    ) -> ObjectInfo:
        """Create ``path`` with ``If-None-Match: *``: never over an existing object.

        The SHA-256 of the body is sent (``x-amz-checksum-sha256``), so the service
        refuses a body damaged on the way; ``retention`` / ``legal_hold`` set Object Lock
        on the new object version.

        Raises:
            PreconditionFailed: the key exists (or a concurrent write to it is under way).
            StoreError: the write was refused or the service cannot be reached.
        """
        checksum = sha256_b64(body) if isinstance(body, bytes) else _file_sha256_b64(body)
        args: dict[str, Any] = {
            "Bucket": self.bucket,
            "Key": self.key(path),
            "Body": body,
            "IfNoneMatch": "*",
            "ChecksumAlgorithm": "SHA256",
            "ChecksumSHA256": checksum,
        }
        args.update(_lock_args(retention, legal_hold, now_ms))
        try:
            answer = self.client.put_object(**args)
        except Exception as exc:
            self._raise_precondition(exc, path)
            raise self._error(exc, "write", path) from exc
        size = len(body) if isinstance(body, bytes) else os.fstat(body.fileno()).st_size
        return ObjectInfo(
            key=self.key(path),
            etag=str(answer.get("ETag", "")),
            version_id=answer.get("VersionId"),
            size=size,
            last_modified_ms=now_ms or 0,
        )

    def put_swap(
        self,
        path: str,
        data: bytes,
        *,
        etag: str | None,
        retention: Retention | None = None,
        legal_hold: bool = False,
    ) -> str:
        """Compare-and-swap: replace ``path`` only if its ETag is still ``etag``
        (``If-Match``), or create it only if absent when ``etag`` is ``None``
        (``If-None-Match: *``). Returns the new ETag.

        Raises:
            PreconditionFailed: someone else changed (or created) the object first.
            StoreError: refused or unreachable.
        """
        args: dict[str, Any] = {
            "Bucket": self.bucket,
            "Key": self.key(path),
            "Body": data,
            "ChecksumAlgorithm": "SHA256",
            "ChecksumSHA256": sha256_b64(data),
        }
        if etag is None:
            args["IfNoneMatch"] = "*"
        else:
            args["IfMatch"] = etag
        args.update(_lock_args(retention, legal_hold, None))
        try:
            answer = self.client.put_object(**args)
        except Exception as exc:
            self._raise_precondition(exc, path)
            if etag is not None and _code(exc) in {"NoSuchKey", "404"}:
                raise PreconditionFailed(self.key(path)) from exc  # deleted under us
            raise self._error(exc, "write", path) from exc
        return str(answer["ETag"])

    def get(
        self, path: str, *, max_bytes: int, version_id: str | None = None
    ) -> tuple[bytes, ObjectInfo] | None:
        """Read a small object whole; ``None`` if there is no such key (or its current
        version is a delete marker).

        Raises:
            StoreError: larger than ``max_bytes``, refused or unreachable.
        """
        with self.open(path, version_id=version_id) as found:
            if found is None:
                return None
            stream, info = found
            if info.size > max_bytes:
                raise StoreError(f"{self.url_of(path)} is larger than {max_bytes} bytes")
            data = b"".join(stream)
            return data, info

    def open(self, path: str, *, version_id: str | None = None) -> _Opened:
        """Stream an object: a context manager giving ``None`` for a missing key, else
        ``(chunks, ObjectInfo)`` where ``chunks`` yields the body in pieces of up to
        1 MiB (memory stays flat whatever the size).

        Raises:
            StoreError: refused or unreachable (also while reading the body).
        """
        return _Opened(self, path, version_id)

    def exists(self, path: str) -> bool:
        """Whether the key has a current version (``HeadObject``).

        Raises:
            StoreError: refused or unreachable.
        """
        try:
            self.client.head_object(Bucket=self.bucket, Key=self.key(path))
        except Exception as exc:
            if _code(exc) in {"NoSuchKey", "404", "NotFound"}:
                return False
            raise self._error(exc, "look up", path) from exc
        return True

    def list_versions(self, path_prefix: str) -> Iterator[ObjectVersion]:
        """Every version and delete marker of every key under ``path_prefix`` (a path
        inside the store): within a page, the versions in key order (newest first within
        a key), then the delete markers.

        Raises:
            StoreError: refused or unreachable.
        """
        paginator = self.client.get_paginator("list_object_versions")
        try:
            for page in paginator.paginate(
                Bucket=self.bucket, Prefix=self._list_prefix(path_prefix)
            ):
                # S3 lists the versions of a key newest first; delete markers apart.
                for raw in page.get("Versions", []):
                    yield ObjectVersion(
                        key=raw["Key"],
                        version_id=str(raw.get("VersionId") or "null"),
                        is_latest=bool(raw.get("IsLatest")),
                        is_delete_marker=False,
                        last_modified_ms=_millis(raw.get("LastModified")),
                        size=int(raw.get("Size") or 0),
                        etag=raw.get("ETag"),
                    )
                for marker in page.get("DeleteMarkers", []):
                    yield ObjectVersion(
                        key=marker["Key"],
                        version_id=str(marker.get("VersionId") or "null"),
                        is_latest=bool(marker.get("IsLatest")),
                        is_delete_marker=True,
                        last_modified_ms=_millis(marker.get("LastModified")),
                    )
        except Exception as exc:
            raise self._error(exc, "list", path_prefix) from exc

    def list_paths(self, path_prefix: str) -> Iterator[str]:
        """The paths (inside the store) of current objects under ``path_prefix``. A key
        that is no path inside a store (an empty, ``.`` or ``..`` segment: no operation
        of the store can address it) is not listed; :meth:`list_versions` shows every
        key as it is, for the store check to report.

        Raises:
            StoreError: refused or unreachable.
        """
        for listed in self.list_objects(path_prefix):
            yield listed.path

    def list_objects(self, path_prefix: str) -> Iterator[ListedObject]:
        """The current objects under ``path_prefix`` with their sizes and modification
        times (``ListObjectsV2``; nothing is read), the keys of :meth:`list_paths`.

        Raises:
            StoreError: refused or unreachable.
        """
        paginator = self.client.get_paginator("list_objects_v2")
        try:
            for page in paginator.paginate(
                Bucket=self.bucket, Prefix=self._list_prefix(path_prefix)
            ):
                for raw in page.get("Contents", []):
                    path = self.relative(raw["Key"])
                    if is_store_path(path):
                        yield ListedObject(
                            path, int(raw.get("Size") or 0), _millis(raw.get("LastModified"))
                        )
        except Exception as exc:
            raise self._error(exc, "list", path_prefix) from exc

    # -- errors ---------------------------------------------------------------------

    def _raise_precondition(self, exc: Exception, path: str) -> None:
        code = _code(exc)
        if code in {"PreconditionFailed", "412"}:
            raise PreconditionFailed(self.key(path)) from exc
        if code in {"ConditionalRequestConflict", "409"}:
            raise PreconditionFailed(self.key(path), conflict=True) from exc

    def _error(self, exc: Exception, doing: str, path: str) -> StoreError:
        where = self.url_of(path) if path else self.url
        code = _code(exc)
        name = type(exc).__name__
        if name == "NoCredentialsError" or code == "InvalidAccessKeyId":
            return StoreError(
                f"cannot {doing} {where}: no usable AWS credentials",
                hint="Set AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or run "
                "where an instance role applies (see docs/object-store.md).",
            )
        if code in {"AccessDenied", "403", "SignatureDoesNotMatch", "AllAccessDisabled"}:
            return StoreError(
                f"cannot {doing} {where}: access denied ({code})",
                hint="See the IAM policies for writers and verifiers in docs/object-store.md.",
            )
        if code in {"NoSuchBucket"}:
            return StoreError(f"cannot {doing} {where}: bucket {self.bucket} does not exist")
        if code:
            return StoreError(f"cannot {doing} {where}: the service answered {code}")
        if name in {
            "EndpointConnectionError",
            "ConnectTimeoutError",
            "ReadTimeoutError",
            "ConnectionClosedError",
            "ResponseStreamingError",
            "ProxyConnectionError",
        }:
            return StoreError(
                f"cannot {doing} {where}: the object store cannot be reached ({name})",
                hint="Check the network and AWS_ENDPOINT_URL.",
            )
        if name == "NoRegionError":
            return StoreError(
                f"cannot {doing} {where}: no AWS region configured",
                hint="Set AWS_REGION (or AWS_DEFAULT_REGION).",
            )
        if isinstance(exc, StoreError):
            return exc
        if name.endswith(("Error", "Exception")) and type(exc).__module__.startswith(
            ("botocore", "urllib3")
        ):
            return StoreError(f"cannot {doing} {where}: {name}")
        raise exc  # a bug: never reported as the store's fault


class _Opened:
    """The context manager of :meth:`ObjectStore.open`."""

    def __init__(self, store: ObjectStore, path: str, version_id: str | None) -> None:
        self._store, self._path, self._version_id = store, path, version_id
        self._body: Any = None

    def __enter__(self) -> tuple[Iterator[bytes], ObjectInfo] | None:
        store = self._store
        args: dict[str, Any] = {"Bucket": store.bucket, "Key": store.key(self._path)}
        if self._version_id is not None:
            args["VersionId"] = self._version_id
        try:
            answer = store.client.get_object(**args)
        except Exception as exc:
            if _code(exc) in {"NoSuchKey", "404", "NoSuchVersion", "MethodNotAllowed"}:
                return None  # MethodNotAllowed: the version asked for is a delete marker
            raise store._error(exc, "read", self._path) from exc
        self._body = answer["Body"]
        hold = answer.get("ObjectLockLegalHoldStatus")
        until = answer.get("ObjectLockRetainUntilDate")
        info = ObjectInfo(
            key=store.key(self._path),
            etag=str(answer.get("ETag", "")),
            version_id=answer.get("VersionId"),
            size=int(answer.get("ContentLength") or 0),
            last_modified_ms=_millis(answer.get("LastModified")),
            lock_mode=answer.get("ObjectLockMode"),
            retain_until_ms=_millis(until) if until is not None else None,
            legal_hold=None if hold is None else hold == "ON",
        )
        return self._chunks(), info

    def _chunks(self) -> Iterator[bytes]:
        try:
            while chunk := self._body.read(_CHUNK):
                yield chunk
        except Exception as exc:
            raise self._store._error(exc, "read", self._path) from exc

    def __exit__(self, *exc: object) -> None:
        if self._body is not None:
            self._body.close()


def _lock_args(retention: Retention | None, legal_hold: bool, now_ms: int | None) -> dict[str, Any]:
    args: dict[str, Any] = {}
    if retention is not None:
        start = (
            dt.datetime.now(dt.UTC)
            if now_ms is None
            else dt.datetime.fromtimestamp(now_ms / 1000, dt.UTC)
        )
        args["ObjectLockMode"] = retention.mode
        args["ObjectLockRetainUntilDate"] = (start + dt.timedelta(days=retention.days)).replace(
            microsecond=0
        )
    if legal_hold:
        args["ObjectLockLegalHoldStatus"] = "ON"
    return args


def _code(exc: Exception) -> str:
    """The S3 error code of a botocore ``ClientError`` (``""`` for anything else)."""
    response = getattr(exc, "response", None)
    if isinstance(response, Mapping):
        error = response.get("Error", {})
        code = error.get("Code") if isinstance(error, Mapping) else None
        if code:
            return str(code)
        status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        if status:
            return str(status)
    return ""


def _new_client() -> S3Client:
    """A boto3 S3 client.

    Raises:
        MissingExtraError: boto3 is not installed (the ``s3`` extra).
    """
    # Only when an object store is used: start-up time, and an install without S3.
    with MissingExtraError.raised_for("s3", feature="an s3:// store"):
        import boto3  # noqa: PLC0415
        from botocore.config import Config  # noqa: PLC0415

    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    config = Config(
        retries={"mode": "standard", "max_attempts": 5},
        max_pool_connections=32,
        # S3-compatible services behind a custom endpoint (MinIO, moto …) expect
        # path-style addressing; AWS itself takes virtual-hosted style.
        s3={"addressing_style": "path" if endpoint else "auto"},
    )
    session = boto3.session.Session()
    return session.client("s3", config=config)


def object_store_of(store: object) -> ObjectStore | None:
    """The object store that ``store`` (a ``--store`` value) names, else ``None``.

    ``store`` may be an :class:`ObjectStore`, an ``s3://`` URL, a folder path, or
    ``None`` for ``$AGC_HOME`` (which may itself be an ``s3://`` URL). A path object made
    from a URL (``Path("s3://b/p")`` reads ``s3:/b/p``: pathlib merges the slashes) is
    read as that URL, so a command-line option typed as a path still names the bucket.

    Raises:
        UsageError: an ``s3://`` URL that is not valid.
    """
    if isinstance(store, ObjectStore):
        return store
    if store is None:
        store = os.environ.get("AGC_HOME") or None
    if isinstance(store, os.PathLike):
        store = os.fspath(store)
    if not isinstance(store, str):
        return None
    if store.startswith(S3_SCHEME):
        return ObjectStore.parse(store)
    if store.startswith("s3:/"):
        return ObjectStore.parse(S3_SCHEME + store[len("s3:/") :])
    return None
