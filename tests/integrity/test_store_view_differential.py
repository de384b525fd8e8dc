"""``agc-verify --all`` on a store written object by object answers exactly as the plain
scan of the listing per run did, under each kind of tampering: the index behind
``StoreView.run_versions`` is held to the scan end to end, on a store whose prefix is a
prefix of another store's, with run ids that are prefixes of each other.

The store is the in-memory bucket: S3's own listing (versions, delete markers, key
order) is held to the same answers as the in-memory bucket's by the store contract
(tests/_core/test_store_contract.py), so the index and the commands are tested here
without a server."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agc._core.memstore import MemoryStore
from agc._core.objstore import BucketLock, ObjectStore, ObjectVersion
from agc._core.store import ARTIFACT_KINDS
from agc.cli.verify_main import main as verify_main
from agc.integrity import ingest_stream
from agc.integrity._chain_objects import artifact_path, manifest_path
from agc.integrity._run_reader import VerifyPolicy, _companion
from agc.integrity._store_view import StoreView
from tests.conftest import THOROUGH, NewBucket, examples

REACHES_INSIDE = {
    "agc.integrity._chain_objects": "the object keys of a run's files",
    "agc.integrity._run_reader": "the verify policy and the companion-object rule",
    "agc.integrity._store_view": "the store view's indexed listing, against a full scan",
}

_TRANSCRIPT = b'{"type":"thread.started"}\n{"type":"item.completed","text":"done"}\n'
_POLICY = VerifyPolicy(retention=None, asked=False, lock=BucketLock(enabled=True))
_RUNS = ("r1", "r10", "r1.x", "r1.jsonl")


def _scan(view: StoreView, run_id: str) -> list[ObjectVersion]:
    """The run's versions as the scan before the index found them."""
    paths = [manifest_path(run_id)]
    for kind in ARTIFACT_KINDS:
        base = artifact_path(run_id, kind)
        paths.extend(p for p in view.versions if p == base or _companion(p, base))
    return [v for p in paths for v in view.versions.get(p, ())]


def _asked(tampering: str) -> tuple[str, ...]:
    """The runs verified one by one after ``tampering``: every run in the thorough
    profile; by default "r1" (whose prefix every other run id starts with, and the run
    most tamperings change) and one more, another for each tampering in turn, so every
    run id is still asked alone under several tamperings."""
    if THOROUGH:
        return _RUNS
    others = _RUNS[1:]
    return ("r1", others[sorted(_TAMPERINGS).index(tampering) % len(others)])


def _answers(
    url: str, asked: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> list[tuple[int, object]]:
    out = []
    for argv in (["--all"], *([r] for r in asked)):
        code = verify_main([*argv, "--store", url, "--json"])
        out.append((code, json.loads(capsys.readouterr().out)))
    return out


_T = artifact_path("r1", "transcript")
_TAMPERINGS: dict[str, Callable[[MemoryStore], object]] = {
    "none": lambda s: None,
    "deleted": lambda s: s.delete_versions(_T),
    "delete-marker": lambda s: s.delete(_T),
    "newer-version": lambda s: s.overwrite(_T, _TRANSCRIPT),
    "overwritten-sidecar": lambda s: s.overwrite(_T + ".b3", b"0" * 64 + b"\n"),
    "extra-quarantine": lambda s: s.overwrite(_T + ".quarantine-7", b"x\n"),
    "extra-artifact-like": lambda s: s.overwrite(
        artifact_path("r1.x", "transcript") + ".sha256", b"x\n"
    ),
    "extra-unknown": lambda s: s.overwrite("audit/transcripts/r1.jsonl.tmp", b"x\n"),
    "manifest-deleted": lambda s: s.delete_versions(manifest_path("r10")),
    "manifest-marker": lambda s: s.delete(manifest_path("r1")),
    "head-marker": lambda s: s.delete("audit/chain-head.json"),
}


@pytest.mark.parametrize("tampering", sorted(_TAMPERINGS))
def test_all_and_single_run_findings_are_those_of_the_scan(
    named_buckets: NewBucket,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tampering: str,
) -> None:
    store = named_buckets("evidence", prefix="store", object_lock=False)
    other = replace(store, prefix="store2")  # the same bucket; its keys share "store"
    for run_id in _RUNS:
        ingest_stream(io.BytesIO(_TRANSCRIPT), run_id, store=store)
    ingest_stream(io.BytesIO(_TRANSCRIPT), "r1", store=other)
    other.overwrite(_T + ".quarantine", b"x\n")
    _TAMPERINGS[tampering](store)
    asked = _asked(tampering)
    indexed = _answers(store.url, asked, capsys)
    monkeypatch.setattr(StoreView, "run_versions", _scan)
    assert _answers(store.url, asked, capsys) == indexed


_ODD = st.lists(
    st.sampled_from(
        [*"r1.-_/x7", "\n", "\u0661", "\u00e9", " ", ".quarantine", ".b3", ".sha256", ".jsonl"]
    ),
    max_size=8,
).map("".join)


@settings(max_examples=examples(300), deadline=None)
@given(
    keys=st.lists(
        st.tuples(st.sampled_from(("r1", "r10", "r1.x", "r-1")), _ODD, st.booleans()),
        max_size=30,
    ),
    asked=st.lists(st.sampled_from(("r1", "r10", "r1.x", "r-1", "r")), max_size=5),
)
def test_the_index_is_the_scan_for_keys_with_any_characters(
    keys: list[tuple[str, str, bool]], asked: list[str]
) -> None:
    # Unicode digits after ".quarantine-", line breaks and spaces in keys, keys of other
    # stores whose prefix starts with this one's, keys directly under the store prefix,
    # keys that are no path of a store ('…//…', '/./'): a listing shows keys as they are.
    store = ObjectStore.parse("s3://bkt/store")
    listing = []
    for number, (run_id, tail, manifest) in enumerate(keys):
        path = (manifest_path(run_id) if manifest else artifact_path(run_id, "transcript")) + tail
        for key in ("store/" + path, "store2/" + path, "store/" + (tail or "x")):
            listing.append(ObjectVersion(key, f"v{number}", True, number % 4 == 0, number))
            listing.append(ObjectVersion(key, f"o{number}", False, False, 0))
    view = StoreView(store, _POLICY, listing)
    for run_id in asked:
        assert view.run_versions(run_id) == _scan(view, run_id)
