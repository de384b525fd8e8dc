"""The loopback S3 server of the tests and benchmarks (``tests/s3server.py``)."""

from __future__ import annotations

import datetime as dt
import json
import urllib.request

import boto3
import pytest
from botocore.exceptions import ClientError

from agc._core.objstore import ObjectStore, PreconditionFailed
from tests.s3fixtures import new_bucket
from tests.s3server import S3Server


def _tracked_keys(server: S3Server, bucket: str) -> int:
    """How many S3 key objects of ``bucket`` moto's server holds (its dashboard data)."""
    with urllib.request.urlopen(f"{server.endpoint}/moto-api/data.json", timeout=30) as answer:
        data = json.load(answer)
    return sum(1 for key in data["s3"]["FakeKey"] if key.get("bucket_name") == bucket)


def test_listing_versions_leaves_no_copies_in_the_server(
    s3_server: S3Server, s3_env_vars: dict[str, str]
) -> None:
    # moto copies every key version of the bucket for each ListObjectVersions page; the
    # server must not keep those copies (it did: memory grew with listings x keys).
    bucket = new_bucket(s3_server)
    client = boto3.client("s3", endpoint_url=s3_env_vars["AWS_ENDPOINT_URL"])
    for number in range(5):
        client.put_object(Bucket=bucket, Key=f"audit/k{number}", Body=b"x" * 100)
    client.put_object(Bucket=bucket, Key="audit/k0", Body=b"second version")
    assert _tracked_keys(s3_server, bucket) == 6
    for _ in range(3):
        page = client.list_object_versions(Bucket=bucket, Prefix="audit/")
        assert len(page["Versions"]) == 6
    assert _tracked_keys(s3_server, bucket) == 6


# The copies die once answered; what the server answers stays the same: every version
# and delete marker listed, old versions readable with their lock and legal hold, a
# locked version's delete refused, a conditional PUT on a live key refused.
def test_versions_bodies_locks_and_preconditions_survive_many_listings(
    s3_store: ObjectStore,
) -> None:
    client, bucket = s3_store.client, s3_store.bucket
    until = dt.datetime.now(dt.UTC) + dt.timedelta(days=1)
    written: dict[str, list[tuple[str, bytes]]] = {}
    for n in range(12):
        key = s3_store.key(f"audit/k{n:02d}")
        for body in (b"one %d" % n, b"two %d" % n, b"three %d" % n):
            got = client.put_object(
                Bucket=bucket,
                Key=key,
                Body=body,
                ObjectLockMode="GOVERNANCE",
                ObjectLockRetainUntilDate=until,
                ObjectLockLegalHoldStatus="ON" if n % 2 else "OFF",
            )
            written.setdefault(key, []).append((got["VersionId"], body))
        if n % 3 == 0:
            client.delete_object(Bucket=bucket, Key=key)
    for _ in range(5):  # pages of 4: each page copies every key version
        pages = client.get_paginator("list_object_versions").paginate(
            Bucket=bucket, Prefix=s3_store.key("audit/"), PaginationConfig={"PageSize": 4}
        )
        listed = [(v["Key"], v["VersionId"]) for p in pages for v in p.get("Versions", [])]
    assert sorted(listed) == sorted((k, vid) for k, vs in written.items() for vid, _ in vs)
    markers = [v for v in s3_store.list_versions("audit/") if v.is_delete_marker]
    assert len(markers) == 4
    for key, versions in written.items():
        for version_id, body in versions:
            obj = client.get_object(Bucket=bucket, Key=key, VersionId=version_id)
            assert obj["Body"].read() == body
            assert obj["ObjectLockMode"] == "GOVERNANCE"
            hold = client.get_object_legal_hold(Bucket=bucket, Key=key, VersionId=version_id)
            assert hold["LegalHold"]["Status"] == (
                "ON" if key.endswith(("1", "3", "5", "7", "9")) else "OFF"
            )
        with pytest.raises(ClientError) as refused:
            client.delete_object(Bucket=bucket, Key=key, VersionId=versions[0][0])
        assert refused.value.response["Error"]["Code"] == "AccessDenied"
    live = s3_store.key("audit/k01")
    with pytest.raises(ClientError) as precondition:
        client.put_object(Bucket=bucket, Key=live, Body=b"x", IfNoneMatch="*")
    assert precondition.value.response["Error"]["Code"] == "PreconditionFailed"


def test_compare_and_swap_after_many_listings(s3_store: ObjectStore) -> None:
    # The chain head is swapped with If-Match on the ETag read before; listings between
    # (and the copies they leave to be collected) change neither answer.
    first = s3_store.put_swap("audit/chain-head.json", b"1\n", etag=None)
    for _ in range(3):
        assert len(list(s3_store.list_versions("audit/"))) == 1
    second = s3_store.put_swap("audit/chain-head.json", b"2\n", etag=first)
    with pytest.raises(PreconditionFailed):
        s3_store.put_swap("audit/chain-head.json", b"3\n", etag=first)
    with pytest.raises(PreconditionFailed):
        s3_store.put_swap("audit/chain-head.json", b"3\n", etag=None)
    assert second != first
    assert s3_store.get("audit/chain-head.json", max_bytes=10)[0] == b"2\n"  # type: ignore[index]
    assert [v.is_latest for v in s3_store.list_versions("audit/")] == [True, False]
