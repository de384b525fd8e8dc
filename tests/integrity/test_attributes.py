"""Run attributes: caller facts in the manifest, fixed by the first seal, signed with it."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from agc._core.store import StoreLayout
from agc.errors import ManifestInvalidError, RecordInvalidError
from agc.integrity import (
    RunManifest,
    TranscriptWriter,
    check_run,
    generate_keypair,
    load_signing_key,
    load_trusted_keys,
    open_run,
    read_run_manifest,
)
from agc.integrity._manifest import MAX_ATTRIBUTES_BYTES, check_attributes

REACHES_INSIDE = {
    "agc.integrity._manifest": "the attribute checker and its size limit, on single values",
}

FACTS = {"readiness": {"level": "LIVE", "passed": True, "environment": "dev"}}


def _write(store: Path, run_id: str = "r1", **options: Any) -> None:
    with open_run(run_id, store=store, **options) as run:
        run.transcript.write({"type": "note", "text": "hello"})


def test_attributes_reach_the_manifest_and_the_run_verifies(store: Path) -> None:
    _write(store, attributes=FACTS)
    manifest = read_run_manifest("r1", store)
    assert manifest is not None
    assert manifest.attributes == FACTS
    assert json.loads(StoreLayout(store).manifest_path("r1").read_bytes())["attributes"] == FACTS
    assert check_run("r1", store).complete


def test_a_run_without_attributes_has_no_member(store: Path) -> None:
    _write(store)
    raw = json.loads(StoreLayout(store).manifest_path("r1").read_bytes())
    assert "attributes" not in raw
    manifest = read_run_manifest("r1", store)
    assert manifest is not None
    assert manifest.attributes is None


def test_the_signature_covers_the_attributes(store: Path, tmp_path: Path) -> None:
    private, public, _ = generate_keypair(tmp_path / "keys")
    _write(store, attributes=FACTS, signing_key=load_signing_key(private))
    trusted = load_trusted_keys([public])
    assert check_run("r1", store, trusted_keys=trusted, require_signature=True).complete
    path = StoreLayout(store).manifest_path("r1")
    raw = json.loads(path.read_bytes())
    raw["attributes"]["readiness"]["environment"] = "prod"  # reuse the verdict elsewhere
    path.write_text(json.dumps(raw, indent=2, sort_keys=True) + "\n")
    report = check_run("r1", store, trusted_keys=trusted, require_signature=True)
    assert not report.complete
    assert "bad-signature" in {finding.code for finding in report.findings}


def test_reopening_keeps_the_attributes(store: Path) -> None:
    _write(store, attributes=FACTS)
    with TranscriptWriter("r1", store=store, reopen=True) as writer:
        writer.write({"type": "note", "text": "more"})
    manifest = read_run_manifest("r1", store)
    assert manifest is not None
    assert manifest.attributes == FACTS


def test_other_attributes_for_a_sealed_run_are_refused(store: Path) -> None:
    _write(store, attributes=FACTS)
    writer = TranscriptWriter("r1", store=store, reopen=True, attributes={"other": 1})
    writer.write({"type": "note", "text": "more"})
    with pytest.raises(ManifestInvalidError, match="already has other attributes"):
        writer.close()
    manifest = read_run_manifest("r1", store)
    assert manifest is not None
    assert manifest.attributes == FACTS


@pytest.mark.parametrize(
    ("attributes", "problem"),
    [
        ({"x": math.nan}, "not JSON"),
        ({"x": 2**60}, "2\\*\\*53"),
        ({"x": {1, 2}}, "not JSON"),
        ({"x": "\ud800"}, "not JSON"),
        ({1: "x"}, "string keys"),
        ({"x": "a" * MAX_ATTRIBUTES_BYTES}, "larger than"),
        (["not", "an", "object"], "JSON object"),
    ],
)
def test_bad_attributes_are_refused_before_the_disk_is_touched(
    store: Path, attributes: Any, problem: str
) -> None:
    with pytest.raises(RecordInvalidError, match=problem):
        open_run("r1", store=store, attributes=attributes)
    assert not any(store.rglob("*.jsonl"))


def test_check_attributes_returns_a_detached_copy() -> None:
    source: dict[str, Any] = {"a": {"b": [1, 2]}}
    copy = check_attributes(source)
    source["a"]["b"].append(3)
    assert copy == {"a": {"b": [1, 2]}}


def test_a_manifest_with_non_object_attributes_is_invalid(store: Path) -> None:
    _write(store)
    path = StoreLayout(store).manifest_path("r1")
    raw = json.loads(path.read_bytes())
    raw["attributes"] = ["x"]
    with pytest.raises(ManifestInvalidError, match="attributes"):
        RunManifest.from_bytes(json.dumps(raw).encode(), expected_run_id="r1")
