"""One reader and one judge for every store: a run's evidence, damaged in the same way,
gets the same findings from a folder store and from an in-memory bucket
(``agc._core.memstore``), apart from what only a versioned store shows (an object's newer
versions and delete markers).

The one reader observes each store through the store interface and hands what it saw
to the one pure judgement (``agc.integrity._judge.judge_run``); this holds every store
to it for every class of damage an attacker with write access to the store can do to a
sealed run.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, get_args

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agc._core.folderstore import FolderStore
from agc._core.memstore import MemoryStore
from agc._core.storage import BucketLock
from agc.integrity import RunReport, check_object_run, check_run, check_run_kept
from agc.integrity._version_findings import ObjectStoreFindingCode
from tests.conftest import write_run

REACHES_INSIDE = {
    "agc.integrity._version_findings": "the versioned-store-only finding codes, left out",
}

_OBJECT_ONLY = frozenset(get_args(ObjectStoreFindingCode))
_EVIDENCE = ("audit/transcripts/", "audit/tool-events/", "audit/manifests/")

# A damage: how the bytes of one file change (None: the file is deleted).
_Damage = Callable[[bytes, int], bytes | None]
_DAMAGES: dict[str, _Damage] = {
    "flip a byte": lambda data, at: (
        data[: at % len(data)] + bytes([data[at % len(data)] ^ 0x20]) + data[at % len(data) + 1 :]
    ),
    "truncate": lambda data, at: data[: at % len(data)],
    "extend": lambda data, at: data + b'{"injected":%d}\n' % at,
    "tear the tail": lambda data, at: data + b'{"torn":' + str(at).encode(),
    "empty": lambda data, at: b"",
    "delete": lambda data, at: None,
}
_TARGETS = (
    "audit/transcripts/r1.jsonl",
    "audit/transcripts/r1.jsonl.b3",
    "audit/tool-events/r1.jsonl",
    "audit/tool-events/r1.jsonl.b3",
    "audit/manifests/r1.json",
)


def _upload(folder: Path) -> MemoryStore:
    """The run's evidence files, written to a new in-memory bucket (Object Lock on)."""
    store = MemoryStore(prefix="team/evidence", lock=BucketLock(enabled=True))
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder).as_posix()
        if path.is_file() and relative.startswith(_EVIDENCE) and not path.name.startswith("."):
            store.put_new(relative, path.read_bytes())
    return store


def _damage(folder: Path, store: MemoryStore, target: str, change: _Damage, at: int) -> None:
    """The same change to the file in the folder and (a new version) in the bucket."""
    new = change((folder / target).read_bytes(), at)
    if new is None:
        (folder / target).unlink()
        store.delete(target)
    else:
        (folder / target).write_bytes(new)
        store.overwrite(target, new)


def _judged(report: RunReport) -> list[tuple[Any, ...]]:
    """A report's findings as the judge gave them, object-only ones apart."""
    return [
        (f.code, f.artifact, f.severity, f.expected, f.actual, f.lines)
        for f in report.findings
        if f.code not in _OBJECT_ONLY
    ]


def _both(folder: Path, store: MemoryStore) -> tuple[RunReport, RunReport]:
    on_folder = check_object_run(FolderStore(folder), "r1", chain=False)
    on_memory = check_object_run(store, "r1", chain=False)
    return on_folder, on_memory


def test_an_intact_run_is_complete_on_both_stores(tmp_path: Path) -> None:
    write_run(tmp_path / "store")
    on_folder, on_memory = _both(tmp_path / "store", _upload(tmp_path / "store"))
    assert on_folder.complete
    assert on_memory.complete
    assert on_memory.findings == on_folder.findings == ()
    assert [a.digest for a in on_memory.artifacts] == [a.digest for a in on_folder.artifacts]
    assert on_memory.store == "memory://memory/team/evidence"


@settings(max_examples=60, deadline=None)
@given(
    damage=st.sampled_from(sorted(_DAMAGES)),
    target=st.sampled_from(_TARGETS),
    at=st.integers(min_value=0, max_value=10_000),
)
def test_every_damage_is_judged_the_same_on_both_stores(
    damage: str, target: str, at: int, tmp_path_factory: pytest.TempPathFactory
) -> None:
    folder = tmp_path_factory.mktemp("store")
    write_run(folder)
    store = _upload(folder)
    _damage(folder, store, target, _DAMAGES[damage], at)
    on_folder, on_memory = _both(folder, store)
    assert _judged(on_memory) == _judged(on_folder)
    # Every change to sealed evidence is found by the judge itself, not only by the
    # bucket's record of a new version (a renamed manifest member once went unseen).
    assert not on_folder.complete
    assert {f.code for f in on_memory.errors if f.code not in _OBJECT_ONLY}
    assert on_memory.signature == on_folder.signature
    assert on_memory.manifest == on_folder.manifest
    # The bucket keeps what was replaced: the change itself is a finding there.
    assert {f.code for f in on_memory.findings} & _OBJECT_ONLY


def test_check_run_and_its_kept_copy_take_any_store_as_their_store(tmp_path: Path) -> None:
    write_run(tmp_path / "store")
    store = _upload(tmp_path / "store")
    report = check_run("r1", store)
    assert report.store == store.url
    assert report.findings == check_object_run(store, "r1").findings
    kept_report, kept = check_run_kept("r1", store)
    with kept:
        assert kept_report.findings == report.findings
        assert kept.read
        sealed = (tmp_path / "store/audit/transcripts/r1.jsonl").read_bytes()
        assert kept.file.read() == sealed
