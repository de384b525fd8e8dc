"""Tests for agc.integrity._manifest (pure) and agc.integrity._store_io (its on-disk I/O)."""

from __future__ import annotations

import hashlib
import json
import pickle
import re
from pathlib import Path
from typing import Any

import pytest
import rfc8785
from hypothesis import given
from hypothesis import strategies as st

from agc._core.store import StoreLayout
from agc.errors import ManifestInvalidError, StoreError, UnsafePathError
from agc.integrity import ArtifactSeal, RunManifest, read_manifest
from agc.integrity._manifest import MANIFEST_SCHEMA_VERSION
from agc.integrity._store_io import record_seal

REACHES_INSIDE = {
    "agc.integrity._manifest": "the manifest schema version the writer stamps",
    "agc.integrity._store_io": "records seals into a manifest directly (record_seal)",
}

HEX = "ab" * 32


def _seal(kind: Any = "transcript", **changes: Any) -> ArtifactSeal:
    fields: dict[str, Any] = {
        "kind": kind,
        "file": "r1.jsonl",
        "algorithm": "blake3",
        "digest": HEX,
        "bytes": 10,
        "records": 2,
        "last_seq": 1,
        "sealed_at_ms": 1_000,
    }
    fields.update(changes)
    return ArtifactSeal(**fields)


def _closed_manifest() -> RunManifest:
    return (
        RunManifest(run_id="r1")
        .with_seal(_seal())
        .with_seal(_seal("tool-events", records=0, last_seq=None, bytes=0))
    )


def test_round_trip_and_closed_flag() -> None:
    half = RunManifest(run_id="r1").with_seal(_seal())
    assert not half.closed
    manifest = _closed_manifest()
    assert manifest.closed
    assert RunManifest.from_bytes(manifest.to_bytes(), expected_run_id="r1") == manifest
    data = json.loads(manifest.to_bytes())
    assert data["schema_version"] == MANIFEST_SCHEMA_VERSION == 1
    assert data["closed"] is True
    assert data["artifacts"]["transcript"] == {
        "file": "r1.jsonl",
        "algorithm": "blake3",
        "digest": HEX,
        "bytes": 10,
        "records": 2,
        "last_seq": 1,
        "sealed_at_ms": 1_000,
        "closed": True,
        "segments": [],
        "recovered": False,
    }


def test_an_artifact_is_sealed_only_once() -> None:
    with pytest.raises(ManifestInvalidError, match="already sealed"):
        _closed_manifest().with_seal(_seal())


_SEGMENT = {"records": 1, "bytes": 5, "digest": HEX, "sealed_at_ms": 1}


def _edit(change: Any) -> bytes:
    data = json.loads(_closed_manifest().to_bytes())
    change(data)
    return json.dumps(data).encode()


def _set(path: tuple[str, ...], value: Any) -> Any:
    def change(data: dict[str, Any]) -> None:
        target = data
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return change


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        pytest.param(b"{", "not valid JSON", id="not-json"),
        pytest.param(b"\xff", "not valid JSON", id="not-utf8"),
        pytest.param(b"[]", "not a JSON object", id="array"),
        pytest.param(_edit(_set(("schema_version",), 2)), "schema_version", id="schema-2"),
        pytest.param(_edit(_set(("run_id",), 7)), "run_id", id="run-id-not-str"),
        pytest.param(_edit(_set(("run_id",), "r2")), "belongs to run 'r2'", id="other-run"),
        pytest.param(_edit(_set(("run_id",), "../r1")), "run id", id="bad-run-id"),
        pytest.param(_edit(_set(("artifacts",), [])), "artifacts", id="artifacts-not-object"),
        pytest.param(_edit(_set(("artifacts", "extra"), {})), "unknown", id="unknown-artifact"),
        pytest.param(_edit(_set(("closed",), False)), "closed", id="closed-disagrees"),
        pytest.param(
            _edit(_set(("artifacts", "transcript", "algorithm"), "md5")), "algorithm", id="algo"
        ),
        pytest.param(_edit(_set(("artifacts", "transcript", "bytes"), -1)), "bytes", id="bytes"),
        pytest.param(
            _edit(_set(("artifacts", "transcript", "records"), True)), "records", id="records-bool"
        ),
        pytest.param(
            _edit(_set(("artifacts", "transcript", "last_seq"), "1")), "last_seq", id="last-seq"
        ),
        pytest.param(_edit(_set(("artifacts", "transcript", "digest"), "")), "digest", id="dig"),
        pytest.param(
            _edit(_set(("artifacts", "transcript", "closed"), False)),
            "bad 'closed'",
            id="entry-open",
        ),
        pytest.param(_edit(_set(("artifacts", "transcript"), 3)), "not an object", id="entry"),
        pytest.param(
            _edit(_set(("artifacts", "transcript", "file"), "r2.jsonl")),
            "names the file 'r2.jsonl'",
            id="file-of-another-run",
        ),
        pytest.param(
            _edit(_set(("artifacts", "tool-events", "file"), "../r1.jsonl")),
            "names the file '../r1.jsonl'",
            id="file-with-a-path",
        ),
        # Values RFC 8785 cannot canonicalize (no chain digest, no signature check):
        pytest.param(
            _edit(_set(("artifacts", "transcript", "sealed_at_ms"), 2**64)),
            "RFC 8785",
            id="int-beyond-2^53",
        ),
        pytest.param(
            _edit(_set(("artifacts", "transcript", "segments"), [_SEGMENT | {"x": 2**60}])),
            "RFC 8785",
            id="big-int-in-segment",
        ),
        pytest.param(
            _edit(_set(("signature",), {"algorithm": "ed25519", "n": 2**64})),
            "RFC 8785",
            id="big-int-in-signature",
        ),
        pytest.param(
            _edit(_set(("artifacts", "transcript", "segments"), [_SEGMENT | {"x": 1.0}])).replace(
                b"1.0", b"NaN"
            ),
            "NaN is not valid JSON",  # refused by the strict reader, before RFC 8785
            id="nan-in-segment",
        ),
    ],
)
def test_damaged_manifest_is_rejected(data: bytes, problem: str) -> None:
    with pytest.raises(ManifestInvalidError, match=problem):
        RunManifest.from_bytes(data, expected_run_id="r1")


_LINK_VALUES = st.one_of(
    st.none(),
    st.integers(min_value=-2, max_value=2**40),
    st.booleans(),
    st.text(alphabet="0123456789abcdefABCDEF", min_size=62, max_size=66),
    st.sampled_from(["", HEX, HEX.upper(), "ff" * 32]),
)


@given(
    link=st.dictionaries(
        st.sampled_from(["position", "prev", "Prev", "pRev", "Position", "next", "run_id"]),
        _LINK_VALUES,
        max_size=4,
    )
)
def test_a_chain_link_is_read_only_when_it_is_exactly_position_and_prev(
    link: dict[str, Any],
) -> None:
    # A renamed or missing member must never be read as a default (a missing "prev" as
    # null): an edit of a manifest's link is an invalid manifest, whatever it names.
    data = _edit(_set(("chain",), link))
    position, prev = link.get("position"), link.get("prev")
    exact = (
        set(link) == {"position", "prev"}
        and type(position) is int
        and position >= 1
        and (prev is None or (isinstance(prev, str) and re.fullmatch("[0-9a-f]{64}", prev)))
    )
    if exact:
        assert RunManifest.from_bytes(data, expected_run_id="r1").chain == link
    else:
        with pytest.raises(ManifestInvalidError, match="bad chain link"):
            RunManifest.from_bytes(data, expected_run_id="r1")


def test_record_seal_writes_and_read_manifest_reads(store: Path) -> None:
    layout = StoreLayout(store)
    assert read_manifest(layout, "r1") is None
    record_seal(layout, "r1", _seal())
    updated = record_seal(layout, "r1", _seal("tool-events"))
    assert updated.closed
    assert read_manifest(layout, "r1") == updated
    with pytest.raises(ManifestInvalidError, match="already sealed"):
        record_seal(layout, "r1", _seal())
    assert read_manifest(layout, "r1") == updated


def test_an_oversized_manifest_is_damaged_not_unreadable(store: Path) -> None:
    """Padding a manifest past 1 MiB made agc-verify exit 3 ("store unreadable") and
    abort --all for every run, instead of naming the damage (manifest-invalid)."""
    layout = StoreLayout(store)
    record_seal(layout, "r1", _seal())
    path = layout.manifest_path("r1")
    path.write_bytes(path.read_bytes() + b" " * (2 * 1024 * 1024))
    with pytest.raises(ManifestInvalidError, match="larger than"):
        read_manifest(layout, "r1")


def test_read_manifest_refuses_a_symlink(store: Path, tmp_path: Path) -> None:
    layout = StoreLayout(store)
    target = tmp_path / "elsewhere.json"
    target.write_bytes(_closed_manifest().to_bytes())
    layout.manifests_dir.mkdir(parents=True)
    layout.manifest_path("r1").symlink_to(target)
    with pytest.raises(UnsafePathError):
        read_manifest(layout, "r1")


def test_read_manifest_in_a_store_under_a_file_is_a_store_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(StoreError, match="cannot read"):
        read_manifest(StoreLayout(blocker / "store"), "r1")


def test_the_cached_digest_is_rfc8785_of_the_stored_document_and_survives_pickling() -> None:
    stored = _closed_manifest().to_bytes()
    manifest = RunManifest.from_bytes(stored)
    expected = hashlib.sha256(rfc8785.dumps(json.loads(stored))).hexdigest()
    assert manifest.digest == expected
    # A worker of `agc-verify --all --jobs N` computes it; the parent reads it back.
    copy = pickle.loads(pickle.dumps(manifest))
    assert copy.__dict__.get("digest") == expected
    assert copy == manifest
