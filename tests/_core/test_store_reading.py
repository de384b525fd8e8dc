"""What the run reader asks of every store: an object streamed for a reader that hashes
it itself, what stands at a path that is not an object, whether the store is there at
all, and whether its objects can be locked. Each store answers in its own terms; a
feature never asks for the store's type.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agc._core import folderstore as folderstore_module
from agc._core.folderstore import FolderStore
from agc._core.storage import Store
from agc.errors import StoreError
from tests._core import test_store_contract as contract

PATH = "audit/transcripts/r1.jsonl"
store = contract.store  # one store of each kind, empty: the contract's own fixture


def _streamed(store: Store, path: str) -> bytes | None:
    with store.stream(path) as found:
        if found is None:
            return None
        chunks, info = found
        data = b"".join(chunks)
        assert info.size == len(data)
        return data


@pytest.mark.parametrize("size", [0, 1, 1 << 20, (1 << 20) + 3])
def test_stream_gives_the_bytes_open_gives(store: Store, size: int) -> None:
    body = bytes(range(256)) * (size // 256) + b"x" * (size % 256)
    store.put_new(PATH, body)
    with store.open(PATH) as found:
        assert found is not None
        assert b"".join(found[0]) == body
    assert _streamed(store, PATH) == body
    assert _streamed(store, "audit/transcripts/r2.jsonl") is None


def test_an_object_or_nothing_is_no_odd_entry_in_any_store(store: Store) -> None:
    store.put_new(PATH, b"{}\n")
    assert store.odd_entry(PATH) is None
    assert store.odd_entry("audit/transcripts/r2.jsonl") is None


def test_a_store_is_there_once_it_holds_an_object(store: Store) -> None:
    store.put_new(PATH, b"{}\n")
    assert store.exists_at_all()


def test_only_a_store_written_object_by_object_can_lock_its_objects(store: Store) -> None:
    assert store.lockable is (store.folder is None)


def test_a_folder_names_a_symlink_a_folder_and_a_fifo_where_a_file_should_be(
    tmp_path: Path,
) -> None:
    store = FolderStore(tmp_path)
    folder = tmp_path / "audit/transcripts"
    folder.mkdir(parents=True)
    (tmp_path / "elsewhere.jsonl").write_bytes(b"{}\n")
    (folder / "link.jsonl").symlink_to(tmp_path / "elsewhere.jsonl")
    (folder / "dir.jsonl").mkdir()
    os.mkfifo(folder / "fifo.jsonl")
    assert store.odd_entry("audit/transcripts/link.jsonl") == "symlink"
    assert store.odd_entry("audit/transcripts/dir.jsonl") == "other"
    assert store.odd_entry("audit/transcripts/fifo.jsonl") == "other"


def test_a_folder_store_that_does_not_exist_is_not_there_and_a_file_is_an_error(
    tmp_path: Path,
) -> None:
    assert not FolderStore(tmp_path / "nowhere").exists_at_all()
    (tmp_path / "file").write_bytes(b"")
    with pytest.raises(StoreError, match="is not a folder"):
        FolderStore(tmp_path / "file").exists_at_all()


@settings(max_examples=25, deadline=None)
@given(body=st.binary(max_size=200), more=st.binary(min_size=1, max_size=50))
def test_a_folder_streams_the_length_it_had_when_opened(
    tmp_path_factory: pytest.TempPathFactory, body: bytes, more: bytes
) -> None:
    """A writer appending while the file is read is not followed: the bytes read are
    exactly the file's first ``size`` bytes, ``size`` as the stream reported it."""
    store = FolderStore(tmp_path_factory.mktemp("store"))
    store.put_new(PATH, body)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(folderstore_module, "_CHUNK", 7)
        with store.stream(PATH) as found:
            assert found is not None
            chunks, info = found
            with store.file(PATH).open("ab") as handle:
                handle.write(more)
            assert b"".join(chunks) == body
            assert info.size == len(body)
