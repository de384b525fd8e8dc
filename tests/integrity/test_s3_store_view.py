"""The ``--all`` view of an object store: the per-run slice of one listing.

``StoreView.run_versions`` answers from an index of the listing made once; these tests
hold it to the plain definition (scan the whole listing for the run's keys) on listings
built to confuse it: run ids that contain ``.jsonl``, ``.b3`` or ``.quarantine``, keys
that are companions of one run and the artifact of another, stray suffixes.
"""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from agc._core.digest import SIDECAR_SUFFIXES
from agc._core.objstore import BucketLock, ObjectStore, ObjectVersion
from agc._core.store import ARTIFACT_KINDS
from agc.integrity._chain_objects import artifact_path, manifest_path
from agc.integrity._run_reader import VerifyPolicy, _companion
from agc.integrity._store_view import StoreView
from tests.conftest import examples

REACHES_INSIDE = {
    "agc.integrity._chain_objects": "the object keys of a run's files",
    "agc.integrity._run_reader": "the verify policy and the companion-object rule",
    "agc.integrity._store_view": "the store view's indexed listing, against a reference scan",
}

_STORE = ObjectStore.parse("s3://evidence-view/team")
_POLICY = VerifyPolicy(retention=None, asked=False, lock=BucketLock(enabled=True))

_PIECES = ("run", "a", ".jsonl", ".b3", ".sha256", ".quarantine", "-1", "-12", ".", "_", "7")
_run_ids = (
    st.lists(st.sampled_from(_PIECES), min_size=1, max_size=5)
    .map("".join)
    .filter(lambda r: r not in {".", ".."})
)
_TAILS = (
    "",
    *SIDECAR_SUFFIXES.values(),
    ".quarantine",
    ".quarantine-3",
    ".quarantine-10",
    ".quarantine-",
    ".quarantine-x",
    ".quarantine.b3",
    ".b3.b3",
    ".sha256.quarantine-2",
    ".tmp",
)


def _reference(view: StoreView, run_id: str) -> list[ObjectVersion]:
    """The definition: the manifest, then per artifact every listed key that is the
    artifact or one of its companions, in listing order."""
    paths = [manifest_path(run_id)]
    for kind in ARTIFACT_KINDS:
        base = artifact_path(run_id, kind)
        paths.extend(p for p in view.versions if p == base or _companion(p, base))
    return [v for p in paths for v in view.versions.get(p, ())]


def _listing(paths: Sequence[str]) -> list[ObjectVersion]:
    versions = []
    for number, path in enumerate(paths):
        key = _STORE.key(path)
        versions.append(ObjectVersion(key, f"v{number}", True, False, number))
        if number % 3 == 0:  # a key with an older version, and one deleted
            versions.append(ObjectVersion(key, f"old{number}", False, False, 0))
        if number % 5 == 0:
            versions.append(ObjectVersion(key, f"dm{number}", False, True, 0))
    return versions


@settings(max_examples=examples(300), deadline=None)
@given(
    run_ids=st.lists(_run_ids, min_size=1, max_size=6, unique=True),
    picks=st.lists(
        st.tuples(
            st.integers(0, 5),
            st.sampled_from((*ARTIFACT_KINDS, "manifest", "chain")),
            st.sampled_from(_TAILS),
        ),
        max_size=40,
    ),
    asked=st.lists(_run_ids, max_size=4),
)
def test_run_versions_is_the_scan_of_the_listing(
    run_ids: list[str], picks: list[tuple[int, str, str]], asked: list[str]
) -> None:
    paths: list[str] = []
    for index, kind, tail in picks:
        run_id = run_ids[index % len(run_ids)]
        if kind == "manifest":
            paths.append(manifest_path(run_id) + tail)
        elif kind == "chain":
            paths.append(f"audit/chain/{index:020d}.json{tail}")
        else:
            paths.append(artifact_path(run_id, kind) + tail)  # type: ignore[arg-type]
    view = StoreView(_STORE, _POLICY, _listing(paths))
    for run_id in [*run_ids, *asked]:
        assert view.run_versions(run_id) == _reference(view, run_id)


def test_run_versions_takes_sidecars_and_quarantine_files_and_nothing_else() -> None:
    base = artifact_path("r1", "transcript")
    paths = [
        base,
        base + ".b3",
        base + ".sha256",
        base + ".quarantine",
        base + ".quarantine-2",
        base + ".quarantine-x",  # not a quarantine name
        base + ".tmp",
        artifact_path("r1.jsonl", "transcript"),  # another run's artifact
        manifest_path("r1"),
        artifact_path("r1", "tool-events") + ".b3",
    ]
    view = StoreView(_STORE, _POLICY, _listing(paths))
    got = [_STORE.relative(v.key) for v in view.run_versions("r1")]
    assert sorted(set(got)) == sorted(
        [
            manifest_path("r1"),
            base,
            base + ".b3",
            base + ".sha256",
            base + ".quarantine",
            base + ".quarantine-2",
            artifact_path("r1", "tool-events") + ".b3",
        ]
    )
