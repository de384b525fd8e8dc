"""The store contract: every implementation of ``agc._core.storage.Store`` (a folder, S3 on
moto's server, memory) answers the same operations the same way.

The S3 API is the reference (conditional writes, versions, delete markers); a feature
written against the interface may rely on nothing that is not checked here.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agc._core.folderstore import FolderStore
from agc._core.memstore import MemoryStore
from agc._core.objstore import ObjectStore
from agc._core.storage import (
    BucketLock,
    ObjectInfo,
    PreconditionFailed,
    Retention,
    Store,
    check_store_path,
)
from agc._core.store import (
    CHAIN,
    RunId,
    StoreLayout,
    artifact_path,
    is_run_id,
    manifest_path,
    open_store,
    validate_run_id,
)
from agc.errors import RunIdInvalidError, StoreError, UnsafePathError, UsageError

KINDS = ["folder", "memory", "s3"]


@pytest.fixture(params=KINDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    """One store of each kind, empty."""
    if request.param == "folder":
        return FolderStore(tmp_path / "store")
    if request.param == "memory":
        return MemoryStore(prefix="team/evidence", lock=BucketLock(enabled=True))
    s3: ObjectStore = request.getfixturevalue("s3_store")
    return s3


def _read(store: Store, path: str) -> bytes | None:
    with store.open(path) as found:
        if found is None:
            return None
        chunks, _info = found
        return b"".join(chunks)


# -- reading what is not there ------------------------------------------------------------


def test_a_missing_path_is_none_never_an_error(store: Store) -> None:
    path = "audit/manifests/r1.json"
    assert store.get(path, max_bytes=100) is None
    assert _read(store, path) is None
    assert store.exists(path) is False
    assert list(store.list_paths("audit/")) == []
    assert list(store.list_versions("audit/")) == []


# -- creating -----------------------------------------------------------------------------


def test_put_new_creates_and_every_read_gives_the_same_bytes_and_etag(store: Store) -> None:
    path = "audit/transcripts/r1.jsonl"
    body = b'{"n":1}\n' * 1000
    made = store.put_new(path, body)
    assert isinstance(made, ObjectInfo)
    found = store.get(path, max_bytes=len(body))
    assert found is not None
    data, info = found
    assert data == body
    assert info.size == len(body)
    assert info.etag
    assert info.etag == made.etag
    assert info.key == store.key(path)
    assert store.relative(info.key) == path
    assert _read(store, path) == body
    with store.open(path) as opened:
        assert opened is not None
        assert opened[1].etag == info.etag
        assert opened[1].size == len(body)
        b"".join(opened[0])
    assert store.exists(path)


def test_put_new_takes_a_file_body(store: Store, tmp_path: Path) -> None:
    source = tmp_path / "body"
    source.write_bytes(b"streamed\n" * 300)
    with source.open("rb") as handle:
        store.put_new("audit/tool-events/r1.jsonl", handle)
    assert _read(store, "audit/tool-events/r1.jsonl") == source.read_bytes()


def test_put_new_never_writes_over_an_existing_object(store: Store) -> None:
    path = "audit/manifests/r1.json"
    store.put_new(path, b"first")
    with pytest.raises(PreconditionFailed):
        store.put_new(path, b"second")
    assert _read(store, path) == b"first"


def test_racing_creators_of_one_path_make_exactly_one_object(store: Store) -> None:
    path = "audit/chain/00000000000000000001.json"
    outcomes = _race(8, lambda i: store.put_new(path, f"writer {i}".encode()))
    winners = [i for i, outcome in outcomes.items() if outcome is None]
    assert len(winners) == 1
    assert all(isinstance(outcomes[i], PreconditionFailed) for i in outcomes if i not in winners)
    assert _read(store, path) == f"writer {winners[0]}".encode()


@pytest.mark.parametrize("other", [b"", b"link", b"link 1\n", b"link 1\n and more"])
def test_put_exact_accepts_a_retry_and_never_writes_over_other_bytes(
    store: Store, other: bytes
) -> None:
    path = "audit/chain/00000000000000000001.json"
    assert store.put_exact(path, b"link 1\n") is True
    assert store.put_exact(path, b"link 1\n") is False  # the same bytes: a retry
    if other != b"link 1\n":
        elsewhere = "audit/chain/00000000000000000002.json"
        store.put_new(elsewhere, other)
        with pytest.raises(StoreError, match="exists with other content"):
            store.put_exact(elsewhere, b"link 1\n")
        assert _read(store, elsewhere) == other


def test_get_refuses_an_object_larger_than_asked(store: Store) -> None:
    store.put_new("audit/manifests/big.json", b"x" * 65)
    with pytest.raises(StoreError, match="larger than 64 bytes"):
        store.get("audit/manifests/big.json", max_bytes=64)
    assert store.get("audit/manifests/big.json", max_bytes=65) is not None


# -- compare-and-swap ---------------------------------------------------------------------


def test_put_swap_creates_only_when_absent_and_replaces_only_when_unchanged(store: Store) -> None:
    head = "audit/chain-head.json"
    first = store.put_swap(head, b"head 1", etag=None)
    with pytest.raises(PreconditionFailed):
        store.put_swap(head, b"head 1 again", etag=None)
    found = store.get(head, max_bytes=100)
    assert found is not None
    assert found[0] == b"head 1"
    assert found[1].etag == first
    second = store.put_swap(head, b"head 2", etag=first)
    assert second != first
    with pytest.raises(PreconditionFailed):
        store.put_swap(head, b"head from a stale read", etag=first)
    found = store.get(head, max_bytes=100)
    assert found is not None
    assert found[0] == b"head 2"
    assert found[1].etag == second


def test_put_swap_with_an_etag_on_a_missing_object_is_refused(store: Store) -> None:
    made = store.put_new("audit/manifests/other.json", b"x")
    with pytest.raises(PreconditionFailed):
        store.put_swap("audit/chain-head.json", b"head", etag=made.etag)
    assert store.exists("audit/chain-head.json") is False


def test_of_racing_swaps_from_one_read_exactly_one_wins(store: Store) -> None:
    head = "audit/chain-head.json"
    etag = store.put_swap(head, b"head 0", etag=None)
    outcomes = _race(8, lambda i: store.put_swap(head, f"head by {i}".encode(), etag=etag))
    winners = [i for i, outcome in outcomes.items() if isinstance(outcome, str)]
    assert len(winners) == 1
    assert all(isinstance(outcomes[i], PreconditionFailed) for i in outcomes if i not in winners)
    assert _read(store, head) == f"head by {winners[0]}".encode()


# -- the chain: one turn at a time, one winner per head -------------------------------------


def _link(position: int, by: int) -> bytes:
    return f'{{"position":{position},"by":{by}}}\n'.encode()


def _head(position: int, by: int) -> bytes:
    return f'{{"head":{position},"by":{by}}}\n'.encode()


def _chain_bytes(store: Store) -> bytes:
    """The store's links in order, wherever it keeps them (a log file, or one object per
    position): each link is one whole line, so both read the same."""
    log = store.get(CHAIN.log, max_bytes=1 << 20)
    objects = [store.get(path, max_bytes=1 << 20) for path in store.list_paths(f"{CHAIN.links}/")]
    return (log[0] if log else b"") + b"".join(found[0] for found in objects if found)


def _head_now(store: Store) -> tuple[int, str | None]:
    """The head's position (0: none yet) and ETag."""
    found = store.get(CHAIN.head, max_bytes=1 << 10)
    if found is None:
        return 0, None
    return int(found[0].split(b",")[0].split(b":")[1]), found[1].etag


def test_of_racing_appenders_from_one_read_exactly_one_wins(store: Store) -> None:
    first = store.chain_turn(CHAIN)
    with first as turn:
        etag = turn.append(1, _link(1, 99), _head(1, 99), etag=None)

    def append(i: int) -> str:
        with store.chain_turn(CHAIN) as turn:
            return turn.append(2, _link(2, i), _head(2, i), etag=etag)

    outcomes = _race(6, append)
    winners = [i for i, outcome in outcomes.items() if isinstance(outcome, str)]
    assert len(winners) == 1, outcomes
    assert all(isinstance(outcomes[i], PreconditionFailed) for i in outcomes if i not in winners)
    # The losers wrote nothing: one link at each position, the head names the winner's.
    assert _chain_bytes(store) == _link(1, 99) + _link(2, winners[0])
    assert _read(store, CHAIN.head) == _head(2, winners[0])


def test_appenders_that_read_the_head_again_after_losing_all_land_once_in_order(
    store: Store,
) -> None:
    def append(i: int) -> str:
        while True:
            with store.chain_turn(CHAIN) as turn:
                position, etag = _head_now(store)
                try:
                    turn.append(
                        position + 1, _link(position + 1, i), _head(position + 1, i), etag=etag
                    )
                except PreconditionFailed:
                    continue
                return str(position + 1)

    outcomes = _race(6, append)
    positions = sorted(int(str(p)) for p in outcomes.values())
    assert positions == [1, 2, 3, 4, 5, 6]
    by_position = {int(str(p)): i for i, p in outcomes.items()}
    assert _chain_bytes(store) == b"".join(_link(n, by_position[n]) for n in range(1, 7))
    assert _read(store, CHAIN.head) == _head(6, by_position[6])


def test_an_append_is_refused_when_the_head_moved_since_it_was_read(store: Store) -> None:
    with store.chain_turn(CHAIN) as turn:
        turn.append(1, _link(1, 0), _head(1, 0), etag=None)
        with pytest.raises(PreconditionFailed):
            turn.append(1, _link(1, 1), _head(1, 1), etag=None)
    assert _chain_bytes(store) == _link(1, 0)


def test_a_link_object_holding_other_bytes_is_never_written_over(store: Store) -> None:
    if store.folder is not None:
        pytest.skip("a folder keeps its links in one log file, appended to")
    store.put_new(CHAIN.link(1), b'{"forged":true}\n')
    with store.chain_turn(CHAIN) as turn, pytest.raises(StoreError, match="other content"):
        turn.append(1, _link(1, 0), _head(1, 0), etag=None)
    assert _read(store, CHAIN.link(1)) == b'{"forged":true}\n'


class _StoppedError(Exception):
    """The writer stopped here (a crash between the two writes of an append)."""


def test_an_append_stopped_between_its_writes_leaves_head_and_log_one_link_apart(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    with store.chain_turn(CHAIN) as turn:
        etag = turn.append(1, _link(1, 0), _head(1, 0), etag=None)

    def stop(*_args: object, **_kwargs: object) -> None:
        raise _StoppedError

    # The second write of each store's append: a folder's head, an object store's link.
    if store.folder is not None:
        monkeypatch.setattr("agc._core.folderstore.atomic_write_bytes", stop)
    else:
        monkeypatch.setattr(type(store), "put_new", stop)
    with store.chain_turn(CHAIN) as turn, pytest.raises(_StoppedError):
        turn.append(2, _link(2, 1), _head(2, 1), etag=etag)
    monkeypatch.undo()

    head_moved = _read(store, CHAIN.head) == _head(2, 1)
    link_written = _chain_bytes(store) == _link(1, 0) + _link(2, 1)
    assert head_moved or _read(store, CHAIN.head) == _head(1, 0)
    assert link_written or _chain_bytes(store) == _link(1, 0)
    assert head_moved != link_written  # one link apart, never torn, never both nor neither
    # In the order the contract gives: a folder's log first, an object store's head first.
    assert link_written == (store.folder is not None)


# -- listing ------------------------------------------------------------------------------

_FILES = [
    "audit/chain-head.json",
    "audit/manifests/a.json",
    "audit/manifests/b.json",
    "audit/manifests/b.json.extra",
    "audit/transcripts/a.jsonl",
    "audit/transcripts/a.jsonl.b3",
    "sessions/a/snapshot.json",
]


def test_listing_gives_the_paths_under_a_prefix_in_path_order(store: Store) -> None:
    for path in reversed(_FILES):
        store.put_new(path, path.encode())
    assert list(store.list_paths("audit/")) == [p for p in _FILES if p.startswith("audit/")]
    assert list(store.list_paths("audit/manifests/")) == _FILES[1:4]
    assert list(store.list_paths("audit/manifests/b")) == _FILES[2:4]
    assert list(store.list_paths("audit/transcripts/a.jsonl")) == _FILES[4:6]


def test_a_listing_of_objects_gives_each_path_its_size_and_time_without_a_read(
    store: Store,
) -> None:
    for path in _FILES:
        store.put_new(path, path.encode() * 3)
    written = {path: store.get(path, max_bytes=1 << 20) for path in _FILES}
    listed = list(store.list_objects("audit/manifests/"))
    assert [o.path for o in listed] == list(store.list_paths("audit/manifests/"))
    for entry in listed:
        found = written[entry.path]
        assert found is not None
        assert (entry.size, entry.last_modified_ms) == (len(found[0]), found[1].last_modified_ms)
    assert list(store.list_objects("audit/nothing/")) == []


def test_the_names_in_a_folder_are_its_objects_and_sub_folders_once(store: Store) -> None:
    for path in _FILES:
        store.put_new(path, path.encode())
    store.put_new("audit/manifests/sub/deep.json", b"deep")
    below = {p.removeprefix("audit/manifests/").split("/")[0] for p in _FILES[1:4]}
    assert store.list_names("audit/manifests") == sorted(below | {"sub"})
    assert store.list_names("audit/manifests/") == store.list_names("audit/manifests")
    assert store.list_names("audit/nothing") == []


def test_each_current_object_is_listed_once_as_its_latest_version(store: Store) -> None:
    for path in _FILES:
        store.put_new(path, path.encode())
    current = [v for v in store.list_versions("audit/") if not v.is_delete_marker]
    assert [store.relative(v.key) for v in current] == [p for p in _FILES if p.startswith("audit/")]
    assert all(v.is_latest and v.version_id for v in current)
    assert [v.size for v in current] == [len(store.relative(v.key)) for v in current]


def test_a_versioned_store_keeps_what_a_swap_replaced(store: Store) -> None:
    head = "audit/chain-head.json"
    first = store.put_swap(head, b"head 1", etag=None)
    store.put_swap(head, b"head 22", etag=first)
    versions = list(store.list_versions(head))
    if not store.versioned:
        assert [(v.version_id, v.size, v.is_latest) for v in versions] == [("null", 7, True)]
        return
    assert [(v.size, v.is_latest) for v in versions] == [(7, True), (6, False)]
    old = store.get(head, max_bytes=100, version_id=versions[1].version_id)
    assert old is not None
    assert old[0] == b"head 1"
    with store.open(head, version_id=versions[0].version_id) as opened:
        assert opened is not None
        assert b"".join(opened[0]) == b"head 22"


def test_a_store_holds_what_was_written_at_a_path_prefix_and_nothing_else(store: Store) -> None:
    run = "audit/transcripts/r1.jsonl"
    assert store.holds(run) is False
    assert store.holds("audit/") is False
    store.put_new(run + ".b3", b"sidecar")
    assert store.holds(run) is True  # its sidecar is under the prefix
    assert store.holds("audit/transcripts/r2.jsonl") is False
    assert store.holds("audit/manifests/r1.json") is False


def test_a_folder_holds_a_symlink_it_never_reads_and_a_bucket_a_deleted_object(
    tmp_path: Path,
) -> None:
    folder = FolderStore(tmp_path / "store")
    link = folder.file("audit/manifests/r1.json")
    link.parent.mkdir(parents=True)
    link.symlink_to(tmp_path / "elsewhere")
    assert folder.exists("audit/manifests/r1.json") is False
    assert folder.holds("audit/manifests/r1.json") is True
    memory = MemoryStore()
    memory.put_new("audit/manifests/r1.json", b"{}")
    memory.delete("audit/manifests/r1.json")
    assert memory.exists("audit/manifests/r1.json") is False
    assert memory.holds("audit/manifests/r1.json") is True


# -- Object Lock --------------------------------------------------------------------------


def test_a_retention_is_kept_where_the_store_has_object_lock_and_refused_elsewhere(
    store: Store,
) -> None:
    retention = Retention("GOVERNANCE", 1)
    path = "audit/manifests/locked.json"
    if not store.bucket_lock().enabled:
        with pytest.raises(StoreError):
            store.put_new(path, b"x", retention=retention)
        with pytest.raises(StoreError):
            store.put_new(path, b"x", legal_hold=True)
        assert store.exists(path) is False
        return
    store.put_new(path, b"x", retention=retention, legal_hold=True)
    found = store.get(path, max_bytes=10)
    assert found is not None
    assert found[1].lock_mode == "GOVERNANCE"
    assert found[1].retain_until_ms is not None
    assert found[1].retain_until_ms > 0
    assert found[1].legal_hold is True


def test_a_write_policy_is_taken_by_a_store_written_object_by_object_and_refused_by_a_folder(
    store: Store,
) -> None:
    retention = Retention("GOVERNANCE", 1)
    assert store.with_policy(retention=None, legal_hold=False).url == store.url
    if store.folder is not None:  # written in place: its files carry no Object Lock
        with pytest.raises(UsageError, match="has no Object Lock"):
            store.with_policy(retention=retention, legal_hold=False)
        with pytest.raises(UsageError, match="has no Object Lock"):
            store.with_policy(retention=None, legal_hold=True)
        return
    held = store.with_policy(retention=retention, legal_hold=True)
    assert (held.url, held.retention, held.legal_hold) == (store.url, retention, True)
    assert (store.retention, store.legal_hold) == (None, False)  # the store itself is unchanged
    held.put_new("audit/manifests/r1.json", b"{}")  # the same objects
    assert _read(store, "audit/manifests/r1.json") == b"{}"


def test_a_memory_store_without_object_lock_refuses_a_retention() -> None:
    store = MemoryStore(lock=BucketLock(enabled=False))
    with pytest.raises(StoreError):
        store.put_new("audit/x", b"x", retention=Retention("COMPLIANCE", 1))
    assert list(store.list_paths("audit/")) == []


# -- what a writer of the bucket can do, and the folder's own refusals ---------------------


def test_a_delete_marker_reads_as_missing_and_is_listed_as_one() -> None:
    store = MemoryStore()
    store.put_new("audit/manifests/r1.json", b"m")
    store.delete("audit/manifests/r1.json")
    assert store.get("audit/manifests/r1.json", max_bytes=10) is None
    assert store.exists("audit/manifests/r1.json") is False
    assert list(store.list_paths("audit/")) == []
    listed = list(store.list_versions("audit/"))
    assert [(v.is_delete_marker, v.is_latest) for v in listed] == [(False, False), (True, True)]
    # The path is free again: S3 lets If-None-Match create over a delete marker.
    store.put_new("audit/manifests/r1.json", b"again")


def test_a_folder_store_follows_no_symlink_and_lists_none(tmp_path: Path) -> None:
    store = FolderStore(tmp_path / "store")
    store.put_new("audit/manifests/real.json", b"real")
    outside = tmp_path / "outside.json"
    outside.write_bytes(b"outside")
    (tmp_path / "store/audit/manifests/link.json").symlink_to(outside)
    with pytest.raises(UnsafePathError):
        store.get("audit/manifests/link.json", max_bytes=100)
    with pytest.raises(UnsafePathError), store.open("audit/manifests/link.json"):
        pass
    assert store.exists("audit/manifests/link.json") is False
    assert list(store.list_paths("audit/")) == ["audit/manifests/real.json"]


def test_a_folder_store_refuses_a_fifo_without_waiting(tmp_path: Path) -> None:
    store = FolderStore(tmp_path / "store")
    store.put_new("audit/manifests/real.json", b"real")
    os.mkfifo(tmp_path / "store/audit/manifests/fifo.json")
    with pytest.raises(StoreError, match="not a regular file"):
        store.get("audit/manifests/fifo.json", max_bytes=100)


def test_a_folder_store_does_not_list_its_lock_and_temporary_files(tmp_path: Path) -> None:
    store = FolderStore(tmp_path / "store")
    etag = store.put_swap("audit/chain-head.json", b"h", etag=None)
    store.put_swap("audit/chain-head.json", b"h2", etag=etag)
    (tmp_path / "store/audit/.x.0123456789ab.tmp").write_bytes(b"half")
    assert (tmp_path / "store/audit/.chain-head.json.lock").exists()
    assert list(store.list_paths("")) == ["audit/chain-head.json"]


def test_a_folder_store_names_every_entry_a_look_at_the_folder_shows(tmp_path: Path) -> None:
    # What a person sees in the folder, objects or not: a stray symlink or temporary
    # file there is for the verifier to report, never hidden by the listing.
    store = FolderStore(tmp_path / "store")
    store.put_new("audit/manifests/real.json", b"real")
    folder = tmp_path / "store/audit/manifests"
    (folder / "link.json").symlink_to(tmp_path / "nowhere.json")
    (folder / ".x.0123456789ab.tmp").write_bytes(b"half")
    assert store.list_names("audit/manifests") == sorted(
        [".x.0123456789ab.tmp", "link.json", "real.json"]
    )
    (tmp_path / "store/audit/transcripts").write_bytes(b"a file, not a folder")
    with pytest.raises(StoreError, match="cannot read"):
        store.list_names("audit/transcripts")


@pytest.mark.parametrize("path", ["", "/abs", "a//b", "a/../b", "..", "a/./b", "a\0b"])
def test_a_path_outside_the_layout_is_a_bug_never_a_file(path: str, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not a path inside a store"):
        check_store_path(path)
    with pytest.raises(ValueError, match="not a path inside a store"):
        FolderStore(tmp_path).get(path, max_bytes=1)
    with pytest.raises(ValueError, match="not a path inside a store"):
        MemoryStore().put_new(path, b"x")


def _open_whole(store: Store, path: str) -> None:
    with store.open(path):
        pass


_PATH_OPERATIONS: dict[str, Callable[[Store, str], object]] = {
    "put_new": lambda store, path: store.put_new(path, b"x"),
    "put_swap": lambda store, path: store.put_swap(path, b"x", etag=None),
    "get": lambda store, path: store.get(path, max_bytes=1),
    "open": _open_whole,
    "exists": lambda store, path: store.exists(path),
    "list_paths": lambda store, path: list(store.list_paths(f"{path}/")),
    "list_versions": lambda store, path: list(store.list_versions(f"{path}/")),
    "list_names": lambda store, path: store.list_names(path),
}


def _refusal(store: Store, path: str, operation: Callable[[Store, str], object]) -> str | None:
    """Why ``operation`` refused ``path`` (its ``ValueError``), ``None`` if it did not."""
    try:
        operation(store, path)
    except ValueError as exc:
        return str(exc)
    return None


@pytest.mark.parametrize("path", ["", "/abs", "a//b", "a/../b", "..", "a/./b", "../audit"])
def test_every_store_refuses_a_path_outside_the_layout_in_every_operation(
    path: str, store: Store
) -> None:
    # An object store would otherwise write and read '../x' or '/abs' as keys of their
    # own, outside the layout the other stores keep to.
    refused = {
        name: (_refusal(store, path, operation) or "").endswith("is not a path inside a store")
        for name, operation in _PATH_OPERATIONS.items()
    }
    assert refused == dict.fromkeys(_PATH_OPERATIONS, True)
    assert list(store.list_paths("")) == []


def test_the_store_root_as_a_folder_is_refused_never_silently_empty(store: Store) -> None:
    # Asked for the names at the root, an object store listed under '<prefix>//' and
    # answered [], as if the store were empty.
    store.put_new("audit/manifests/r1.json", b"x")
    with pytest.raises(ValueError, match="not a path inside a store"):
        store.list_names("")
    assert store.list_names("audit") == ["manifests"]


def _store_with_a_symlinked_folder(tmp_path: Path, folder: str) -> tuple[FolderStore, Path]:
    """A folder store whose ``folder`` is a symlink to a copy outside it, holding
    ``r1.json`` under ``manifests`` (as the store would)."""
    outside = tmp_path / "outside"
    (tmp_path / "store" / folder).parent.mkdir(parents=True, exist_ok=True)
    below = Path("audit/manifests/r1.json").relative_to(folder)
    (outside / below).parent.mkdir(parents=True, exist_ok=True)
    (outside / below).write_bytes(b"outside")
    (tmp_path / "store" / folder).symlink_to(outside)
    return FolderStore(tmp_path / "store"), outside


def _tree(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.mark.parametrize("folder", ["audit", "audit/manifests"])
@pytest.mark.parametrize(
    "write",
    [
        lambda store, path: store.put_new(path, b"x"),
        lambda store, path: store.put_swap(path, b"x", etag=None),
    ],
    ids=["put_new", "put_swap"],
)
def test_a_folder_store_never_writes_through_a_symlinked_folder(
    tmp_path: Path, folder: str, write: Callable[[Store, str], object]
) -> None:
    store, outside = _store_with_a_symlinked_folder(tmp_path, folder)
    before = _tree(outside)
    for path in ("audit/manifests/r2.json", "audit/manifests/sub/r3.json"):
        with pytest.raises(UnsafePathError, match="is a symlink"):
            write(store, path)
    assert _tree(outside) == before


@pytest.mark.parametrize("folder", ["audit", "audit/manifests"])
def test_a_folder_store_never_reads_or_lists_through_a_symlinked_folder(
    tmp_path: Path, folder: str
) -> None:
    store, _outside = _store_with_a_symlinked_folder(tmp_path, folder)
    path = "audit/manifests/r1.json"
    assert list(store.list_paths("")) == []
    assert list(store.list_paths("audit/")) == []
    assert list(store.list_paths("audit/manifests/")) == []
    assert list(store.list_versions("audit/")) == []
    assert store.exists(path) is False
    with pytest.raises(UnsafePathError, match="is a symlink"):
        store.get(path, max_bytes=100)
    with pytest.raises(UnsafePathError, match="is a symlink"):
        _read(store, path)
    with pytest.raises(UnsafePathError, match="is a symlink"):
        store.list_names("audit/manifests")
    with pytest.raises(UnsafePathError, match="is a symlink"):
        store.holds("audit/manifests/r")


# -- two stores, one sequence of operations: the same answers ------------------------------

_PATHS = st.sampled_from(["audit/a", "audit/b", "audit/sub/c", "other/d"])
_OPS = st.lists(
    st.tuples(
        st.sampled_from(["new", "swap", "swap-stale", "get"]), _PATHS, st.binary(max_size=16)
    ),
    max_size=25,
)


@settings(max_examples=40, deadline=None)
@given(ops=_OPS)
def test_folder_and_memory_answer_every_sequence_as_a_model_does(
    ops: list[tuple[str, str, bytes]], tmp_path_factory: pytest.TempPathFactory
) -> None:
    stores: list[Store] = [
        FolderStore(tmp_path_factory.mktemp("store")),
        MemoryStore(versioning=False),
        MemoryStore(prefix="p/q"),
    ]
    for store in stores:
        model: dict[str, bytes] = {}
        for op, path, data in ops:
            found = store.get(path, max_bytes=100)
            assert (None if found is None else found[0]) == model.get(path)
            etag = None if found is None else found[1].etag
            if op == "new":
                refused = path in model
                outcome = _attempt(lambda: store.put_new(path, data))  # noqa: B023
            elif op == "swap":
                refused = False
                outcome = _attempt(lambda: store.put_swap(path, data, etag=etag))  # noqa: B023
            elif op == "swap-stale":
                refused = True
                stale = None if etag is not None else '"stale"'
                outcome = _attempt(lambda: store.put_swap(path, data, etag=stale))  # noqa: B023
            else:
                continue
            assert isinstance(outcome, PreconditionFailed) == refused
            if not refused:
                model[path] = data
        assert list(store.list_paths("")) == sorted(model)
        assert list(store.list_paths("audit/")) == sorted(
            p for p in model if p.startswith("audit/")
        )


@settings(max_examples=40, deadline=None)
@given(stale=st.lists(st.booleans(), max_size=12))
def test_a_sequence_of_chain_appends_keeps_exactly_the_ones_made_from_the_current_head(
    stale: list[bool], tmp_path_factory: pytest.TempPathFactory
) -> None:
    # Each append is made from the head as it is (True: from the head as it was before
    # the last append, or a made-up one): only the current head's appends land.
    for store in (FolderStore(tmp_path_factory.mktemp("store")), MemoryStore()):
        kept: list[bytes] = []
        previous: str | None = '"made-up"'
        for by, old in enumerate(stale):
            position, etag = _head_now(store)
            used = previous if old else etag
            link, head = _link(position + 1, by), _head(position + 1, by)
            with store.chain_turn(CHAIN) as turn:
                try:
                    turn.append(position + 1, link, head, etag=used)
                except PreconditionFailed as refused:
                    outcome: object = refused
                else:
                    outcome = None
            assert isinstance(outcome, PreconditionFailed) == (used != etag)
            if used == etag:
                kept.append(link)
                previous = etag
        assert _chain_bytes(store) == b"".join(kept)
        assert _head_now(store)[0] == len(kept)


# -- open_store, the layout, run ids -------------------------------------------------------


def test_open_store_turns_a_store_value_into_a_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = MemoryStore()
    assert open_store(memory) is memory
    assert open_store(tmp_path) == FolderStore(tmp_path)
    assert open_store(str(tmp_path)) == FolderStore(tmp_path)
    urls: list[str | Path] = ["s3://bucket/team/evidence", Path("s3://bucket/team/evidence")]
    for url in urls:
        remote = open_store(url)
        assert isinstance(remote, ObjectStore)
        assert remote.url == "s3://bucket/team/evidence"
    monkeypatch.setenv("AGC_HOME", str(tmp_path / "home"))
    assert open_store(None) == FolderStore(tmp_path / "home")
    monkeypatch.setenv("AGC_HOME", "s3://bucket")
    assert isinstance(open_store(None), ObjectStore)
    with pytest.raises(UsageError):
        open_store("s3://Not_A_Bucket/x")


def test_the_folder_layout_is_the_store_layout_under_a_folder(tmp_path: Path) -> None:
    layout = StoreLayout(tmp_path)
    for kind in ("transcript", "tool-events"):
        assert layout.artifact_path("r1", kind) == tmp_path / artifact_path("r1", kind)
    assert layout.manifest_path("r1") == tmp_path / manifest_path("r1")
    assert artifact_path("r1", "transcript") == "audit/transcripts/r1.jsonl"
    assert manifest_path("r1") == "audit/manifests/r1.json"


def test_a_run_id_is_checked_once_and_stays_a_string() -> None:
    run_id = RunId("run-1.a_b")
    assert isinstance(run_id, str)
    assert run_id == "run-1.a_b"
    assert validate_run_id(run_id) is run_id
    assert RunId(run_id) is run_id
    assert hash(run_id) == hash("run-1.a_b")
    assert "run-1.a_b" in {run_id}
    # A plain str is checked and given back as it is: reports carry the caller's text.
    assert type(validate_run_id("plain")) is str


@pytest.mark.parametrize("bad", ["", ".", "..", "a/b", "a\\b", "a b", "x" * 129])
def test_a_run_id_outside_the_allow_list_is_never_made(bad: str) -> None:
    with pytest.raises(RunIdInvalidError):
        RunId(bad)
    with pytest.raises(RunIdInvalidError):
        artifact_path(bad, "transcript")
    assert not is_run_id(bad)  # a name read from a store: skipped, never raised


@pytest.mark.parametrize("good", ["r1", "run-1.a_b", "x" * 128, RunId("r2")])
def test_a_run_id_is_one_to_the_predicate_as_to_the_check(good: str) -> None:
    assert is_run_id(good)
    assert validate_run_id(good) == good


# -- helpers ------------------------------------------------------------------------------


def _attempt(action: Callable[[], object]) -> object:
    try:
        return action()
    except PreconditionFailed as exc:
        return exc


def _race(count: int, action: Callable[[int], object]) -> dict[int, object]:
    """Run ``action(i)`` for i < count in threads released together; each one's result
    (``None`` for a ``put_new``) or the PreconditionFailed it raised."""
    barrier = threading.Barrier(count)
    outcomes: dict[int, object] = {}

    def run(i: int) -> None:
        barrier.wait()
        try:
            result = action(i)
            outcomes[i] = None if isinstance(result, ObjectInfo) else result
        except PreconditionFailed as exc:
            outcomes[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return outcomes
