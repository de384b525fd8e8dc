"""Tests for agc.integrity._verify: findings for every kind of damage, legacy stores."""

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
from typing import Any, get_args

import pytest

from agc._core import folderstore as folderstore_module
from agc._core.digest import Algorithm, new_hasher
from agc._core.sidecar import format_sidecar
from agc._core.store import ArtifactKind, StoreLayout
from agc.errors import RunIdInvalidError, StoreError, VerificationError
from agc.exitcodes import ExitCode
from agc.integrity import (
    ArtifactSeal,
    RunFindingCode,
    TranscriptWriter,
    check_run,
    read_tool_events,
    verify_run,
)
from agc.integrity import _judge as judge_module
from agc.integrity import _legacy as legacy_module
from agc.integrity import _run_chain as run_chain_module
from agc.integrity import _run_reader as run_reader_module
from agc.integrity import _version_findings as version_findings_module
from agc.integrity._store_io import record_seal
from tests._core.test_store import BAD_RUN_IDS
from tests.conftest import finding_codes, tree, write_run

REACHES_INSIDE = {
    "agc.integrity._judge": "reads its source for the finding codes it emits",
    "agc.integrity._legacy": "reads its source for the finding codes it emits",
    "agc.integrity._run_chain": "reads its source for the finding codes it emits",
    "agc.integrity._version_findings": "reads its source for the finding codes it emits",
    "agc.integrity._store_io": "records a seal into a manifest directly (record_seal)",
    "agc.integrity._run_reader": "reads its source for the finding codes it emits",
}

TRANSCRIPT = [
    {"role": "user", "content": "fix the parser"},
    {"role": "assistant", "content": "on it"},
    {"role": "tool", "content": "3 passed"},
]
EVENTS = [{"event": "tool_call_start", "call_id": "c1"}, {"event": "tool_call_end"}]


def _digest(data: bytes, algorithm: Algorithm = "blake3") -> str:
    hasher = new_hasher(algorithm)
    hasher.update(data)
    return hasher.hexdigest()


@pytest.fixture
def layout(store: Path) -> StoreLayout:
    """A sealed, complete run r1 (and r2, for 'moved from another run' cases)."""
    write_run(store, "r2", transcript=[{"other": "run"}], tool_events=[])
    return write_run(store, "r1", transcript=TRANSCRIPT, tool_events=EVENTS)


def test_complete_run(layout: StoreLayout) -> None:
    report = check_run("r1", layout.root)
    assert report.complete
    assert report.missing == ()
    assert report.findings == ()
    assert report.manifest is True
    assert report.legacy is False
    assert [(a.kind, a.ok, a.records) for a in report.artifacts] == [
        ("transcript", True, 3),
        ("tool-events", True, 2),
    ]
    assert verify_run("r1", layout.root) == report


def test_report_to_dict_schema(layout: StoreLayout) -> None:
    data = check_run("r1", layout.root).to_dict()
    assert data["schema_version"] == 1
    assert set(data) == {
        "schema_version",
        "run_id",
        "store",
        "complete",
        "verdict_word",
        "verdict_category",
        "missing",
        "findings",
        "artifacts",
        "manifest",
        "legacy",
        "signature",
        "key_id",
    }
    transcript = layout.artifact_path("r1", "transcript")
    assert data["artifacts"][0]["digest"] == _digest(transcript.read_bytes())
    assert data["artifacts"][0]["bytes"] == transcript.stat().st_size
    json.dumps(data)


# -- tampering: every case has its own finding code ------------------------------------


def _flip_byte(layout: StoreLayout) -> None:
    path = layout.artifact_path("r1", "transcript")
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


def _truncate_at_boundary(layout: StoreLayout) -> None:
    path = layout.artifact_path("r1", "transcript")
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:-1]))


def _truncate_mid_record(layout: StoreLayout) -> None:
    path = layout.artifact_path("r1", "transcript")
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 5])


def _cut_final_newline(layout: StoreLayout) -> None:
    path = layout.artifact_path("r1", "transcript")
    os.truncate(path, path.stat().st_size - 1)


def _append_record(layout: StoreLayout) -> None:
    path = layout.artifact_path("r1", "transcript")
    with path.open("ab") as handle:
        handle.write(b'{"seq":3,"ts":1,"role":"assistant","content":"forged"}\n')


def _delete_sidecar(layout: StoreLayout) -> None:
    path = layout.artifact_path("r1", "transcript")
    path.with_name("r1.jsonl.b3").unlink()


def _delete_manifest(layout: StoreLayout) -> None:
    layout.manifest_path("r1").unlink()


def _delete_transcript(layout: StoreLayout) -> None:
    layout.artifact_path("r1", "transcript").unlink()


def _rewrite_sidecar_and_file(layout: StoreLayout) -> None:
    # An attacker edits the transcript and recomputes its sidecar to match.
    path = layout.artifact_path("r1", "transcript")
    data = path.read_bytes().replace(b"3 passed", b"9 passed")
    path.write_bytes(data)
    path.with_name("r1.jsonl.b3").write_bytes(format_sidecar(_digest(data), "r1.jsonl"))


def _rewrite_sidecar_only(layout: StoreLayout) -> None:
    path = layout.artifact_path("r1", "transcript")
    path.with_name("r1.jsonl.b3").write_bytes(format_sidecar("0" * 64, "r1.jsonl"))


def _manifest_of_other_run(layout: StoreLayout) -> None:
    shutil.copyfile(layout.manifest_path("r2"), layout.manifest_path("r1"))


def _delete_tool_events(layout: StoreLayout) -> None:
    layout.artifact_path("r1", "tool-events").unlink()


TAMPERING: list[Any] = [
    pytest.param(_flip_byte, "modified", "transcript", id="byte-flip"),
    pytest.param(_truncate_at_boundary, "truncated", "transcript", id="truncated-at-boundary"),
    pytest.param(_truncate_mid_record, "truncated", "transcript", id="truncated-mid-record"),
    pytest.param(_cut_final_newline, "truncated", "transcript", id="final-newline-cut"),
    pytest.param(_append_record, "extended", "transcript", id="appended-record"),
    pytest.param(_delete_sidecar, "sidecar-missing", "transcript", id="deleted-sidecar"),
    pytest.param(_delete_manifest, "manifest-missing", "manifest", id="deleted-manifest"),
    pytest.param(_delete_transcript, "deleted", "transcript", id="deleted-transcript"),
    pytest.param(_delete_tool_events, "deleted", "tool-events", id="deleted-tool-events"),
    pytest.param(_rewrite_sidecar_and_file, "modified", "transcript", id="sidecar-rewritten"),
    pytest.param(_rewrite_sidecar_only, "sidecar-invalid", "transcript", id="sidecar-forged"),
    pytest.param(_manifest_of_other_run, "manifest-invalid", "manifest", id="other-manifest"),
]


@pytest.mark.parametrize(("tamper", "code", "artifact"), TAMPERING)
def test_tampering_is_found(
    layout: StoreLayout, tamper: Callable[[StoreLayout], None], code: str, artifact: str
) -> None:
    assert check_run("r1", layout.root).complete
    tamper(layout)
    report = check_run("r1", layout.root)
    assert not report.complete
    assert code in finding_codes(report)
    finding = next(f for f in report.findings if f.code == code)
    assert finding.artifact == artifact
    assert finding.severity == "error"
    assert finding.message in report.missing
    with pytest.raises(VerificationError) as info:
        verify_run("r1", layout.root)
    assert info.value.exit_code == ExitCode.FINDINGS
    assert info.value.report == report


def test_truncation_reports_where_and_how_much(layout: StoreLayout) -> None:
    sealed = layout.artifact_path("r1", "transcript").stat().st_size
    _truncate_at_boundary(layout)
    (finding,) = check_run("r1", layout.root).findings
    assert "at a record boundary" in finding.message
    assert finding.expected is not None
    assert finding.actual is not None
    assert finding.expected["bytes"] == sealed
    assert finding.expected["records"] == 3
    assert finding.actual["records"] == 2
    _truncate_mid_record(layout)
    (finding,) = check_run("r1", layout.root).findings
    assert "inside a record" in finding.message


@pytest.mark.parametrize("algorithm", ["blake3", "sha256"])
@pytest.mark.parametrize("kind", ["transcript", "tool-events"])
def test_cutting_only_the_final_newline_is_truncated_not_modified(
    store: Path, algorithm: Algorithm, kind: ArtifactKind
) -> None:
    """One byte gone, and that byte the last newline: the file is shorter than its seal,
    so it is truncated (inside a record, since its last line is now unterminated), never
    a checksum mismatch, and not reported twice as a torn tail."""
    layout = write_run(store, transcript=TRANSCRIPT, tool_events=EVENTS, algorithm=algorithm)
    path = layout.artifact_path("r1", kind)
    sealed = path.stat().st_size
    assert path.read_bytes().endswith(b"}\n")
    os.truncate(path, sealed - 1)
    report = check_run("r1", store)
    assert not report.complete
    (finding,) = report.findings
    assert (finding.code, finding.artifact, finding.severity) == ("truncated", kind, "error")
    assert finding.message == f"{kind} truncated inside a record (1 bytes gone)"
    assert finding.expected is not None
    assert finding.actual is not None
    assert (finding.expected["bytes"], finding.actual["bytes"]) == (sealed, sealed - 1)


def test_every_cut_is_truncated_never_modified(layout: StoreLayout) -> None:
    """Each length from one byte to the whole file: ``truncated`` with the exact count of
    bytes gone (a file cut to nothing is also an empty transcript)."""
    path = layout.artifact_path("r1", "transcript")
    data = path.read_bytes()
    for cut in range(1, len(data) + 1):
        path.write_bytes(data[: len(data) - cut])
        report = check_run("r1", layout.root)
        codes = finding_codes(report)
        assert codes == ({"truncated", "empty"} if cut == len(data) else {"truncated"}), cut
        truncated = next(f for f in report.findings if f.code == "truncated")
        assert truncated.message.endswith(f"({cut} bytes gone)"), cut
        kept = data[: len(data) - cut]
        where = "at a record boundary" if kept.endswith(b"\n") or not kept else "inside a record"
        assert where in truncated.message, cut


def test_cutting_the_final_newline_of_a_reopened_segment_is_truncated(store: Path) -> None:
    """A run re-opened for a new segment that never got sealed: its sealed prefix cut by
    one byte is truncated as well."""
    layout = write_run(store, transcript=TRANSCRIPT, tool_events=EVENTS)
    path = layout.artifact_path("r1", "transcript")
    sealed = path.stat().st_size
    writer = TranscriptWriter("r1", store=store, reopen=True)
    writer.abort()
    os.truncate(path, sealed - 1)
    codes = {f.code for f in check_run("r1", store).findings if f.artifact == "transcript"}
    assert codes == {"truncated"}


def test_sidecar_rewritten_to_match_is_caught_by_the_manifest(layout: StoreLayout) -> None:
    _rewrite_sidecar_and_file(layout)
    report = check_run("r1", layout.root)
    assert {"modified", "sidecar-invalid"} <= finding_codes(report)


def test_extended_counts_the_appended_records(layout: StoreLayout) -> None:
    _append_record(layout)
    (finding,) = check_run("r1", layout.root).findings
    assert finding.message == "transcript has 1 record(s) appended after sealing"


def test_seed_style_messages(layout: StoreLayout) -> None:
    _delete_tool_events(layout)
    _flip_byte(layout)
    missing = check_run("r1", layout.root).missing
    assert "transcript checksum mismatch" in missing
    assert "tool-events file missing (deleted after sealing)" in missing


# -- sidecars -------------------------------------------------------------------------


def _sidecar_bytes(layout: StoreLayout, variant: str) -> bytes:
    path = layout.artifact_path("r1", "transcript")
    digest = _digest(path.read_bytes())
    if variant == "upper-case-hex":
        return f"{digest.upper()}  r1.jsonl\n".encode()
    if variant == "wrong-file-name":
        return f"{digest}  r9.jsonl\n".encode()
    if variant == "extra-spaces":
        return f"{digest}   r1.jsonl\n".encode()
    if variant == "crlf":
        return f"{digest}  r1.jsonl\r\n".encode()
    if variant == "two-lines":
        return f"{digest}  r1.jsonl\n{digest}  r1.jsonl\n".encode()
    if variant == "name-not-utf8":
        return digest.encode() + b"  r1\xff.jsonl\n"
    assert variant == "moved-from-another-run"
    return layout.artifact_path("r2", "transcript").with_name("r2.jsonl.b3").read_bytes()


@pytest.mark.parametrize(
    "variant",
    [
        "upper-case-hex",
        "wrong-file-name",
        "extra-spaces",
        "crlf",
        "two-lines",
        "name-not-utf8",
        "moved-from-another-run",
    ],
)
def test_bad_sidecar_is_sidecar_invalid(layout: StoreLayout, variant: str) -> None:
    sidecar = layout.artifact_path("r1", "transcript").with_name("r1.jsonl.b3")
    sidecar.write_bytes(_sidecar_bytes(layout, variant))
    report = check_run("r1", layout.root)
    assert not report.complete
    assert "sidecar-invalid" in finding_codes(report)
    assert all(f.artifact == "transcript" for f in report.findings)


def test_sidecar_of_another_algorithm_is_unexpected(layout: StoreLayout) -> None:
    path = layout.artifact_path("r1", "transcript")
    sha = hashlib.sha256(path.read_bytes()).hexdigest()
    path.with_name("r1.jsonl.sha256").write_bytes(format_sidecar(sha, "r1.jsonl"))
    assert "unexpected" in finding_codes(check_run("r1", layout.root))


def test_symlinked_sidecar_is_sidecar_invalid(layout: StoreLayout, tmp_path: Path) -> None:
    sidecar = layout.artifact_path("r1", "transcript").with_name("r1.jsonl.b3")
    target = tmp_path / "copy.b3"
    shutil.copyfile(sidecar, target)
    sidecar.unlink()
    sidecar.symlink_to(target)
    assert "sidecar-invalid" in finding_codes(check_run("r1", layout.root))


# -- what stands where a file should --------------------------------------------------


def test_symlink_in_place_of_the_transcript(layout: StoreLayout, tmp_path: Path) -> None:
    path = layout.artifact_path("r1", "transcript")
    moved = tmp_path / "real.jsonl"
    shutil.move(path, moved)
    path.symlink_to(moved)  # same bytes, but through a link: not accepted
    report = check_run("r1", layout.root)
    assert not report.complete
    assert finding_codes(report) == {"not-regular-file"}


def test_folder_in_place_of_the_transcript(layout: StoreLayout) -> None:
    path = layout.artifact_path("r1", "transcript")
    path.unlink()
    path.mkdir()
    assert finding_codes(check_run("r1", layout.root)) == {"not-regular-file"}


def test_unknown_run_is_one_run_missing_finding_naming_the_store(layout: StoreLayout) -> None:
    report = check_run("nope", layout.root)
    assert not report.complete
    assert report.missing == (f"no run 'nope' in store {layout.root}",)
    assert [f.code for f in report.findings] == ["run-missing"]
    assert [a.ok for a in report.artifacts] == [False, False]


def test_a_run_with_one_file_left_is_not_run_missing(layout: StoreLayout) -> None:
    path = layout.artifact_path("other", "tool-events")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b'{"seq":0}\n')
    report = check_run("other", layout.root)
    assert "run-missing" not in finding_codes(report)
    assert next(f.code for f in report.findings if f.artifact == "transcript") == "missing"


def test_unsealed_and_torn_run(store: Path) -> None:
    layout = StoreLayout(store)
    path = layout.artifact_path("r1", "transcript")
    path.parent.mkdir(parents=True)
    path.write_bytes(b'{"seq":0}\n{"seq":1')
    report = check_run("r1", store)
    assert {"unsealed", "torn-tail"} <= finding_codes(report)


def test_manifest_with_a_bad_run_id_is_manifest_invalid(layout: StoreLayout) -> None:
    path = layout.manifest_path("r1")
    data = json.loads(path.read_bytes())
    data["run_id"] = "../r1"
    path.write_text(json.dumps(data))
    assert "manifest-invalid" in finding_codes(check_run("r1", layout.root))


def test_manifest_not_json(layout: StoreLayout) -> None:
    layout.manifest_path("r1").write_bytes(b"\x00garbage")
    assert "manifest-invalid" in finding_codes(check_run("r1", layout.root))


@pytest.mark.parametrize("run_id", BAD_RUN_IDS)
def test_bad_run_id_touches_nothing(run_id: str, store: Path) -> None:
    with pytest.raises(RunIdInvalidError):
        check_run(run_id, store)
    assert tree(store) == []


def test_a_missing_store_holds_no_run_and_a_file_in_its_place_is_unreadable(
    tmp_path: Path,
) -> None:
    report = check_run("r1", tmp_path / "absent")
    assert [f.code for f in report.findings] == ["run-missing"]
    assert not report.complete
    (tmp_path / "file").write_bytes(b"")
    with pytest.raises(StoreError):
        check_run("r1", tmp_path / "file")
    assert not (tmp_path / "absent").exists()


# -- store files with unusual bytes under verify --------------------------------------


def _seal_bytes(layout: StoreLayout, kind: ArtifactKind, data: bytes) -> None:
    """Put bytes in the store as a sealed artifact (sidecar + manifest entry)."""
    path = layout.artifact_path("r1", kind)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    digest = _digest(data)
    path.with_name("r1.jsonl.b3").write_bytes(format_sidecar(digest, path.name))
    count = data.count(b"\n")
    seal = ArtifactSeal(
        kind=kind,
        file=path.name,
        algorithm="blake3",
        digest=digest,
        bytes=len(data),
        records=count,
        last_seq=count - 1 if count else None,
        sealed_at_ms=0,
    )
    record_seal(layout, "r1", seal)


STORE_FILES: list[Any] = [
    pytest.param(b'\xef\xbb\xbf{"seq":0}\n', set(), id="bom"),
    pytest.param(b'{"seq":0}\r\n{"seq":1}\r\n', set(), id="crlf"),
    pytest.param(b'{"seq":0}\n{"seq":1}', {"torn-tail"}, id="unterminated-last-line"),
    pytest.param(b'{"seq":0,"t":"\xff\xfe"}\n', set(), id="invalid-utf8"),
    pytest.param(b'{"seq":0,"big":"' + b"x" * (10 * 1024 * 1024) + b'"}\n', set(), id="10mb-line"),
    pytest.param(b"", {"empty"}, id="zero-records"),
]


@pytest.mark.parametrize(("data", "codes"), STORE_FILES)
def test_sealed_store_files_with_unusual_bytes(store: Path, data: bytes, codes: set[str]) -> None:
    layout = StoreLayout(store)
    _seal_bytes(layout, "transcript", data)
    _seal_bytes(layout, "tool-events", b"")
    report = check_run("r1", store)
    assert finding_codes(report) == codes
    assert report.complete is (not codes)
    if not data:
        return
    # Any one-byte change is found: bytes are hashed, never decoded text (seed 004
    # hashed decoded UTF-8, so changing one invalid byte for another went unseen).
    path = layout.artifact_path("r1", "transcript")
    changed = bytearray(data)
    index = data.find(b"\xff") if b"\xff" in data else len(data) // 2
    changed[index] ^= 0x01
    path.write_bytes(bytes(changed))
    assert "modified" in finding_codes(check_run("r1", store))


def test_empty_unsealed_transcript_is_not_complete(store: Path) -> None:
    write_run(store, transcript=[], tool_events=[])
    report = check_run("r1", store)
    assert finding_codes(report) == {"empty"}
    assert report.missing == ("transcript has no records",)


def test_empty_tool_events_are_fine(store: Path) -> None:
    write_run(store, tool_events=[])
    assert check_run("r1", store).complete


# -- the legacy store format ----------------------------------------------------------


def _legacy_store(store: Path, events_for_run: int = 2) -> StoreLayout:
    """A legacy store: a digest-only .sha256 sidecar, no manifest, shared tool events."""
    layout = StoreLayout(store)
    path = layout.artifact_path("r1", "transcript")
    path.parent.mkdir(parents=True)
    data = b'{"role":"user","content":"hi","ts":1}\n{"role":"assistant","content":"ok","ts":2}\n'
    path.write_bytes(data)
    path.with_name("r1.jsonl.sha256").write_text(hashlib.sha256(data).hexdigest())
    events = [{"run_id": "r0", "tool": "x", "ts": 0}]
    events += [{"run_id": "r1", "tool": "shell", "ts": n} for n in range(events_for_run)]
    layout.legacy_tool_events_path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return layout


def test_legacy_store_verifies_and_is_reported_as_legacy(store: Path) -> None:
    _legacy_store(store)
    report = check_run("r1", store)
    assert report.complete, report.missing
    assert report.legacy
    assert report.manifest is False
    assert finding_codes(report) == {"legacy-format", "unverified-records"}
    assert all(f.severity == "warning" for f in report.findings)
    # The shared file's records are reported, never counted as verified tool events.
    assert [a.records for a in report.artifacts] == [2, None]
    unverified = next(f for f in report.findings if f.code == "unverified-records")
    assert unverified.actual == {"records": 2}
    assert list(read_tool_events("r1", store)) == []


def test_legacy_store_tampering_is_found(store: Path) -> None:
    layout = _legacy_store(store)
    path = layout.artifact_path("r1", "transcript")
    path.write_bytes(path.read_bytes().replace(b"ok", b"OK"))
    report = check_run("r1", store)
    assert not report.complete
    assert "modified" in finding_codes(report)
    assert "transcript checksum mismatch" in report.missing


def test_legacy_store_without_tool_events_for_the_run(store: Path) -> None:
    _legacy_store(store, events_for_run=0)
    report = check_run("r1", store)
    assert not report.complete
    assert "tool-events file missing" in report.missing


def test_a_chained_run_rewritten_into_the_legacy_format_is_manifest_missing(store: Path) -> None:
    """Downgrade: an adversary edits a sealed run, deletes its manifest and agc sidecars,
    and writes seed-004 digest-only sidecars. The store chain still links the run, so
    it had a manifest: it is not a legacy run."""
    layout = write_run(store, "r1")
    write_run(store, "r2")
    for kind in ("transcript", "tool-events"):
        path = layout.artifact_path("r1", kind)
        data = path.read_bytes().replace(b'"hi"', b'"forged"')
        path.write_bytes(data)
        path.with_name("r1.jsonl.b3").unlink()
        path.with_name("r1.jsonl.sha256").write_text(hashlib.sha256(data).hexdigest())
    layout.manifest_path("r1").unlink()
    report = check_run("r1", store)
    assert not report.complete
    assert not report.legacy
    assert "manifest-missing" in finding_codes(report)


def test_verify_streams_a_file_in_reads_of_at_most_one_chunk(
    layout: StoreLayout, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(folderstore_module, "_CHUNK", 16)
    sizes: list[int] = []
    real = os.read

    def read(fd: int, size: int) -> bytes:
        sizes.append(size)
        return real(fd, size)

    monkeypatch.setattr(os, "read", read)
    assert check_run("r1", layout.root).complete
    transcript = (layout.root / "audit/transcripts/r1.jsonl").stat().st_size
    assert transcript > 16
    assert sizes
    assert max(sizes) <= 16


def test_verify_reads_a_small_file_in_one_bounded_read(
    layout: StoreLayout, monkeypatch: pytest.MonkeyPatch
) -> None:
    sizes: list[int] = []
    real = os.read

    def read(fd: int, size: int) -> bytes:
        sizes.append(size)
        return real(fd, size)

    monkeypatch.setattr(os, "read", read)
    assert check_run("r1", layout.root).complete
    transcript = (layout.root / "audit/transcripts/r1.jsonl").stat().st_size
    assert transcript in sizes  # the whole file, in one read of its own size
    assert max(sizes) <= folderstore_module._CHUNK


def test_every_finding_code_is_documented() -> None:
    """Every code the run verifier emits (in its source, its judge's, the legacy module's,
    the chain judge's and the object-store findings module's) is in the typed list of
    codes, and that list is exactly the table in docs/format.md."""
    emitted: set[str] = set()
    modules = (
        run_reader_module,
        judge_module,
        legacy_module,
        run_chain_module,
        version_findings_module,
    )
    # ... and the flows' judgement of a captured run's two witnesses (transcript-diverges)
    flows_crosscheck = Path(str(run_reader_module.__file__)).parents[1] / "flows" / "_crosscheck.py"
    for source in [Path(str(m.__file__)).read_text() for m in modules] + [
        flows_crosscheck.read_text()
    ]:
        emitted |= set(re.findall(r'Finding\(\s*"([a-z-]+)"', source))
    assert len(emitted) >= 18
    typed = set(get_args(RunFindingCode))
    docs = (Path(__file__).resolve().parents[2] / "docs" / "format.md").read_text()
    documented = set(re.findall(r"^\| `([a-z-]+)` \| (?:error|warning) \|", docs, re.MULTILINE))
    assert emitted == typed == documented


def _verify_in_subprocess(store: Path) -> dict[str, Any]:
    # In a subprocess with a timeout: the failure this guards against is a hang.
    script = "import sys; from agc.cli.verify import main; sys.exit(main(sys.argv[1:]))"
    result = subprocess.run(
        [sys.executable, "-c", script, "r1", "--store", str(store), "--json"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == ExitCode.FINDINGS, result.stderr
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def test_fifo_in_place_of_a_sidecar_does_not_hang(layout: StoreLayout) -> None:
    sidecar = layout.artifact_path("r1", "transcript").with_name("r1.jsonl.b3")
    sidecar.unlink()
    os.mkfifo(sidecar)
    report = _verify_in_subprocess(layout.root)
    assert {f["code"] for f in report["findings"]} == {"sidecar-invalid"}


@pytest.mark.parametrize("what", ["fifo", "folder"])
def test_non_file_in_place_of_the_manifest(layout: StoreLayout, what: str) -> None:
    manifest = layout.manifest_path("r1")
    manifest.unlink()
    if what == "fifo":
        os.mkfifo(manifest)
    else:
        manifest.mkdir()
    report = _verify_in_subprocess(layout.root)
    assert "not-regular-file" in {f["code"] for f in report["findings"]}


def test_fifo_in_place_of_the_transcript(layout: StoreLayout) -> None:
    path = layout.artifact_path("r1", "transcript")
    path.unlink()
    os.mkfifo(path)
    report = _verify_in_subprocess(layout.root)
    assert {f["code"] for f in report["findings"]} == {"not-regular-file"}


@pytest.mark.parametrize("what", ["fifo", "folder", "symlink"])
def test_non_file_legacy_shared_tool_events_is_unreadable_not_a_hang(
    store: Path, what: str
) -> None:
    layout = _legacy_store(store)
    shared = layout.legacy_tool_events_path
    shared.unlink()
    if what == "fifo":
        os.mkfifo(shared)
    elif what == "folder":
        shared.mkdir()
    else:
        (store / "elsewhere.jsonl").write_text('{"run_id":"r1"}\n')
        shared.symlink_to(store / "elsewhere.jsonl")
    script = "import sys; from agc.cli.verify import main; sys.exit(main(sys.argv[1:]))"
    result = subprocess.run(
        [sys.executable, "-c", script, "r1", "--store", str(store)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode in {ExitCode.USAGE, ExitCode.UNREADABLE}, result.stderr
    assert "tool-events.jsonl" in result.stderr
    assert "Traceback" not in result.stderr
