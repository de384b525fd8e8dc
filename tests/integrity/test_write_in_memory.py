"""Writing to a store that is written object by object, on the in-memory store: the
write side takes only the store interface (staging, upload order, the chain by
compare-and-swap, repair, snapshots), so it works on any such store, not only S3."""

from __future__ import annotations

import io
import json
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from agc._core.memstore import MemoryStore
from agc._core.storage import BucketLock, Retention
from agc.errors import RunExistsError, SnapshotTamperedError, UsageError
from agc.integrity import RunManifest, ingest_stream, open_run, recover_store
from agc.integrity._chain import manifest_digest
from agc.integrity._chain_objects import HEAD_PATH, read_remote_head
from agc.integrity._upload import staging_store
from agc.resume import SessionSnapshot, _snapshot_store, load_snapshot, save_snapshot

REACHES_INSIDE = {
    "agc.integrity._chain": "the manifest digest the chain head records",
    "agc.integrity._chain_objects": "reads the chain head from the in-memory store",
    "agc.integrity._upload": "the staging folder, to see it removed once published",
    "agc.resume._snapshot_store": "pins the snapshot writer's clock",
}

TRANSCRIPT = b'{"type":"thread.started"}\n{"type":"item.completed","text":"done"}\n'


@pytest.fixture
def memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> MemoryStore:
    monkeypatch.setenv("AGC_STAGING", str(tmp_path / "staging"))
    return MemoryStore(name="evidence", prefix="team")


def _manifest(store: MemoryStore, run_id: str) -> RunManifest:
    found = store.get(f"audit/manifests/{run_id}.json", max_bytes=1 << 20)
    assert found is not None
    return RunManifest.from_bytes(found[0], expected_run_id=run_id)


def test_runs_are_staged_uploaded_in_order_and_chained(memory: MemoryStore) -> None:
    first = ingest_stream(io.BytesIO(TRANSCRIPT), "r1", store=memory)
    assert first.object_store is not None
    assert first.object_store["uploaded"] == [
        "audit/transcripts/r1.jsonl",
        "audit/transcripts/r1.jsonl.b3",
        "audit/tool-events/r1.jsonl",
        "audit/tool-events/r1.jsonl.b3",
        HEAD_PATH,
        "audit/chain/00000000000000000001.json",
        "audit/manifests/r1.json",
    ]
    assert not staging_store(memory, "r1").exists()  # removed once published
    with open_run("r2", store=memory) as run:
        run.transcript.write({"type": "x"})
    assert run.upload is not None
    assert run.upload.position == 2
    head, _ = read_remote_head(memory)
    assert head is not None
    assert head.run_id == "r2"
    assert head.prev == manifest_digest(_manifest(memory, "r1"))
    assert _manifest(memory, "r2").chain == {"position": 2, "prev": head.prev}
    with pytest.raises(RunExistsError):
        ingest_stream(io.BytesIO(b'{"other":1}\n'), "r1", store=memory)
    again = ingest_stream(io.BytesIO(TRANSCRIPT), "r1", store=memory)  # a retried import
    assert again.unchanged
    assert again.object_store is None  # nothing was uploaded


def test_racing_writers_each_link_their_runs_once_and_contiguously(
    memory: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every writer's first swap of the head waits until all have read the same head, so
    # the swaps truly race; the losers read the head again, and the chain ends with
    # every run once, at positions 1..n.
    writers = 5
    gate = threading.Barrier(writers, timeout=60)
    gated: set[int] = set()
    real_swap = MemoryStore.put_swap

    def racing_swap(self: MemoryStore, path: str, data: bytes, **kw: Any) -> str:
        if threading.get_ident() not in gated:
            gated.add(threading.get_ident())
            gate.wait()
        return real_swap(self, path, data, **kw)

    monkeypatch.setattr(MemoryStore, "put_swap", racing_swap)
    failures: list[BaseException] = []

    def write(writer: int) -> None:
        try:
            for i in range(3):
                ingest_stream(io.BytesIO(TRANSCRIPT), f"w{writer}-{i}", store=memory)
        except BaseException as exc:  # reported below, in the test's thread
            failures.append(exc)
            gate.abort()

    threads = [threading.Thread(target=write, args=(w,)) for w in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures, failures
    count = 3 * writers
    paths = list(memory.list_paths("audit/chain/"))
    assert paths == [f"audit/chain/{n:020d}.json" for n in range(1, count + 1)]
    links = [json.loads(found[0]) for p in paths if (found := memory.get(p, max_bytes=4096))]
    assert sorted(link["run_id"] for link in links) == sorted(
        f"w{w}-{i}" for w in range(writers) for i in range(3)
    )
    prev = None
    for position, link in enumerate(links, start=1):
        manifest = _manifest(memory, link["run_id"])
        assert link["position"] == position
        assert link["prev"] == prev
        assert manifest.chain == {"position": position, "prev": prev}
        assert link["manifest_digest"] == manifest_digest(manifest)
        prev = link["manifest_digest"]
    head, _ = read_remote_head(memory)
    assert head is not None
    assert (head.position, head.digest) == (count, prev)


def test_a_store_repair_completes_the_link_the_head_names(memory: MemoryStore) -> None:
    ingest_stream(io.BytesIO(TRANSCRIPT), "r1", store=memory)
    link = "audit/chain/00000000000000000001.json"
    before = {path: memory.get(path, max_bytes=1 << 20) for path in (link, HEAD_PATH)}
    memory.delete(link)  # as a writer killed after its compare-and-swap leaves it
    healed = recover_store(memory)
    assert healed.linked == "r1"
    assert healed.to_dict()["uploaded"] == []
    after, kept = memory.get(link, max_bytes=1 << 20), before[link]
    assert after is not None
    assert kept is not None
    assert after[0] == kept[0]
    assert not recover_store(memory).changed


def test_a_retention_on_a_store_without_object_lock_is_refused(
    memory: MemoryStore,
) -> None:
    retention = Retention("GOVERNANCE", 1)
    store = MemoryStore(name="evidence", retention=retention)
    with pytest.raises(UsageError, match="has no Object Lock"):
        ingest_stream(io.BytesIO(TRANSCRIPT), "r1", store=store)
    assert list(store.list_paths("")) == []
    locked = MemoryStore(name="locked", lock=BucketLock(enabled=True), retention=retention)
    summary = ingest_stream(io.BytesIO(TRANSCRIPT), "r1", store=locked)
    assert summary.object_store is not None
    assert summary.object_store["object_lock"]["retention"] == {"mode": "GOVERNANCE", "days": 1}


def test_snapshots_are_written_once_per_save_and_checked_on_load(
    memory: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    saves = iter([1_000_000_000_000_000_000, 2_000_000_000_000_000_000])  # ns: two saves
    monkeypatch.setattr(_snapshot_store, "time", SimpleNamespace(time_ns=lambda: next(saves)))

    def snapshot(text: str) -> SessionSnapshot:
        return SessionSnapshot(
            run_id="r1",
            session_id="s1",
            messages=[{"role": "user", "content": text}],
        )

    save_snapshot(snapshot("one"), memory)
    saved = save_snapshot(snapshot("two"), memory, compress=True)
    assert load_snapshot("r1", memory).messages[0]["content"] == "two"
    assert len(list(memory.list_paths("sessions/r1/"))) == 4  # two snapshots, two sidecars
    memory.overwrite(f"sessions/r1/{saved.path.name}", b"{}")
    with pytest.raises(SnapshotTamperedError, match="does not match its seal"):
        load_snapshot("r1", memory)
