"""The loopback S3 server of the tests and benchmarks (``tests/s3server.py``)."""

from __future__ import annotations

import json
import urllib.request

import boto3

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
