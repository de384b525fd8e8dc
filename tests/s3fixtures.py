"""pytest fixtures for object-store tests: moto's S3 server on loopback (one per test
session, started on first use) and a fresh Object Lock bucket per test."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest

from agc._core.objstore import ObjectStore
from tests.s3server import S3Server, create_locked_bucket, s3_env, start_server

_NAMES = itertools.count(1)


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    """moto's S3 server on 127.0.0.1, random port, in a child process."""
    server = start_server()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def s3_env_vars(
    s3_server: S3Server, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> dict[str, str]:
    """boto3 pointed at the server (fake credentials), staging in the test's folder."""
    env = {**s3_env(s3_server.endpoint), "AGC_STAGING": str(tmp_path / "staging")}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    return env


def new_bucket(
    server: S3Server, *, object_lock: bool = True, default_days: int | None = None
) -> str:
    name = f"evidence-{next(_NAMES):04d}"
    create_locked_bucket(server.endpoint, name, object_lock=object_lock, default_days=default_days)
    return name


@pytest.fixture
def s3_store(s3_server: S3Server, s3_env_vars: dict[str, str]) -> ObjectStore:
    """A store at s3://<new Object Lock bucket>/team/evidence (versioning on)."""
    return ObjectStore.parse(f"s3://{new_bucket(s3_server)}/team/evidence")
