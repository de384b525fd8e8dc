"""The run list from an S3 Inventory report, so that millions of keys need not be listed.

S3 Inventory (Amazon S3 User Guide, "Cataloging and analyzing your data with S3
Inventory") publishes, per report, ``manifest.json``::

    {"sourceBucket": "…", "destinationBucket": "arn:aws:s3:::…", "version": "2016-11-30",
     "creationTimestamp": "<Unix ms>", "fileFormat": "CSV",
     "fileSchema": "Bucket, Key, VersionId, IsLatest, IsDeleteMarker, Size, …",
     "files": [{"key": "…/data/<id>.csv.gz", "size": 2147, "MD5checksum": "<hex>"}]}

beside ``manifest.checksum`` (the MD5 of ``manifest.json``), and gzip-compressed CSV
data files without a header row whose columns are ``fileSchema``'s, object keys
URL-encoded. Only the CSV format is read here. Each data file is checked against the
MD5 the manifest gives, and the manifest against ``manifest.checksum`` when present: a
report that does not match is refused, never half read.

A report is a snapshot taken at ``creationTimestamp``: runs written later are not in
it (those the chain links are still found and checked; stray objects added later are
not seen). With ``VersionId``, ``IsLatest`` and ``IsDeleteMarker`` in the schema (an
inventory of *all* versions) newer versions and delete markers are reported as from a
listing; without them every row counts as a current, only version.
"""

from __future__ import annotations

import csv
import datetime as dt
import gzip
import hashlib
import io
from pathlib import Path
from typing import Any, Final
from urllib.parse import unquote_plus

from agc._core import json as strict_json
from agc._core.objstore import ObjectStore, ObjectVersion
from agc.errors import InputError, JsonInvalidError, UsageError

__all__ = ["read_inventory"]

_MAX_MANIFEST: Final = 16 << 20
_MAX_DATA_FILE: Final = 1 << 34


def _fetch(location: str, *, max_bytes: int) -> bytes | None:
    """The bytes at an ``s3://bucket/key`` URL or a local path; ``None`` if absent."""
    if location.startswith("s3://"):
        bucket, _, key = location[len("s3://") :].partition("/")
        got = ObjectStore(bucket).get(key, max_bytes=max_bytes)
        return None if got is None else got[0]
    path = Path(location)
    try:
        if path.stat().st_size > max_bytes:
            raise InputError(f"inventory file {location} is larger than {max_bytes} bytes")
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise InputError(f"cannot read inventory file {location}: {exc.strerror}") from exc


def _data_location(manifest_location: str, manifest: dict[str, Any], key: str) -> str:
    if manifest_location.startswith("s3://"):
        destination = str(manifest.get("destinationBucket", ""))
        bucket = destination.removeprefix("arn:aws:s3:::")
        return f"s3://{bucket}/{key}"
    # A local copy of the report: the data files beside manifest.json or in ../data.
    folder = Path(manifest_location).parent
    name = key.rsplit("/", 1)[-1]
    for candidate in (folder / name, folder / "data" / name, folder.parent / "data" / name):
        if candidate.exists():
            return str(candidate)
    return str(folder / name)


def _millis(text: str, *, where: str) -> int:
    """Unix ms of an ISO 8601 date of the report (``0`` for none); ``where`` names the
    row in the error."""
    if not text:
        return 0
    try:
        return int(dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError as exc:
        raise InputError(f"{where}: date {text!r} is not ISO 8601") from exc


def read_inventory(location: str, store: ObjectStore) -> list[ObjectVersion]:
    """The versions of the store's ``audit/`` keys that an inventory report lists.

    Args:
        location: the report's ``manifest.json``: an ``s3://bucket/key`` URL or a file.
        store: the store being verified (its bucket must be the report's source).

    Raises:
        InputError: the manifest or a data file is missing, damaged, or does not match
            its MD5; a row is malformed.
        UsageError: the report is of another bucket, or not in CSV format.
        StoreError: the report cannot be read from the object store.
    """
    data = _fetch(location, max_bytes=_MAX_MANIFEST)
    if data is None:
        raise InputError(f"inventory manifest {location} does not exist")
    checksum = _fetch(location.rsplit("/", 1)[0] + "/manifest.checksum", max_bytes=4096)
    if checksum is not None and checksum.strip().decode("ascii", "replace").lower() != (
        hashlib.md5(data, usedforsecurity=False).hexdigest()
    ):
        raise InputError(f"inventory manifest {location} does not match its manifest.checksum")
    try:
        manifest = strict_json.loads(data)
    except JsonInvalidError as exc:
        raise InputError(f"inventory manifest {location} is not JSON: {exc.message}") from exc
    if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), list):
        raise InputError(f"inventory manifest {location} has no files list")
    if manifest.get("sourceBucket") != store.bucket:
        raise UsageError(
            f"inventory {location} is of bucket {manifest.get('sourceBucket')!r}, "
            f"not {store.bucket!r}"
        )
    if str(manifest.get("fileFormat", "")).upper() != "CSV":
        raise UsageError(
            f"inventory {location} is in {manifest.get('fileFormat')!r} format; agc reads CSV",
            hint="Configure the inventory report with the CSV output format.",
        )
    schema = [name.strip() for name in str(manifest.get("fileSchema", "")).split(",")]
    if "Key" not in schema:
        raise InputError(f"inventory manifest {location}: fileSchema has no Key column")
    prefix = store.key("audit/")
    versions: list[ObjectVersion] = []
    for entry in manifest["files"]:
        if not isinstance(entry, dict) or not isinstance(entry.get("key"), str):
            raise InputError(f"inventory manifest {location}: a files entry has no key")
        where = _data_location(location, manifest, entry["key"])
        raw = _fetch(where, max_bytes=_MAX_DATA_FILE)
        if raw is None:
            raise InputError(f"inventory data file {where} does not exist")
        md5 = entry.get("MD5checksum")
        if isinstance(md5, str) and hashlib.md5(raw, usedforsecurity=False).hexdigest() != md5:
            raise InputError(f"inventory data file {where} does not match its MD5 in the manifest")
        try:
            text = gzip.decompress(raw).decode("utf-8")
        except (OSError, EOFError, UnicodeDecodeError) as exc:
            raise InputError(f"inventory data file {where} is not gzip-compressed CSV") from exc
        for number, row in enumerate(csv.reader(io.StringIO(text)), start=1):
            if len(row) != len(schema):
                raise InputError(f"inventory data file {where}, row {number}: {len(row)} columns")
            fields = dict(zip(schema, row, strict=True))
            if fields.get("Bucket", store.bucket) != store.bucket:
                continue
            key = unquote_plus(fields["Key"])
            if not key.startswith(prefix):
                continue
            here = f"inventory data file {where}, row {number}"
            hold = fields.get("ObjectLockLegalHoldStatus")
            until = fields.get("ObjectLockRetainUntilDate")
            versions.append(
                ObjectVersion(
                    key=key,
                    version_id=fields.get("VersionId") or "null",
                    is_latest=fields.get("IsLatest", "true").lower() == "true",
                    is_delete_marker=fields.get("IsDeleteMarker", "false").lower() == "true",
                    last_modified_ms=_millis(fields.get("LastModifiedDate", ""), where=here),
                    size=int(fields.get("Size") or 0),
                    etag=fields.get("ETag") or None,
                    lock_mode=fields.get("ObjectLockMode") or None,
                    retain_until_ms=_millis(until, where=here) if until else None,
                    legal_hold=None if not hold else hold.upper() == "ON",
                )
            )
    return versions
