"""Reading an S3 Inventory report from a local copy (``--inventory path/manifest.json``):
the versions it lists under the store's ``audit/`` keys, and every way a report is
refused whole (missing, damaged, of another bucket or format, rows that do not fit
the schema). The same report in a bucket, against a real S3 server, is in
tests/integrity/test_parallel.py."""

from __future__ import annotations

import csv
import datetime as dt
import gzip
import hashlib
import io
import json
from pathlib import Path
from typing import Any
from urllib.parse import quote_plus

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agc._core.objstore import ObjectStore
from agc.errors import AgcError, InputError, UsageError
from agc.exitcodes import ExitCode
from agc.integrity import _inventory
from agc.integrity._inventory import read_inventory

REACHES_INSIDE = {
    "agc.integrity._inventory": "the report reader on its own: a local copy needs no "
    "S3 server, and each damaged report is one call",
}

FULL = [
    "Bucket", "Key", "VersionId", "IsLatest", "IsDeleteMarker", "Size", "LastModifiedDate",
    "ETag", "ObjectLockMode", "ObjectLockRetainUntilDate", "ObjectLockLegalHoldStatus",
]  # fmt: skip
STORE = ObjectStore(bucket="evidence", prefix="team")


def write_report(
    folder: Path,
    rows: list[list[str]],
    *,
    schema: list[str] = FULL,
    data_in: str = "",
    checksum: bool = True,
    md5_of: bytes | None = None,
    data: bytes | None = None,
    **manifest: Any,
) -> Path:
    """A report as AWS publishes one, copied to ``folder``: ``manifest.json``,
    ``manifest.checksum`` and one gzip CSV data file in ``folder/<data_in>``. Returns
    the manifest's path."""
    text = io.StringIO()
    csv.writer(text, quoting=csv.QUOTE_ALL).writerows(rows)
    body = gzip.compress(text.getvalue().encode()) if data is None else data
    where = folder / data_in
    where.mkdir(parents=True, exist_ok=True)
    (where / "part-0.csv.gz").write_bytes(body)
    document: dict[str, Any] = {
        "sourceBucket": "evidence",
        "destinationBucket": "arn:aws:s3:::reports",
        "version": "2016-11-30",
        "creationTimestamp": "1796000000000",
        "fileFormat": "CSV",
        "fileSchema": ", ".join(schema),
        "files": [
            {
                "key": "inv/evidence/daily/data/part-0.csv.gz",
                "size": len(body),
                "MD5checksum": hashlib.md5(body if md5_of is None else md5_of).hexdigest(),
            }
        ],
    }
    document.update(manifest)
    raw = json.dumps(document).encode()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "manifest.json"
    path.write_bytes(raw)
    if checksum:
        (folder / "manifest.checksum").write_text(hashlib.md5(raw).hexdigest().upper() + "\n")
    return path


def row(key: str, **fields: str) -> list[str]:
    values = {
        "Bucket": "evidence", "Key": quote_plus(key), "VersionId": "v1", "IsLatest": "true",
        "IsDeleteMarker": "false", "Size": "10", "LastModifiedDate": "2026-11-30T00:00:00.000Z",
        "ETag": "abc", "ObjectLockMode": "", "ObjectLockRetainUntilDate": "",
        "ObjectLockLegalHoldStatus": "",
    }  # fmt: skip
    values.update(fields)
    return [values[name] for name in FULL]


def test_a_report_lists_the_versions_of_the_stores_audit_keys_with_their_lock_state(
    tmp_path: Path,
) -> None:
    manifest = write_report(
        tmp_path,
        [
            row(
                "team/audit/transcripts/r1.jsonl",
                ObjectLockMode="COMPLIANCE",
                ObjectLockRetainUntilDate="2027-01-01T00:00:00Z",
                ObjectLockLegalHoldStatus="ON",
            ),
            row(
                "team/audit/transcripts/r1.jsonl",
                VersionId="v0",
                IsLatest="false",
                IsDeleteMarker="true",
                Size="",
                ETag="",
                LastModifiedDate="",
                ObjectLockLegalHoldStatus="OFF",
            ),
            row("team/audit/runs/r 2+x.json", VersionId=""),  # URL-encoded key, version "null"
            row("team/other/file"),  # outside audit/
            row("other/audit/x"),  # outside the prefix
            row("team/audit/elsewhere", Bucket="another-bucket"),  # another bucket's row
        ],
    )
    versions = read_inventory(str(manifest), STORE)
    assert [(v.key, v.version_id) for v in versions] == [
        ("team/audit/transcripts/r1.jsonl", "v1"),
        ("team/audit/transcripts/r1.jsonl", "v0"),
        ("team/audit/runs/r 2+x.json", "null"),
    ]
    locked, deleted, _ = versions
    assert (locked.is_latest, locked.is_delete_marker, locked.size, locked.etag) == (
        True, False, 10, "abc",
    )  # fmt: skip
    assert locked.last_modified_ms == int(
        dt.datetime(2026, 11, 30, tzinfo=dt.UTC).timestamp() * 1000
    )
    assert (locked.lock_mode, locked.retain_until_ms, locked.legal_hold) == (
        "COMPLIANCE", int(dt.datetime(2027, 1, 1, tzinfo=dt.UTC).timestamp() * 1000), True,
    )  # fmt: skip
    assert (deleted.is_latest, deleted.is_delete_marker, deleted.size, deleted.etag) == (
        False, True, 0, None,
    )  # fmt: skip
    assert (deleted.last_modified_ms, deleted.retain_until_ms, deleted.legal_hold) == (
        0,
        None,
        False,
    )


def test_without_version_columns_every_row_is_a_current_only_version(tmp_path: Path) -> None:
    manifest = write_report(tmp_path, [["team/audit/a", "5"]], schema=["Key", "Size"])
    (version,) = read_inventory(str(manifest), STORE)
    assert (version.version_id, version.is_latest, version.is_delete_marker) == (
        "null",
        True,
        False,
    )
    assert (version.size, version.lock_mode, version.legal_hold) == (5, None, None)


@pytest.mark.parametrize("data_in", ["", "data", "../data"])
def test_the_data_files_of_a_local_copy_are_found_beside_the_manifest_or_in_data(
    tmp_path: Path, data_in: str
) -> None:
    folder = tmp_path / "daily" / "2026-11-30T00-00Z"
    manifest = write_report(folder, [row("team/audit/a")], data_in=data_in)
    assert [v.key for v in read_inventory(str(manifest), STORE)] == ["team/audit/a"]


def test_a_report_without_manifest_checksum_is_read(tmp_path: Path) -> None:
    manifest = write_report(tmp_path, [row("team/audit/a")], checksum=False)
    assert len(read_inventory(str(manifest), STORE)) == 1


@given(st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1, max_size=40))
def test_any_key_comes_back_as_written(name: str) -> None:
    import tempfile  # noqa: PLC0415 - a folder per example

    key = f"team/audit/{name}"
    with tempfile.TemporaryDirectory() as folder:
        manifest = write_report(Path(folder), [row(key)])
        assert [v.key for v in read_inventory(str(manifest), STORE)] == [key]


def _broken(tmp_path: Path, case: str) -> Path:
    """A report damaged as ``case`` says."""
    good = [row("team/audit/a")]
    manifest = tmp_path / "manifest.json"
    if case == "missing":
        return manifest
    if case == "a folder":
        manifest.mkdir()
        return manifest
    if case == "checksum":
        path = write_report(tmp_path, good)
        (tmp_path / "manifest.checksum").write_text("0" * 32)
        return path
    if case == "not JSON":
        manifest.write_text("{not json")
        return manifest
    if case == "no files":
        manifest.write_text(json.dumps({"sourceBucket": "evidence", "fileFormat": "CSV"}))
        return manifest
    if case == "no Key column":
        return write_report(tmp_path, [["x"]], schema=["Size"])
    if case == "entry without key":
        return write_report(tmp_path, good, files=[{"size": 1}])
    if case == "data file missing":
        return write_report(tmp_path, good, files=[{"key": "inv/data/gone.csv.gz"}])
    if case == "data MD5":
        return write_report(tmp_path, good, md5_of=b"other bytes")
    if case == "not gzip":
        return write_report(tmp_path, good, data=b"Bucket,Key\n")
    if case == "not UTF-8":
        return write_report(tmp_path, good, data=gzip.compress(b"\xff\xfe"))
    if case == "columns":
        return write_report(tmp_path, [["evidence", "team/audit/a"]])
    if case == "date":
        return write_report(tmp_path, [row("team/audit/a", LastModifiedDate="yesterday")])
    raise AssertionError(case)


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("missing", "does not exist"),
        ("a folder", "cannot read inventory file"),
        ("checksum", "does not match its manifest.checksum"),
        ("not JSON", "is not JSON"),
        ("no files", "has no files list"),
        ("no Key column", "fileSchema has no Key column"),
        ("entry without key", "a files entry has no key"),
        ("data file missing", "gone.csv.gz does not exist"),
        ("data MD5", "does not match its MD5"),
        ("not gzip", "is not gzip-compressed CSV"),
        ("not UTF-8", "is not gzip-compressed CSV"),
        ("columns", "row 1: 2 columns"),
        ("date", "part-0.csv.gz, row 1: date 'yesterday' is not ISO 8601"),
    ],
)
def test_a_damaged_report_is_refused_whole_with_exit_2_naming_the_file(
    tmp_path: Path, case: str, message: str
) -> None:
    manifest = _broken(tmp_path, case)
    with pytest.raises(InputError, match=message) as caught:
        read_inventory(str(manifest), STORE)
    assert caught.value.exit_code == ExitCode.USAGE
    assert str(tmp_path) in str(caught.value)


@pytest.mark.parametrize(
    ("manifest", "message", "hint"),
    [
        ({"sourceBucket": "someone-else"}, "of bucket 'someone-else', not 'evidence'", None),
        ({"fileFormat": "ORC"}, "in 'ORC' format; agc reads CSV", "CSV output format"),
    ],
)
def test_a_report_of_another_bucket_or_format_is_a_usage_error(
    tmp_path: Path, manifest: dict[str, Any], message: str, hint: str | None
) -> None:
    path = write_report(tmp_path, [row("team/audit/a")], **manifest)
    with pytest.raises(UsageError, match=message) as caught:
        read_inventory(str(path), STORE)
    if hint is not None:
        assert hint in (caught.value.hint or "")


def test_a_manifest_larger_than_the_cap_is_refused_unread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    manifest = write_report(tmp_path, [row("team/audit/a")])
    monkeypatch.setattr(_inventory, "_MAX_MANIFEST", manifest.stat().st_size - 1)
    with pytest.raises(AgcError, match="is larger than"):
        read_inventory(str(manifest), STORE)
