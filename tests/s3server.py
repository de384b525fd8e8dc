"""A real S3 implementation on loopback for the tests and benchmarks: moto's server.

moto's server answers the S3 REST API (conditional writes, versioning, Object Lock,
checksums) over HTTP. It is started here in its own process on 127.0.0.1 with a port
the kernel chooses, and stopped at the end; no traffic leaves the machine.

One thing it does not do as S3 does: its ``If-None-Match`` / ``If-Match`` check and the
write that follows are two steps of a threaded server without a lock, so two requests
that race may both pass. S3 makes the check and the write one step. The server here
therefore serialises every request that changes the bucket (PUT, POST, DELETE) with one
lock around moto's application, which gives the atomicity S3 documents; reads stay
concurrent.

Run ``python -m tests.s3server`` to start one by hand (it prints its endpoint).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["S3Server", "create_locked_bucket", "s3_env", "start_server"]

_MUTATING = frozenset({"PUT", "POST", "DELETE"})
FAKE_KEY_ID = "testing-access-key-id"
FAKE_SECRET = "testing-secret-access-key"


def _serialised(app: Callable[..., Any]) -> Callable[..., Any]:
    lock = threading.Lock()

    def wrapped(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("REQUEST_METHOD") in _MUTATING:
            with lock:
                # Read the whole answer under the lock: the write happens while it is built.
                return list(app(environ, start_response))
        return app(environ, start_response)  # type: ignore[no-any-return]

    return wrapped


def _serve(port: int) -> None:  # pragma: no cover - runs in the server process
    # moto is imported in the server process only: the tests' own process stays light.
    from moto.moto_server.werkzeug_app import (  # noqa: PLC0415
        DomainDispatcherApplication,
        create_backend_app,
    )
    from werkzeug.serving import make_server  # noqa: PLC0415

    app = _serialised(DomainDispatcherApplication(create_backend_app))
    server = make_server("127.0.0.1", port, app, threaded=True)
    sys.stdout.write(f"{server.server_address[1]}\n")
    sys.stdout.flush()
    server.serve_forever()


@dataclass
class S3Server:
    """A running moto server: ``endpoint`` is ``http://127.0.0.1:<port>``."""

    endpoint: str
    process: subprocess.Popen[str]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def start_server() -> S3Server:
    """Start moto's S3 server on 127.0.0.1 (random port) in a child process."""
    env = {**os.environ, **s3_env("http://127.0.0.1:1")}
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.s3server", "--serve"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    assert process.stdout is not None
    line = process.stdout.readline().strip()
    if not line.isdigit():
        process.kill()
        raise RuntimeError("the moto server did not start")
    return S3Server(endpoint=f"http://127.0.0.1:{line}", process=process)


def s3_env(endpoint: str) -> dict[str, str]:
    """Environment for boto3 to talk to the server with fake, test-only credentials."""
    return {
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ACCESS_KEY_ID": FAKE_KEY_ID,
        "AWS_SECRET_ACCESS_KEY": FAKE_SECRET,
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_REGION": "us-east-1",
        "AWS_EC2_METADATA_DISABLED": "true",
    }


def create_locked_bucket(
    endpoint: str,
    name: str,
    *,
    object_lock: bool = True,
    default_days: int | None = None,
    default_mode: Literal["COMPLIANCE", "GOVERNANCE"] = "COMPLIANCE",
) -> None:
    """Create a bucket (Object Lock enabled, which turns versioning on) on the server."""
    import boto3  # noqa: PLC0415 - as agc does: only where S3 is used

    client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    client.create_bucket(Bucket=name, ObjectLockEnabledForBucket=object_lock)
    if not object_lock:
        client.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": "Enabled"})
    if object_lock and default_days is not None:
        client.put_object_lock_configuration(
            Bucket=name,
            ObjectLockConfiguration={
                "ObjectLockEnabled": "Enabled",
                "Rule": {"DefaultRetention": {"Mode": default_mode, "Days": default_days}},
            },
        )


@contextlib.contextmanager
def running_server() -> Iterator[S3Server]:
    server = start_server()
    try:
        yield server
    finally:
        server.stop()


if __name__ == "__main__":  # pragma: no cover
    if "--serve" in sys.argv:
        _serve(0)
    else:
        with running_server() as found:
            print(found.endpoint, flush=True)
            with contextlib.suppress(KeyboardInterrupt):
                found.process.wait()
