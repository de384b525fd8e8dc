"""agc.integrity._kept in object storage: a run checked in a store written object by object
with a copy of its transcript kept from the same read, on the in-memory bucket; purging
every version of a key (what S3 allows on a bucket without Object Lock) on a real S3
implementation on loopback (moto)."""

from __future__ import annotations

import errno
import hashlib
import io
import tempfile
import tracemalloc
from pathlib import Path
from typing import Any

import blake3
import pytest

from agc._core.memstore import MemoryStore
from agc._core.objstore import ObjectStore
from agc._core.storage import Store
from agc._core.store import StoreLayout
from agc.errors import StoreError
from agc.integrity import KeptArtifact, check_run, check_run_kept, ingest_stream
from agc.integrity._chain_objects import artifact_path, manifest_path
from tests.s3fixtures import new_bucket
from tests.s3server import S3Server

REACHES_INSIDE = {
    "agc.integrity._chain_objects": "the object keys of a run's files, to tamper with them",
}

TRANSCRIPT = b'{"type":"thread.started"}\n{"type":"item.completed","text":"d\xc3\xa9j\xc3\xa0"}\n'
TRANSCRIPT_KEY = artifact_path("r1", "transcript")


def _record(store: Store, data: bytes = TRANSCRIPT, run_id: str = "r1") -> None:
    ingest_stream(io.BytesIO(data), run_id, store=store)


def _object(store: Store, path: str) -> bytes:
    got = store.get(path, max_bytes=1 << 30)
    assert got is not None
    return got[0]


def _codes(report: Any) -> set[str]:
    return {f.code for f in report.findings}


def test_the_copy_is_the_sealed_object_and_the_verdict_is_agc_verify_s(
    bucket: MemoryStore,
) -> None:
    _record(bucket)
    report, kept = check_run_kept("r1", bucket)
    with kept:
        assert report.complete
        assert report.to_dict() == check_run("r1", bucket).to_dict()
        assert kept.read
        assert kept.seal is not None
        assert kept.file.read() == _object(bucket, TRANSCRIPT_KEY)
        assert kept.size == kept.seal.bytes
        assert kept.info is not None
        assert kept.info.version_id
        assert kept.matches_seal()


def test_the_transcript_object_is_fetched_once(
    bucket: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    _record(bucket)
    opened: list[str] = []
    real_open = MemoryStore.open

    def counting_open(self: MemoryStore, path: str, **kwargs: Any) -> Any:
        opened.append(path)
        return real_open(self, path, **kwargs)

    monkeypatch.setattr(MemoryStore, "open", counting_open)
    report, kept = check_run_kept("r1", bucket)
    kept.close()
    assert report.complete
    assert opened.count(TRANSCRIPT_KEY) == 1


def test_a_copy_changed_on_this_host_after_the_read_is_a_modified_finding(
    bucket: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The copy must hash to the seal by itself: a copy that differs from the bytes the
    # verifier hashed (a bug, or a local writer) makes the report incomplete.
    _record(bucket)
    real_write = KeptArtifact.write

    def flipping_write(self: KeptArtifact, chunk: bytes, /) -> None:
        real_write(self, chunk.replace(b"done", b"dune").replace(b"thread", b"threat"))

    monkeypatch.setattr(KeptArtifact, "write", flipping_write)
    report, kept = check_run_kept("r1", bucket)
    with kept:
        assert not report.complete
        assert [f.code for f in report.errors] == ["modified"]
        assert "does not match its seal on this host" in report.missing[0]


def test_a_deleted_transcript_leaves_the_copy_unread(bucket: MemoryStore) -> None:
    _record(bucket)
    bucket.delete(TRANSCRIPT_KEY)
    report, kept = check_run_kept("r1", bucket)
    with kept:
        assert not report.complete
        assert "delete-marker" in _codes(report)
        assert not kept.read
        assert kept.size == 0
        assert not kept.matches_seal()


def test_a_large_transcript_is_spooled_to_a_file_not_held_in_memory(
    bucket: MemoryStore,
) -> None:
    line = b'{"type":"item.completed","text":"' + b"x" * 4000 + b'"}\n'
    data = line * 2048  # about 8 MiB
    _record(bucket, data)
    tracemalloc.start()
    try:
        report, kept = check_run_kept("r1", bucket, spool_bytes=256 * 1024)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    with kept:
        assert report.complete
        assert kept.size > len(data)  # the records wrap each line
        assert peak < len(data) // 2  # a few 1 MiB chunks, never the whole object
        assert kept.matches_seal()


def test_a_full_temporary_folder_is_a_store_error(
    bucket: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    _record(bucket)

    class FullDisk(io.BytesIO):
        def write(self, data: Any) -> int:
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(tempfile, "SpooledTemporaryFile", lambda **_: FullDisk())
    with pytest.raises(StoreError, match=r"cannot keep a copy of .*: no space left") as caught:
        check_run_kept("r1", bucket)
    assert caught.value.exit_code == 3
    assert "TMPDIR" in caught.value.hint


_LEGACY_LINE = b'{"line":1,"payload":{"type":"thread.started"}}\n'


def _put(store: Store, path: str, body: bytes) -> None:
    """What any writer of the bucket can do: a new version of the key."""
    if isinstance(store, MemoryStore):
        store.overwrite(path, body)
    else:
        assert isinstance(store, ObjectStore)
        store.client.put_object(Bucket=store.bucket, Key=store.key(path), Body=body)


def _put_legacy(store: Store, kind: Any, data: bytes) -> None:
    """An artifact with a legacy digest-only SHA-256 sidecar (no manifest)."""
    path = artifact_path("r1", kind)
    for key, body in ((path, data), (path + ".sha256", hashlib.sha256(data).hexdigest().encode())):
        _put(store, key, body)


def _purge(store: ObjectStore, path: str) -> None:
    """Every version of one key, gone for good (a bucket without Object Lock allows it)."""
    key = store.key(path)
    listed = store.client.list_object_versions(Bucket=store.bucket, Prefix=key)
    for version in (*listed.get("Versions", []), *listed.get("DeleteMarkers", [])):
        if version["Key"] == key:
            store.client.delete_object(Bucket=store.bucket, Key=key, VersionId=version["VersionId"])


def test_a_legacy_run_is_judged_by_its_sidecar_as_agc_verify_judges_it(
    bucket: MemoryStore,
) -> None:
    # No manifest, digest-only sidecars, not in the store chain: agc-verify calls it
    # complete, and the copy is the bytes it hashed (not "changed after it was read").
    _put_legacy(bucket, "transcript", _LEGACY_LINE)
    _put_legacy(bucket, "tool-events", b"")
    report, kept = check_run_kept("r1", bucket)
    with kept:
        assert report.to_dict() == check_run("r1", bucket).to_dict()
        assert report.complete
        assert kept.file.read() == _LEGACY_LINE


def test_a_recorded_run_rewritten_as_legacy_is_refused(
    s3_server: S3Server, s3_env_vars: Any
) -> None:
    # Whoever may write a bucket without Object Lock purges a recorded run's manifest,
    # sidecars and versions and writes other bytes with legacy sidecars: the chain still
    # links the run, so it had a manifest (manifest-missing, as in a folder store).
    store = ObjectStore.parse(f"s3://{new_bucket(s3_server, object_lock=False)}/team/evidence")
    _record(store)
    events = _object(store, artifact_path("r1", "tool-events"))
    for kind in ("transcript", "tool-events"):
        for suffix in ("", ".b3"):
            _purge(store, artifact_path("r1", kind) + suffix)
    _purge(store, manifest_path("r1"))
    _put_legacy(store, "transcript", _LEGACY_LINE)
    _put_legacy(store, "tool-events", events)
    assert "manifest-missing" in _codes(check_run("r1", store))
    report, kept = check_run_kept("r1", store)
    with kept:
        assert not report.complete
        assert "manifest-missing" in _codes(report)


_ANOTHER_LINE = b'{"line":2,"payload":{"type":"turn.completed"}}\n'

# Shapes of a run without a manifest, as (artifact kind, bytes, sidecar) triples; a
# sidecar is "sha256" (legacy digest-only), "b3" (agc's, naming the file) or "wrong"
# (a legacy sidecar with another file's digest).
_LEGACY_SHAPES: dict[str, list[tuple[Any, bytes, str]]] = {
    "both legacy": [("transcript", _LEGACY_LINE, "sha256"), ("tool-events", b"", "sha256")],
    "no tool events": [("transcript", _LEGACY_LINE, "sha256")],
    "transcript changed": [
        ("transcript", _LEGACY_LINE, "wrong"),
        ("tool-events", b"", "sha256"),
    ],
    "tool events with agc's sidecar": [
        ("transcript", _LEGACY_LINE, "sha256"),
        ("tool-events", _ANOTHER_LINE, "b3"),
    ],
    "transcript with agc's sidecar": [
        ("transcript", _LEGACY_LINE, "b3"),
        ("tool-events", b"", "sha256"),
    ],
}


def _sidecar_of(data: bytes, name: str, form: str) -> tuple[str, bytes]:
    if form == "b3":
        return ".b3", f"{blake3.blake3(data).hexdigest()}  {name}\n".encode()
    digest = hashlib.sha256(data if form == "sha256" else data + b"x").hexdigest()
    return ".sha256", digest.encode()


def _verdict(report: Any) -> tuple[Any, ...]:
    return (
        report.complete,
        report.legacy,
        sorted((f.code, f.severity, f.artifact) for f in report.findings),
        [(a.kind, a.legacy, a.ok, a.digest, a.records) for a in report.artifacts],
    )


@pytest.mark.parametrize("shape", sorted(_LEGACY_SHAPES))
def test_a_run_without_a_manifest_is_judged_as_in_a_folder_store(
    shape: str, bucket: MemoryStore, tmp_path: Path
) -> None:
    # The legacy format is one rule for both kinds of store: a legacy run is complete
    # with a legacy-format warning on each artifact its digest-only sidecar vouches for.
    layout = StoreLayout(tmp_path / "store")
    for kind, data, form in _LEGACY_SHAPES[shape]:
        suffix, sidecar = _sidecar_of(data, "r1.jsonl", form)
        path = artifact_path("r1", kind)
        for key, body in ((path, data), (path + suffix, sidecar)):
            _put(bucket, key, body)
        local = layout.artifact_path("r1", kind)
        local.parent.mkdir(parents=True, exist_ok=True)
        local.write_bytes(data)
        local.with_name(local.name + suffix).write_bytes(sidecar)
    in_bucket = check_run("r1", bucket)
    in_folder = check_run("r1", layout.root)
    assert _verdict(in_bucket) == _verdict(in_folder)
    if shape == "both legacy":
        assert in_bucket.complete
        assert in_bucket.legacy
        assert [f.code for f in in_bucket.findings] == ["legacy-format", "legacy-format"]
