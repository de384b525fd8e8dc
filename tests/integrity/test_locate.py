"""Where a change is: a ``modified`` finding names the first changed range of lines.

The seal keeps the prefix digests the writer's checkpoints computed (and a re-opened
file's earlier segments); when the whole digest differs, the verifier finds the first
prefix that no longer matches, and the finding carries ``lines: (first, last)``.
"""

from __future__ import annotations

import io
import itertools
import json
import shutil
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agc._core import folderstore as folderstore_module
from agc._core.checkpoint import (
    MAX_SEALED_CHECKPOINTS,
    Checkpoint,
    check_prefix_read,
    chunk_reader,
)
from agc._core.digest import digest_bytes
from agc._core.memstore import MemoryStore
from agc.cli.verify import main as verify_cli
from agc.errors import ManifestInvalidError
from agc.integrity import (
    RunManifest,
    ToolEventWriter,
    TranscriptWriter,
    check_run,
    check_store,
    ingest_stream,
)
from tests.conftest import examples, steady_checkpoint_timer
from tests.integrity.evidence_helpers import fixed_clock, records, transcript_path
from tests.integrity.test_expect_head_attacks import relink

RUN = "loc"


def _write(
    store: Path,
    run_id: str = RUN,
    *,
    count: int = 300,
    every: int = 17,
    reopen_with: int = 0,
) -> None:
    """A sealed run whose transcript has a checkpoint every ``every`` records (and,
    with ``reopen_with``, a second segment of that many records)."""
    clock = fixed_clock()
    with steady_checkpoint_timer():
        with TranscriptWriter(run_id, store=store, clock=clock, checkpoint_records=every) as w:
            for record in records(7, count):
                w.write(record)
        with ToolEventWriter(run_id, store=store, clock=clock) as events:
            events.write({"tool": "shell", "command": "pytest -q"})
        if reopen_with:
            with TranscriptWriter(
                run_id, store=store, clock=clock, checkpoint_records=every, reopen=True
            ) as w:
                for record in records(8, reopen_with):
                    w.write(record)


def _manifest(store: Path, run_id: str = RUN) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((store / f"audit/manifests/{run_id}.json").read_bytes())
    return data


def _modified(store: Path, run_id: str = RUN) -> Any:
    report = check_run(run_id, store)
    return next(f for f in report.findings if f.code == "modified")


@pytest.fixture(scope="module")
def sealed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    stores = {
        "plain": tmp_path_factory.mktemp("plain"),
        "reopened": tmp_path_factory.mktemp("reopened"),
    }
    _write(stores["plain"])
    _write(stores["reopened"], count=150, reopen_with=150)
    return stores


@settings(max_examples=examples(60), deadline=None)
@given(
    which=st.sampled_from(["plain", "reopened"]),
    streamed=st.booleans(),
    where=st.floats(min_value=0, max_value=1, exclude_max=True),
    xor=st.integers(min_value=1, max_value=255),
)
def test_any_changed_byte_is_located_in_the_segment_that_holds_it(
    sealed: dict[str, Path], which: str, streamed: bool, where: float, xor: int
) -> None:
    """Property: flip any byte of a sealed transcript (read whole or streamed, plain or
    re-opened): the modified finding's range of lines holds the changed byte's line."""
    store = sealed[which]
    path = transcript_path(store, RUN)
    original = path.read_bytes()
    offset = int(where * len(original))
    changed = bytearray(original)
    changed[offset] ^= xor
    path.write_bytes(bytes(changed))
    try:
        chunk = 7 if streamed else folderstore_module._CHUNK
        with mock.patch.object(folderstore_module, "_CHUNK", chunk):
            finding = _modified(store)
    finally:
        path.write_bytes(original)
    line = original[:offset].count(b"\n") + 1
    assert finding.lines is not None
    first, last = finding.lines
    assert first <= line <= last, (offset, line, finding.lines)
    # The range is one stretch between two prefix digests, not the whole file.
    assert last - first < 2 * 17 + 1


def test_a_change_in_a_4000_line_run_names_its_1000_line_segment_in_text_and_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _write(tmp_path, count=4000, every=1000)
    path = transcript_path(tmp_path, RUN)
    data = bytearray(path.read_bytes())
    offset = data.index(b"message 2500 ") + 3  # inside line 2501
    data[offset] ^= 0x20
    path.write_bytes(bytes(data))
    assert verify_cli([RUN, "--store", str(tmp_path)]) == 1
    assert "transcript checksum mismatch (lines 2001-3000)" in capsys.readouterr().out
    assert verify_cli([RUN, "--store", str(tmp_path), "--json"]) == 1
    findings = json.loads(capsys.readouterr().out)["findings"]
    modified = next(f for f in findings if f["code"] == "modified")
    assert modified["lines"] == [2001, 3000]
    assert all("lines" not in f for f in findings if f["code"] != "modified")


def test_a_seal_without_checkpoints_still_verifies_and_locates_the_whole_file(
    tmp_path: Path,
) -> None:
    """A manifest sealed before checkpoints were kept (no ``checkpoints`` member) keeps
    verifying; a change in it is located in lines 1..records."""
    _write(tmp_path, count=50, every=10)
    manifest_path = tmp_path / f"audit/manifests/{RUN}.json"
    document = _manifest(tmp_path)
    assert document["artifacts"]["transcript"]["checkpoints"]
    del document["artifacts"]["transcript"]["checkpoints"]
    manifest_path.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")
    relink(tmp_path, [RUN])  # as the release before checkpoints linked it
    assert check_run(RUN, tmp_path).complete
    path = transcript_path(tmp_path, RUN)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 1
    path.write_bytes(bytes(data))
    assert _modified(tmp_path).lines == (1, 50)


def test_checkpoints_are_thinned_to_the_limit_evenly_and_still_locate(tmp_path: Path) -> None:
    count = 3 * MAX_SEALED_CHECKPOINTS + 100
    _write(tmp_path, count=count, every=1)
    kept = [c["records"] for c in _manifest(tmp_path)["artifacts"]["transcript"]["checkpoints"]]
    assert MAX_SEALED_CHECKPOINTS // 2 <= len(kept) <= MAX_SEALED_CHECKPOINTS
    gaps = [b - a for a, b in itertools.pairwise([0, *kept])]
    assert max(gaps) <= 2 * min(gaps), "spaced about evenly"
    path = transcript_path(tmp_path, RUN)
    original = path.read_bytes()
    offset = len(original) * 2 // 3
    data = bytearray(original)
    data[offset] ^= 4
    path.write_bytes(bytes(data))
    line = original[:offset].count(b"\n") + 1
    end = next(r for r in kept if r >= line)
    start = max((r for r in kept if r < line), default=0)
    assert _modified(tmp_path).lines == (start + 1, end)


def test_manifest_checkpoints_are_checked_when_parsed(tmp_path: Path) -> None:
    _write(tmp_path, count=40, every=10)
    document = _manifest(tmp_path)
    entry = document["artifacts"]["transcript"]
    good = json.dumps(document).encode()
    assert RunManifest.from_bytes(good).artifacts["transcript"].checkpoints
    for bad in (
        [*entry["checkpoints"][1:], entry["checkpoints"][0]],  # out of order
        [{**entry["checkpoints"][0], "bytes": entry["bytes"] + 1}],  # beyond the file
        [{**entry["checkpoints"][0], "ts": 1}],  # unknown member
        [{"records": 1, "bytes": 1}],  # no digest
        {"records": 1},
    ):
        entry["checkpoints"] = bad
        with pytest.raises(ManifestInvalidError, match="bad checkpoints"):
            RunManifest.from_bytes(json.dumps(document).encode())


def test_an_unsealed_prefix_that_differs_from_its_checkpoint_is_located(tmp_path: Path) -> None:
    with steady_checkpoint_timer():
        writer = TranscriptWriter(RUN, store=tmp_path, checkpoint_records=10)
        for record in records(3, 35):
            writer.write(record)
        writer.abort()
    path = transcript_path(tmp_path, RUN)
    data = bytearray(path.read_bytes())
    lines = data.split(b"\n")
    offset = sum(len(x) + 1 for x in lines[:14]) + 2  # inside line 15
    data[offset] ^= 1
    path.write_bytes(bytes(data))
    finding = _modified(tmp_path)
    assert finding.lines == (11, 20)


def test_chunk_reader_serves_check_prefix_read_from_a_stream() -> None:
    """The object-store path reads through a stream: same verdict as random access."""
    data = b"".join(b"line %d\n" % n for n in range(100))
    ends = [i + 1 for i, byte in enumerate(data) if byte == 0x0A]  # ends[n-1]: n lines

    def at(lines: int, digest: str | None = None) -> Checkpoint:
        size = ends[lines - 1]
        real = digest_bytes(data[:size], "blake3")
        return Checkpoint(lines, size, "blake3", digest or real, 0)

    checkpoints = [at(10), at(30), at(60), at(80, "00" * 32), at(90)]
    cut = [0, 70, 140, 350, 500, len(data)]
    chunks = [data[a:b] for a, b in itertools.pairwise(cut)]
    streamed = check_prefix_read(chunk_reader(chunks), checkpoints, size=len(data))
    direct = check_prefix_read(lambda n, o: data[o : o + n], checkpoints, size=len(data))
    assert streamed == direct
    assert streamed.verified_records == 60
    assert streamed.mismatch == checkpoints[3]
    read = chunk_reader(chunks)
    assert read(10, 200) == data[200:210]
    with pytest.raises(ValueError, match="already read"):
        read(10, 0)


def test_copying_the_store_keeps_the_location_rule(tmp_path: Path) -> None:
    """The same store read through ``--all`` gives the same located finding."""
    _write(tmp_path / "s", count=120, every=25)
    shutil.copytree(tmp_path / "s", tmp_path / "t")
    path = transcript_path(tmp_path / "t", RUN)
    data = bytearray(path.read_bytes())
    data[data.index(b"message 60 ") + 1] ^= 2  # line 61
    path.write_bytes(bytes(data))
    report = check_store(tmp_path / "t")
    run = next(r for r in report.runs if r.run_id == RUN)
    assert next(f for f in run.findings if f.code == "modified").lines == (51, 75)
    assert check_store(tmp_path / "s").complete


def test_a_store_written_object_by_object_locates_a_change_too() -> None:
    """The verifier of a store written object by object (a second read of the object,
    only on a mismatch) names the same range as a folder store would."""
    store = MemoryStore(name="evidence", prefix="team")
    lines = b"".join(b'{"type":"item","n":%d}\n' % n for n in range(2500))
    ingest_stream(io.BytesIO(lines), "r1", store=store)
    assert check_run("r1", store).complete
    path = "audit/transcripts/r1.jsonl"
    data = bytearray(store.get(path, max_bytes=1 << 24)[0])  # type: ignore[index]
    data[data.index(b'"n":1500}') + 1] ^= 1  # line 1501
    store.overwrite(path, bytes(data))
    report = check_run("r1", store)
    modified = next(f for f in report.findings if f.code == "modified")
    assert modified.lines == (1001, 2000)


@settings(max_examples=examples(40), deadline=None)
@given(
    counts=st.lists(st.integers(min_value=0, max_value=300), min_size=20, max_size=20),
    where=st.floats(min_value=0, max_value=1, exclude_max=True),
    streamed=st.booleans(),
)
def test_forged_record_counts_in_checkpoints_never_move_the_range_off_the_change(
    tmp_path_factory: pytest.TempPathFactory, counts: list[int], where: float, streamed: bool
) -> None:
    """Property: an unsigned manifest's checkpoints re-written with any increasing record
    counts (digests and offsets kept, the run re-linked): lines are counted in the file
    itself, so a flipped byte's line is still inside the range, never past the file."""
    store = tmp_path_factory.mktemp("forged")
    shutil.copytree(_forged_template(tmp_path_factory), store, dirs_exist_ok=True)
    manifest = _manifest(store)
    seal = manifest["artifacts"]["transcript"]
    forged = sorted(counts)[: len(seal["checkpoints"])]
    for checkpoint, count in zip(seal["checkpoints"], forged, strict=False):
        checkpoint["records"] = count
    (store / f"audit/manifests/{RUN}.json").write_text(json.dumps(manifest))
    relink(store, [RUN])
    path = transcript_path(store, RUN)
    original = path.read_bytes()
    offset = int(where * len(original))
    changed = bytearray(original)
    changed[offset] ^= 0x20
    path.write_bytes(bytes(changed))
    chunk = 7 if streamed else folderstore_module._CHUNK
    with mock.patch.object(folderstore_module, "_CHUNK", chunk):
        finding = _modified(store)
    line = original[:offset].count(b"\n") + 1
    assert finding.lines is not None
    first, last = finding.lines
    assert first <= line <= last <= original.count(b"\n"), (offset, line, finding.lines)


_TEMPLATE: dict[str, Path] = {}


def _forged_template(factory: pytest.TempPathFactory) -> Path:
    if "plain" not in _TEMPLATE:
        _TEMPLATE["plain"] = factory.mktemp("template")
        _write(_TEMPLATE["plain"], count=300, every=17)
    return _TEMPLATE["plain"]
