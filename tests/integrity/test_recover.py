"""agc recover: seal a crashed run, quarantine a torn tail, refuse tampering, idempotent."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from agc.cli.app import main
from agc.errors import (
    RecordInvalidError,
    RecoveryRefusedError,
    RunLockedError,
    RunNotFoundError,
    UnsealedRunError,
)
from agc.exitcodes import ExitCode
from agc.integrity import (
    RunManifest,
    TranscriptWriter,
    check_run,
    check_store,
    open_run,
    read_run_manifest,
    recover_run,
)
from tests.conftest import tree, write_legacy_run_with_shared_tool_events
from tests.integrity.evidence_helpers import records, transcript_path, write_run


def _crash(store: Path, run_id: str, count: int, torn: bytes = b"") -> bytes:
    """Write ``count`` records, leave both files unsealed, append ``torn`` raw bytes."""
    run = open_run(run_id, store=store)
    run.transcript._checkpoint_records = 5
    run.transcript._schedule_checkpoint()
    for record in records(7, count):
        run.transcript.write(record)
    run.abort()
    path = transcript_path(store, run_id)
    with path.open("ab") as handle:
        handle.write(torn)
    return path.read_bytes()


def test_recover_quarantines_torn_tail_and_keeps_every_complete_record(store: Path) -> None:
    before = _crash(store, "r", 12, torn=b'{"seq":12,"ts":1,"role":"us')
    report = recover_run("r", store)
    transcript = next(a for a in report.artifacts if a.kind == "transcript")
    boundary = before.rfind(b"\n") + 1
    path = transcript_path(store, "r")
    assert path.read_bytes() == before[:boundary]
    quarantine = path.with_name("r.jsonl.quarantine")
    assert quarantine.read_bytes() == before[boundary:]
    assert transcript.records == 12
    assert transcript.quarantined_bytes == len(before) - boundary
    assert transcript.verified_bytes > 0
    result = check_run("r", store)
    assert result.complete, result.missing
    assert "recovered" in {f.code for f in result.findings}
    manifest = RunManifest.from_bytes((store / "audit/manifests/r.json").read_bytes())
    seal = manifest.artifacts["transcript"]
    assert seal.recovered
    assert seal.quarantine is not None
    assert seal.quarantine["bytes"] == len(before) - boundary


def _delete_quarantine(path: Path) -> None:
    path.unlink()


def _change_quarantine(path: Path) -> None:
    path.write_bytes(path.read_bytes().replace(b"us", b"XX"))


def _extend_quarantine(path: Path) -> None:
    with path.open("ab") as handle:
        handle.write(b"more")


def _symlink_quarantine(path: Path) -> None:
    target = path.with_name("elsewhere")
    path.rename(target)
    path.symlink_to(target)


@pytest.mark.parametrize(
    ("tamper", "code"),
    [
        (_delete_quarantine, "deleted"),
        (_change_quarantine, "modified"),
        (_extend_quarantine, "modified"),
        (_symlink_quarantine, "not-regular-file"),
    ],
    ids=["deleted", "changed", "extended", "symlink"],
)
def test_the_quarantine_file_of_a_recovered_run_is_verified(
    store: Path, tamper: Any, code: str
) -> None:
    """The torn bytes are evidence too: the manifest seals their length and digest."""
    _crash(store, "r", 12, torn=b'{"seq":12,"ts":1,"role":"us')
    recover_run("r", store)
    tamper(transcript_path(store, "r").with_name("r.jsonl.quarantine"))
    report = check_run("r", store)
    assert not report.complete
    assert code in {f.code for f in report.findings if f.artifact == "transcript"}
    assert not next(a for a in report.artifacts if a.kind == "transcript").ok


def test_a_quarantine_name_outside_the_run_makes_the_manifest_invalid(store: Path) -> None:
    _crash(store, "r", 12, torn=b"{")
    recover_run("r", store)
    path = store / "audit/manifests/r.json"
    document = json.loads(path.read_text())
    document["artifacts"]["transcript"]["quarantine"]["file"] = "../manifests/r.json"
    path.write_text(json.dumps(document))
    report = check_run("r", store)
    assert "manifest-invalid" in {f.code for f in report.findings}
    # … also when the entry's own file name carries the path (never a crash).
    document["artifacts"]["transcript"]["file"] = "../x"
    document["artifacts"]["transcript"]["quarantine"]["file"] = "../x.quarantine"
    path.write_text(json.dumps(document))
    report = check_run("r", store)
    assert "manifest-invalid" in {f.code for f in report.findings}


def test_recover_of_a_run_that_was_never_written_refuses_and_creates_nothing(
    store: Path,
) -> None:
    """A typo in the run id must not add an empty run to the store's chain forever."""
    write_run(store, "real", count=2)
    before = tree(store)
    with pytest.raises(RunNotFoundError, match="nothing to recover"):
        recover_run("reel", store)
    assert tree(store) == before


def test_recover_twice_changes_nothing(store: Path) -> None:
    _crash(store, "r", 6, torn=b"{")
    recover_run("r", store)
    snapshot = {p: p.read_bytes() for p in store.rglob("*") if p.is_file()}
    again = recover_run("r", store)
    assert not again.changed
    assert {p: p.read_bytes() for p in store.rglob("*") if p.is_file()} == snapshot


def test_recover_refuses_a_prefix_that_does_not_match_its_checkpoint(store: Path) -> None:
    _crash(store, "r", 12)
    path = transcript_path(store, "r")
    data = bytearray(path.read_bytes())
    data[3] ^= 0x20
    path.write_bytes(bytes(data))
    with pytest.raises(RecoveryRefusedError):
        recover_run("r", store)
    assert not path.with_name("r.jsonl.b3").exists()


def test_recover_refuses_while_a_writer_holds_the_file(store: Path) -> None:
    writer = TranscriptWriter("r", store=store)
    writer.write({"a": 1})
    writer.flush()
    with pytest.raises(RunLockedError):
        recover_run("r", store)
    writer.abort()


@pytest.mark.parametrize("buffered", [0, 1, 5])
def test_recover_never_removes_the_empty_files_of_a_live_writer(store: Path, buffered: int) -> None:
    """A writer holds its records in its buffer before the first flush, so its files
    are empty on disk while it runs: recovery must see the lock, not an empty run."""
    run = open_run("r", store=store)
    for record in records(3, buffered):
        run.transcript.write(record)
    run.tool_events.write({"tool": "shell"})
    with pytest.raises(RunLockedError):
        recover_run("r", store)
    run.close()
    report = check_run("r", store)
    if buffered:
        assert report.complete, report.findings
        assert report.artifacts[0].records == buffered
    else:
        assert "empty" in {f.code for f in report.findings}
    assert not {f.code for f in report.findings} & {"deleted", "missing"}


def test_recover_seals_a_missing_artifact_as_empty(store: Path) -> None:
    writer = TranscriptWriter("r", store=store)
    writer.write({"a": 1})
    writer.abort()
    report = recover_run("r", store)
    actions = {a.kind: a.action for a in report.artifacts}
    assert actions == {"transcript": "sealed", "tool-events": "created-empty"}
    assert check_run("r", store).complete


def test_crashed_run_is_never_complete_and_writer_will_not_continue_it(store: Path) -> None:
    _crash(store, "r", 3)
    assert not check_run("r", store).complete
    size = os.path.getsize(transcript_path(store, "r"))
    with pytest.raises(UnsealedRunError):
        TranscriptWriter("r", store=store)
    assert os.path.getsize(transcript_path(store, "r")) == size


@pytest.mark.parametrize("tamper", [None, "flip", "delete"])
@pytest.mark.parametrize("second", ["closed", "crashed-and-recovered"])
def test_a_recovered_run_re_opened_keeps_its_quarantine_listed_and_checked(
    store: Path, second: str, tamper: str | None
) -> None:
    """The torn bytes of the first crash stay evidence through later segments: listed
    in the manifest (not an 'unexpected' file), checked, never claimed again."""
    _crash(store, "r", 6, torn=b'{"torn')
    recover_run("r", store)
    writer = TranscriptWriter("r", store=store, reopen=True)
    writer.write({"role": "user", "content": "resumed"})
    if second == "closed":
        writer.close()
    else:
        writer.flush()
        writer.abort()
        again = recover_run("r", store)
        assert again.artifacts[0].quarantined_bytes == 0
        assert again.artifacts[0].quarantine is None
    quarantine = transcript_path(store, "r").with_name("r.jsonl.quarantine")
    assert quarantine.read_bytes() == b'{"torn'
    if tamper == "flip":
        quarantine.write_bytes(b'{"TORN')
    elif tamper == "delete":
        quarantine.unlink()
    report = check_store(store)
    codes = {f.code for r in report.runs for f in r.findings} | {f.code for f in report.findings}
    assert "unexpected" not in codes
    if tamper is None:
        assert report.complete, [f.message for r in report.runs for f in r.findings]
    else:
        assert {"flip": "modified", "delete": "deleted"}[tamper] in codes
        assert not report.complete


def test_a_legacy_run_is_refused_and_left_as_it_was(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run an earlier release sealed (a digest-only SHA-256 sidecar, no manifest) has
    nothing to recover. It was sealed again in agc's format: a manifest, a chain link and
    an empty tool-events file of its own, after which agc-verify failed it (the legacy
    sidecar was then unexpected). Refused, nothing changed, and it still verifies."""
    write_legacy_run_with_shared_tool_events(store, "old")
    assert check_run("old", store).complete

    def contents() -> dict[str, bytes]:
        return {p: (store / p).read_bytes() for p in tree(store) if (store / p).is_file()}

    before = (tree(store), contents())
    with pytest.raises(RecoveryRefusedError, match="legacy store format"):
        recover_run("old", store)
    assert (tree(store), contents()) == before
    assert main(["recover", "old", "--store", str(store), "--json"]) == ExitCode.FINDINGS
    assert json.loads(capsys.readouterr().out)["error"]["code"] == "recovery-refused"
    assert (tree(store), contents()) == before
    report = check_run("old", store)
    assert report.complete
    assert report.legacy


def test_recovering_again_reports_what_the_first_recovery_proved(tmp_path: Path) -> None:
    """Bytes appended after the last checkpoint are sealed but never vouched for; a second
    `agc recover` (nothing to do) says the same count verified, not the whole file."""
    store = tmp_path / "store"
    _crash(store, "r", 7, torn=b'{"appended":"after the last checkpoint"}\n')
    first = {a.kind: a for a in recover_run("r", store).artifacts}["transcript"]
    assert first.action == "sealed"
    assert first.verified_bytes < first.bytes
    again = {a.kind: a for a in recover_run("r", store).artifacts}["transcript"]
    assert again.action == "already-sealed"
    assert (again.bytes, again.verified_bytes) == (first.bytes, first.verified_bytes)


def test_recovery_stores_the_attributes_its_writer_would_have_sealed(tmp_path: Path) -> None:
    run = open_run("facts", store=tmp_path)
    run.transcript.write({"role": "user", "content": "hi"})
    run.abort()
    facts = {"client": "codex", "session_id": "s-1"}
    with pytest.raises(RecordInvalidError):
        recover_run("facts", tmp_path, attributes={"not": float("nan")})
    recover_run("facts", tmp_path, attributes=facts)
    manifest = read_run_manifest("facts", tmp_path)
    assert manifest is not None
    assert manifest.attributes == facts
    assert check_run("facts", tmp_path, allow_recovered=True).complete
    # Fixed by the first seal: a run sealed already is left as it is.
    again = recover_run("facts", tmp_path, attributes={"client": "other"})
    assert not again.changed
    manifest = read_run_manifest("facts", tmp_path)
    assert manifest is not None
    assert manifest.attributes == facts
