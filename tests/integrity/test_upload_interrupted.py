"""Publishing a run to a store written object by object when something goes wrong
between the steps (on the in-memory store): a writer that dies after it claimed the
chain head is completed by the retry without a second link; a head rolled back under
its link objects links nothing more; a run left staged keeps its id from a new run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agc._core.memstore import MemoryStore
from agc.errors import StoreError, UnsealedRunError
from agc.integrity import RunManifest, check_run, open_run, recover_run
from agc.integrity._upload import staging_store

REACHES_INSIDE = {
    "agc.integrity._upload": "the staging folder, to see a run kept staged or removed",
}

HEAD = "audit/chain-head.json"


@pytest.fixture
def memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> MemoryStore:
    monkeypatch.setenv("AGC_STAGING", str(tmp_path / "staging"))
    return MemoryStore(name="evidence", prefix="team")


def write(store: MemoryStore, run_id: str) -> None:
    with open_run(run_id, store=store) as run:
        run.transcript.write({"role": "user", "content": run_id})


def body(store: MemoryStore, path: str) -> bytes:
    found = store.get(path, max_bytes=1 << 20)
    assert found is not None, path
    return found[0]


def test_a_writer_dead_after_claiming_the_head_is_completed_by_the_retry_once(
    memory: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = MemoryStore.put_exact

    def dies_after_the_swap(self: MemoryStore, path: str, data: bytes, **kw: Any) -> bool:
        if path.startswith("audit/chain/"):
            raise StoreError("the connection was lost")
        return real(self, path, data, **kw)

    monkeypatch.setattr(MemoryStore, "put_exact", dies_after_the_swap)
    with pytest.raises(StoreError, match="connection was lost"):
        write(memory, "r1")
    assert memory.exists(HEAD)  # the head was swapped: position 1 is claimed by r1
    assert not memory.exists("audit/manifests/r1.json")
    assert staging_store(memory, "r1").exists()  # kept for the retry
    monkeypatch.setattr(MemoryStore, "put_exact", real)

    report = recover_run("r1", store=memory)
    assert report.object_store is not None
    assert report.object_store["position"] == 1
    assert list(memory.list_paths("audit/chain/")) == ["audit/chain/00000000000000000001.json"]
    assert len(list(memory.list_versions(HEAD))) == 1  # no second swap
    manifest = RunManifest.from_bytes(body(memory, "audit/manifests/r1.json"), expected_run_id="r1")
    assert manifest.chain == {"position": 1, "prev": None}
    assert not staging_store(memory, "r1").exists()
    assert check_run("r1", memory).errors == ()
    write(memory, "r2")  # the chain goes on after it
    assert list(memory.list_paths("audit/chain/"))[-1] == "audit/chain/00000000000000000002.json"


def test_a_head_rolled_back_under_its_links_links_no_more_runs(memory: MemoryStore) -> None:
    write(memory, "r1")
    first_head = body(memory, HEAD)
    write(memory, "r2")
    found = memory.get(HEAD, max_bytes=1 << 20)
    assert found is not None
    memory.put_swap(HEAD, first_head, etag=found[1].etag)  # the head says position 1 again
    with pytest.raises(StoreError, match="rolled back; no run can be linked"):
        write(memory, "r3")
    assert staging_store(memory, "r3").exists()  # sealed and kept, not lost
    assert not memory.exists("audit/manifests/r3.json")
    assert list(memory.list_paths("audit/chain/")) == [
        "audit/chain/00000000000000000001.json",
        "audit/chain/00000000000000000002.json",
    ]


def test_a_run_left_staged_keeps_its_id_until_it_is_uploaded(
    memory: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = MemoryStore.put_new

    def refused(self: MemoryStore, path: str, *args: Any, **kw: Any) -> Any:
        raise StoreError("AccessDenied")

    monkeypatch.setattr(MemoryStore, "put_new", refused)
    with pytest.raises(StoreError):
        write(memory, "r1")
    monkeypatch.setattr(MemoryStore, "put_new", real)
    with pytest.raises(UnsealedRunError, match="staged") as caught:
        write(memory, "r1")
    assert f"agc recover r1 --store {memory.url}" in (caught.value.hint or "")
    recover_run("r1", store=memory)
    assert check_run("r1", memory).errors == ()
