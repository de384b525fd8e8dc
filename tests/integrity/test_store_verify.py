"""agc-verify --all: every run, the store chain, stray files, a pinned head; and the
tamper matrix: each kind of tampering gives its own finding code, every single-byte
flip of a small sealed run is detected."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import get_args

import blake3
import pytest
import rfc8785

from agc._core import store as store_rules
from agc._core.digest import new_hasher
from agc.integrity import (
    StoreFindingCode,
    StoreReport,
    TranscriptWriter,
    _writer,
    check_store,
    generate_keypair,
    load_signing_key,
    load_trusted_keys,
)
from agc.integrity import _store_verify as store_verify_module
from agc.integrity import _version_findings as version_findings_module
from agc.integrity._chain import manifest_digest
from tests.conftest import THOROUGH, sampled
from tests.integrity.evidence_helpers import transcript_path, write_run

REACHES_INSIDE = {
    "agc.integrity._chain": "the manifest digest a chain link records",
    "agc.integrity._version_findings": "reads its source for the finding codes it emits",
    "agc.integrity._store_verify": "reads its source for the finding codes it emits",
    "agc.integrity._writer": "swaps the writer's run-id rule to write runs it would refuse",
}


def _codes(report: StoreReport) -> set[str]:
    codes: set[str] = {f.code for f in report.findings}
    for run in report.runs:
        codes |= {f.code for f in run.findings if f.severity == "error"}
    return codes


def _three_runs(store: Path) -> str:
    for index, run_id in enumerate(("a", "b", "c")):
        write_run(store, run_id, seed=index, count=3)
    head = check_store(store).head
    assert head is not None
    return head


def test_clean_store_is_complete_with_a_linked_chain(store: Path) -> None:
    head = _three_runs(store)
    report = check_store(store, expect_head=head)
    assert report.complete
    assert report.head_position == 3
    lines = (store / "audit/chain.jsonl").read_text().splitlines()
    assert [json.loads(line)["run_id"] for line in lines] == ["a", "b", "c"]
    assert json.loads(lines[1])["prev"] == json.loads(lines[0])["manifest_digest"]


@pytest.mark.parametrize("layout", ["empty-folder", "empty-audit-folders"])
def test_a_store_with_no_run_is_never_complete(store: Path, layout: str) -> None:
    """An empty input never counts as verified: a wiped store must not pass the gate."""
    if layout == "empty-audit-folders":
        for folder in ("transcripts", "tool-events", "manifests"):
            (store / "audit" / folder).mkdir(parents=True)
    report = check_store(store)
    assert not report.complete
    assert "empty" in {f.code for f in report.findings}


@pytest.mark.parametrize("run_id", [".x", ".lock", "..x", "_", "a.json", "x.jsonl"])
def test_every_valid_run_id_verifies_with_all(store: Path, run_id: str) -> None:
    """Run ids are 1-128 of [A-Za-z0-9._-] other than . and ..; a leading dot too."""
    write_run(store, run_id)
    report = check_store(store)
    assert report.complete, [f.message for f in report.findings]


def test_a_dash_run_id_made_before_the_creation_rule_still_verifies(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """New run ids may not begin with '-'; a store written before that rule stays valid."""
    monkeypatch.setattr(_writer, "validate_new_run_id", store_rules.validate_run_id)
    write_run(store, "-a")
    monkeypatch.undo()
    report = check_store(store)
    assert report.complete, [f.message for f in report.findings]


def _flip_transcript(store: Path) -> None:
    path = transcript_path(store, "b")
    data = bytearray(path.read_bytes())
    data[10] ^= 1
    path.write_bytes(bytes(data))


def _truncate_at_boundary(store: Path) -> None:
    path = transcript_path(store, "b")
    data = path.read_bytes()
    path.write_bytes(data[: data.index(b"\n") + 1])


def _append_record(store: Path) -> None:
    with transcript_path(store, "b").open("ab") as handle:
        handle.write(b'{"seq":3,"ts":1,"role":"user","content":"added"}\n')


def _swap_records(store: Path) -> None:
    path = transcript_path(store, "b")
    lines = path.read_bytes().splitlines(keepends=True)
    lines[0], lines[1] = lines[1], lines[0]
    path.write_bytes(b"".join(lines))


def _delete_sidecar(store: Path) -> None:
    os.unlink(transcript_path(store, "b").with_name("b.jsonl.b3"))


def _delete_manifest(store: Path) -> None:
    os.unlink(store / "audit/manifests/b.json")


def _delete_middle_run(store: Path) -> None:
    _delete_manifest(store)
    for folder in ("transcripts", "tool-events"):
        for path in (store / "audit" / folder).glob("b.jsonl*"):
            os.unlink(path)


def _roll_back_head(store: Path) -> None:
    # Remove the last run and its chain link, as if the store were restored from backup.
    for folder in ("transcripts", "tool-events"):
        for path in (store / "audit" / folder).glob("c.jsonl*"):
            os.unlink(path)
    os.unlink(store / "audit/manifests/c.json")
    log = store / "audit/chain.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    log.write_text("".join(lines[:-1]))
    previous = json.loads(lines[-2])
    head = {"position": previous["position"], "digest": previous["manifest_digest"]}
    (store / "audit/chain-head.json").write_text(json.dumps(head))


def _reorder_chain(store: Path) -> None:
    log = store / "audit/chain.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    lines[0], lines[1] = lines[1], lines[0]
    log.write_text("".join(lines))


def _stray_file(store: Path) -> None:
    (store / "audit/transcripts/notes.txt").write_text("hello")


def _replace_manifest(store: Path) -> None:
    path = store / "audit/manifests/b.json"
    manifest = json.loads(path.read_text())
    manifest["artifacts"]["transcript"]["sealed_at_ms"] += 1
    path.write_text(json.dumps(manifest))


def _rewrite_middle_run_and_patch_chain(store: Path) -> None:
    # An adversary without a key edits run b, re-computes its sidecar, its manifest and
    # its chain link, and points the next link's prev at the new digest: the links are
    # consistent again and the head (run c's manifest) is unchanged.
    path = transcript_path(store, "b")
    data = path.read_bytes().replace(b"message 0", b"message X", 1)
    path.write_bytes(data)
    digest = blake3.blake3(data).hexdigest()
    path.with_name("b.jsonl.b3").write_text(f"{digest}  b.jsonl\n")
    manifest_path = store / "audit/manifests/b.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["artifacts"]["transcript"]["digest"] = digest
    manifest_path.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    log = store / "audit/chain.jsonl"
    links = [json.loads(line) for line in log.read_text().splitlines()]
    links[1]["manifest_digest"] = links[2]["prev"] = manifest_digest(manifest)
    log.write_text("".join(json.dumps(link, separators=(",", ":")) + "\n" for link in links))


def _downgrade_to_legacy(store: Path) -> None:
    # Edit run b, delete its manifest and agc sidecars, write seed-004 sidecars.
    for folder in ("transcripts", "tool-events"):
        path = store / "audit" / folder / "b.jsonl"
        data = path.read_bytes().replace(b"message 0", b"message X")
        path.write_bytes(data)
        path.with_name("b.jsonl.b3").unlink()
        path.with_name("b.jsonl.sha256").write_text(hashlib.sha256(data).hexdigest())
    _delete_manifest(store)


TAMPERING: list[tuple[str, Callable[[Path], None], str]] = [
    ("byte-flip", _flip_transcript, "modified"),
    ("truncated-at-record-boundary", _truncate_at_boundary, "truncated"),
    ("record-appended-after-seal", _append_record, "extended"),
    ("records-swapped", _swap_records, "modified"),
    ("sidecar-deleted", _delete_sidecar, "sidecar-missing"),
    ("manifest-deleted", _delete_manifest, "manifest-missing"),
    ("middle-run-deleted", _delete_middle_run, "run-deleted"),
    ("head-rolled-back", _roll_back_head, "head-not-in-chain"),
    ("chain-reordered", _reorder_chain, "chain-broken"),
    ("stray-file", _stray_file, "unexpected"),
    ("manifest-replaced", _replace_manifest, "manifest-replaced"),
    ("middle-run-rewritten-chain-patched", _rewrite_middle_run_and_patch_chain, "chain-broken"),
    ("downgraded-to-legacy-format", _downgrade_to_legacy, "manifest-missing"),
]


@pytest.mark.parametrize(
    ("tamper", "code"), [(t, c) for _, t, c in TAMPERING], ids=[n for n, _, _ in TAMPERING]
)
def test_each_tampering_gives_its_own_finding_code(
    store: Path, tamper: Callable[[Path], None], code: str
) -> None:
    head = _three_runs(store)
    tamper(store)
    report = check_store(store, expect_head=head)
    assert not report.complete
    assert code in _codes(report)


@pytest.mark.parametrize(
    "stray",
    [
        "audit/transcripts/ghost.jsonl.b3",
        "audit/transcripts/ghost.jsonl.ckpt",
        "audit/tool-events/ghost.jsonl.quarantine",
        "audit/transcripts/b.jsonl.quarantine",
        "audit/transcripts/b.jsonl.quarantine-2",
    ],
)
def test_a_sidecar_checkpoint_or_quarantine_file_that_nothing_explains_is_unexpected(
    store: Path, stray: str
) -> None:
    head = _three_runs(store)
    (store / stray).write_bytes(b"x\n")
    report = check_store(store, expect_head=head)
    assert not report.complete
    messages = [f.message for f in report.findings if f.code == "unexpected"]
    assert any(stray.removeprefix("audit/") in message for message in messages), messages
    assert "ghost" not in {run.run_id for run in report.runs}


def test_a_manifest_value_outside_rfc_8785_is_manifest_invalid_not_a_crash(store: Path) -> None:
    head = _three_runs(store)
    path = store / "audit/manifests/b.json"
    manifest = json.loads(path.read_text())
    manifest["artifacts"]["tool-events"]["sealed_at_ms"] = 2**64
    path.write_text(json.dumps(manifest))
    report = check_store(store, expect_head=head)
    assert not report.complete
    assert "manifest-invalid" in _codes(report)


@pytest.mark.parametrize("folder", ["audit", "audit/transcripts", "audit/manifests"])
def test_a_stray_file_name_is_never_echoed_raw(store: Path, folder: str) -> None:
    """File names are store content: a newline or escape would forge report lines."""
    _three_runs(store)
    (store / folder / "x\nstore: complete\x1b[8m").write_text("x")
    report = check_store(store)
    messages = [f.message for f in report.findings if f.code == "unexpected"]
    assert len(messages) == 1
    assert "\n" not in messages[0]
    assert "\x1b" not in messages[0]


@pytest.mark.parametrize("kind", ["fifo", "symlink", "folder"])
def test_a_non_file_in_place_of_a_chained_manifest_is_a_finding(store: Path, kind: str) -> None:
    """agc-verify b says not-regular-file; --all exited 2 (usage error) instead."""
    head = _three_runs(store)
    path = store / "audit/manifests/b.json"
    moved = store / "b.json.moved"
    path.rename(moved)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "symlink":
        path.symlink_to(moved)
    else:
        path.mkdir()
    report = check_store(store, expect_head=head)
    assert not report.complete
    assert "not-regular-file" in _codes(report)


@pytest.mark.parametrize("name", ["chain.jsonl", "chain-head.json"])
@pytest.mark.parametrize("kind", ["folder", "fifo", "symlink"])
def test_a_non_file_in_place_of_the_chain_log_or_head_is_chain_invalid(
    store: Path, name: str, kind: str
) -> None:
    head = _three_runs(store)
    path = store / "audit" / name
    moved = path.with_name(name + ".moved")
    path.rename(moved)
    if kind == "folder":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to(moved)
    report = check_store(store, expect_head=head)
    assert not report.complete
    assert "chain-invalid" in {f.code for f in report.findings}


def test_every_single_byte_flip_of_a_small_sealed_run_is_detected(tmp_path: Path) -> None:
    """Every byte of every file of a signed one-run store, flipped one at a time (in the
    default profile, each file's first and last byte and 40 more of it: see
    ``tests.conftest.sampled``)."""
    private, public, _ = generate_keypair(tmp_path / "keys")
    trusted = load_trusted_keys([public])
    pristine = tmp_path / "pristine"
    pristine.mkdir()
    write_run(pristine, "r", count=2, signing_key=load_signing_key(private))
    head = check_store(pristine).head
    files = [
        p.relative_to(pristine)
        for p in sorted(pristine.rglob("*"))
        if p.is_file() and not p.name.endswith(".lock")
    ]
    assert {p.name for p in files} >= {"r.jsonl", "r.jsonl.b3", "r.json", "chain.jsonl"}
    work = tmp_path / "work"
    flips = size = 0
    for relative in files:
        original = (pristine / relative).read_bytes()
        size += len(original)
        for position in sampled(range(len(original)), keep=40, seed=relative):
            shutil.rmtree(work, ignore_errors=True)
            shutil.copytree(pristine, work)
            changed = bytearray(original)
            changed[position] ^= 0x01
            (work / relative).write_bytes(bytes(changed))
            report = check_store(work, trusted_keys=trusted, expect_head=head)
            assert not report.complete, f"undetected flip at {relative}:{position}"
            flips += 1
    assert size > 1000
    if THOROUGH:
        assert flips == size
    else:
        assert 2 * len(files) <= flips < size


WRITE_ONE_RUN = """
import sys
from agc.integrity._writer import open_run
store, run_id = sys.argv[1], sys.argv[2]
with open_run(run_id, store=store) as run:
    for i in range(50):
        run.transcript.write({"i": i, "run": run_id})
"""


def test_concurrent_writers_of_different_runs_never_fork_the_chain(store: Path) -> None:
    processes = [
        subprocess.Popen([sys.executable, "-c", WRITE_ONE_RUN, str(store), f"run-{n}"])
        for n in range(12)
    ]
    assert all(p.wait(timeout=120) == 0 for p in processes)
    report = check_store(store)
    assert report.complete, [f.message for f in report.findings]
    assert report.head_position == 12
    lines = (store / "audit/chain.jsonl").read_text().splitlines()
    assert sorted(json.loads(line)["run_id"] for line in lines) == sorted(
        f"run-{n}" for n in range(12)
    )


def test_reopened_run_keeps_its_earlier_link_checkable(store: Path) -> None:
    head = _three_runs(store)
    with TranscriptWriter("a", store=store, reopen=True) as writer:
        writer.write({"role": "user", "content": "a resumed session keeps writing"})
    assert (store / "audit/manifests/a@1.json").exists()
    report = check_store(store, expect_head=head)
    assert report.complete, [f.message for f in report.findings]
    assert report.head_position == 4


def _forge_reopen_of_a(store: Path, edit: Callable[[bytes], bytes]) -> None:
    """An attacker without keys rewrites run a as if it had been re-opened legitimately."""
    manifests = store / "audit/manifests"
    old_manifest = json.loads((manifests / "a.json").read_text())
    shutil.copy(manifests / "a.json", manifests / "a@1.json")  # the "archived" manifest
    path = transcript_path(store, "a")
    data = edit(path.read_bytes())
    path.write_bytes(data)
    hasher = new_hasher("blake3")
    hasher.update(data)
    digest = hasher.hexdigest()
    path.with_name("a.jsonl.b3").write_text(f"{digest}  a.jsonl\n")
    old = old_manifest["artifacts"]["transcript"]
    new_manifest = json.loads(json.dumps(old_manifest))
    new_manifest["artifacts"]["transcript"].update(
        digest=digest,
        bytes=len(data),
        records=data.count(b"\n"),
        last_seq=data.count(b"\n") - 1,
        segments=[
            {
                "records": old["records"],
                "bytes": old["bytes"],
                "digest": old["digest"],
                "sealed_at_ms": old["sealed_at_ms"],
            }
        ],
    )
    log = store / "audit/chain.jsonl"
    last = json.loads(log.read_text().splitlines()[-1])
    new_manifest["chain"] = {"position": last["position"] + 1, "prev": last["manifest_digest"]}
    (manifests / "a.json").write_text(json.dumps(new_manifest))
    new_digest = hashlib.sha256(rfc8785.dumps(new_manifest)).hexdigest()
    link = {
        "position": last["position"] + 1,
        "run_id": "a",
        "manifest_digest": new_digest,
        "prev": last["manifest_digest"],
    }
    with log.open("a") as handle:
        handle.write(json.dumps(link) + "\n")
    head = {"position": link["position"], "digest": new_digest, "run_id": "a"}
    (store / "audit/chain-head.json").write_text(json.dumps(head))


def test_rewriting_a_past_run_as_a_fake_reopen_is_detected(store: Path) -> None:
    head = _three_runs(store)
    _forge_reopen_of_a(store, lambda data: data.replace(b"message 0", b"message 7", 1))
    report = check_store(store, expect_head=head)
    assert not report.complete
    assert "modified" in _codes(report)


def test_a_fake_reopen_without_the_archived_manifest_is_detected(store: Path) -> None:
    head = _three_runs(store)
    _forge_reopen_of_a(store, lambda data: data + b'{"seq":3,"ts":1,"role":"user"}\n')
    os.unlink(store / "audit/manifests/a@1.json")
    report = check_store(store, expect_head=head)
    assert "manifest-replaced" in _codes(report)


def test_every_store_finding_code_is_documented() -> None:
    """Every store-level code the source emits is typed, and the typed codes are exactly
    the table in docs/evidence.md."""
    emitted: set[str] = set()
    for module in (store_verify_module, version_findings_module):
        source = Path(str(module.__file__)).read_text()
        emitted |= set(re.findall(r'Finding\(\s*"([a-z-]+)"', source))
    docs = (Path(__file__).resolve().parents[2] / "docs" / "evidence.md").read_text()
    match = re.search(r"Store-level\s+finding codes:\n\n((?:\|.*\n)+)", docs)
    assert match is not None
    table = match.group(1)
    documented = set(re.findall(r"^\| `([a-z-]+)` \|", table, re.MULTILINE))
    assert emitted == set(get_args(StoreFindingCode)) == documented


@pytest.mark.parametrize("name", ["..json", "...json"])
def test_a_stray_manifest_named_like_dot_or_dot_dot_is_unexpected_not_a_crash(
    store: Path, name: str
) -> None:
    head = _three_runs(store)
    (store / "audit/manifests" / name).write_text("{}")
    report = check_store(store, expect_head=head)
    assert not report.complete
    assert "unexpected" in _codes(report)


@pytest.mark.parametrize("folder", ["audit", "audit/transcripts", "audit/manifests"])
def test_a_symlink_in_place_of_a_store_folder_is_a_finding(store: Path, folder: str) -> None:
    # A copy elsewhere, linked in: every run would verify through it.
    head = _three_runs(store)
    elsewhere = store.parent / "elsewhere"
    shutil.move(str(store / folder), str(elsewhere))
    (store / folder).symlink_to(elsewhere)
    report = check_store(store, expect_head=head)
    assert not report.complete
    assert f"{folder} is a symlink, not a folder of the store (not followed)" in [
        f.message for f in report.findings if f.code == "unexpected"
    ]
