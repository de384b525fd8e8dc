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

One thing it keeps that S3 would not: memory. Every moto model class (``BaseModel``)
appends each instance it ever makes to a class-level list, ``instances_tracked``, for
moto's dashboard (``/moto-api/data.json``) and its reset; nothing is ever taken off it.
``ListObjectVersions`` (``S3Backend.list_object_versions`` in ``moto/s3/models.py``)
deep-copies every key version of the bucket for each page it answers, and each copy
(with its body buffer and ACL objects) is a new tracked instance. So one listing of a
store of n objects left pages x n copies alive for good: about 155 MB for 6,000 objects,
and some 15 GB for 60,000 (10,000 runs), which is quadratic growth, not S3 behaviour. The
server here lets these lists hold their instances weakly (:class:`_WeakInstances`): the
dashboard and the reset still see every live object, and the copies die once answered.
What the S3 API answers is unchanged. (moto's own reset, ``POST /moto-api/reset``, puts
plain lists back; nothing here calls it.)

Run ``python -m tests.s3server`` to start one by hand (it prints its endpoint).
"""

from __future__ import annotations

import contextlib
import importlib
import os
import subprocess
import sys
import tempfile
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["S3Server", "create_locked_bucket", "s3_env", "start_server"]

_PROJECT_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
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


class _WeakInstances:
    """moto's per-class instance list (``append`` and iteration, all moto uses), holding
    each instance by a weak reference: tracking an instance no longer keeps it alive."""

    def __init__(self) -> None:
        self._live: weakref.WeakValueDictionary[int, Any] = weakref.WeakValueDictionary()

    def append(self, instance: Any) -> None:
        self._live[id(instance)] = instance

    def __iter__(self) -> Iterator[Any]:
        return iter(list(self._live.values()))

    def __len__(self) -> int:
        return len(self._live)


def track_weakly(service: str = "s3") -> int:
    """Make the instance lists of ``service``'s moto model classes weak (see the module
    doc); returns how many classes were changed. Call it in the server process."""
    importlib.import_module(f"moto.{service}.models")  # defines (and registers) its models
    from moto.core.model_instances import model_data  # noqa: PLC0415

    classes = list(model_data[service].values())
    for cls in classes:
        cls.instances_tracked = _WeakInstances()  # type: ignore[attr-defined]
    return len(classes)


def _serve(port: int) -> None:  # pragma: no cover - runs in the server process
    # moto is imported in the server process only: the tests' own process stays light.
    from moto.moto_server.werkzeug_app import (  # noqa: PLC0415
        DomainDispatcherApplication,
        create_backend_app,
    )
    from werkzeug.serving import make_server  # noqa: PLC0415

    track_weakly("s3")
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
    # ``-m tests.s3server`` is found from the working folder: start it in the project's
    # root, whatever folder the test that first asks for the server is in. Its stderr goes
    # to a file, read only when it fails to start.
    with tempfile.TemporaryFile() as errors:
        process = subprocess.Popen(
            [sys.executable, "-m", "tests.s3server", "--serve"],
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
            env=env,
            cwd=_PROJECT_ROOT,
        )
        assert process.stdout is not None
        line = process.stdout.readline().strip()
        if not line.isdigit():
            process.kill()
            process.wait()
            errors.seek(0)
            said = errors.read()[-2000:].decode(errors="replace")
            raise RuntimeError(f"the moto server did not start; it said:\n{said}")
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
