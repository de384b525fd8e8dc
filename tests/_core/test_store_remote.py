"""remote_store() imports the object-store module only when a store can name one:
whenever the cheap test says a value cannot, object_store_of() agrees (None, no error)."""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agc._core.objstore import ObjectStore, object_store_of
from agc._core.store import may_name_object_store, remote_store
from agc.errors import AgcError

_TEXT = st.text(max_size=40) | st.sampled_from(["s3:", "s3:/", "s3://", "S3://", "s3//"]).flatmap(
    lambda head: st.text(max_size=20).map(lambda tail: head + tail)
)
_STORES = st.none() | _TEXT | _TEXT.map(PurePosixPath) | _TEXT.map(Path) | st.integers()


def _outcome(store: object) -> object:
    try:
        remote = object_store_of(store)
    except AgcError as exc:
        return type(exc)
    return None if remote is None else remote.url


@given(store=_STORES, home=st.none() | _TEXT)
def test_a_value_that_cannot_name_an_object_store_is_none_for_object_store_of(
    store: object, home: str | None
) -> None:
    saved = os.environ.get("AGC_HOME")
    if home is None or "\0" in home:
        os.environ.pop("AGC_HOME", None)
    else:
        os.environ["AGC_HOME"] = home
    try:
        if not may_name_object_store(store):
            assert _outcome(store) is None
        assert _outcome(store) == (_outcome(store) if may_name_object_store(store) else None)
    finally:
        if saved is None:
            os.environ.pop("AGC_HOME", None)
        else:
            os.environ["AGC_HOME"] = saved


@pytest.mark.parametrize("store", ["s3://bucket/prefix", Path("s3://bucket/prefix"), "s3://bucket"])
def test_remote_store_is_object_store_of(store: object) -> None:
    remote = remote_store(store)
    assert isinstance(remote, ObjectStore)
    expected = object_store_of(store)
    assert expected is not None
    assert remote.url == expected.url


def test_an_object_store_is_itself() -> None:
    store = ObjectStore.parse("s3://bucket/prefix")
    assert remote_store(store) is store
