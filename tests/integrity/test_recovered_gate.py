"""A run ``agc recover`` sealed with bytes no crash checkpoint vouched for is
``recovered``: it fails the gate unless recovered runs are allowed, in ``check_run``,
``agc-verify`` (one run and ``--all``), the report and ``agc runs`` alike; with every
byte vouched for it passes with a warning."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from agc._core.store import StoreLayout
from agc.cli.app import main as agc_main
from agc.cli.verify import main as verify_cli
from agc.integrity import (
    ToolEventWriter,
    TranscriptWriter,
    build_audit,
    check_run,
    check_store,
    list_runs,
    read_manifest,
    recover_run,
)
from tests.integrity.evidence_helpers import records, transcript_path
from tests.integrity.test_expect_head_attacks import relink

# Kills and disk faults: os.fsync stays real here (tests/conftest.py, _fsync_off).
pytestmark = pytest.mark.real_fsync

RUN = "crashed"


def _killed_run(store: Path, *, count: int, every: int) -> bytes:
    """A child writes ``count`` records (a checkpoint every ``every``, no time trigger)
    to both artifacts, then is killed with SIGKILL; returns the transcript's bytes."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        try:
            transcript = TranscriptWriter(
                RUN, store=store, checkpoint_records=every, checkpoint_interval_ms=0
            )
            events = ToolEventWriter(
                RUN, store=store, checkpoint_records=every, checkpoint_interval_ms=0
            )
            for record in records(5, count):
                transcript.write(record)
                events.write({"tool": "shell", "n": record["content"][:12]})
            transcript.flush()
            events.flush()
            os.kill(os.getpid(), signal.SIGKILL)
        finally:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == -signal.SIGKILL
    return transcript_path(store, RUN).read_bytes()


def _recovered(report: Any) -> Any:
    return next(f for f in report.findings if f.code == "recovered" and f.artifact == "transcript")


def test_kill_9_before_the_first_checkpoint_is_recovered_and_fails_the_gate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    written = _killed_run(tmp_path, count=40, every=1000)
    recovery = recover_run(RUN, tmp_path)
    assert recovery.artifacts[0].verified_bytes == 0
    manifest = read_manifest(StoreLayout.at(tmp_path), RUN)
    assert manifest is not None
    seal = manifest.artifacts["transcript"]
    assert seal.unvouched == (len(written), 40)

    report = check_run(RUN, tmp_path)
    assert not report.complete
    finding = _recovered(report)
    assert finding.severity == "error"
    assert finding.actual["unverified_bytes"] == len(written)
    assert finding.actual["unverified_records"] == 40
    assert f"{len(written)} bytes (40 records) were never vouched for" in finding.message

    allowed = check_run(RUN, tmp_path, allow_recovered=True)
    assert allowed.complete
    assert _recovered(allowed).severity == "warning"

    assert verify_cli([RUN, "--store", str(tmp_path)]) == 1
    assert "never vouched for" in capsys.readouterr().out
    assert verify_cli([RUN, "--store", str(tmp_path), "--allow-recovered"]) == 0
    assert verify_cli(["--all", "--store", str(tmp_path)]) == 1
    assert verify_cli(["--all", "--store", str(tmp_path), "--allow-recovered"]) == 0
    capsys.readouterr()

    # --all, the report and agc runs agree with check_run.
    store_report = check_store(tmp_path)
    assert not next(r for r in store_report.runs if r.run_id == RUN).complete
    assert check_store(tmp_path, allow_recovered=True).complete
    assert not build_audit(tmp_path, generated_ms=0).complete
    assert build_audit(tmp_path, generated_ms=0, allow_recovered=True).complete
    assert not build_audit(tmp_path, [RUN], generated_ms=0).runs[0].report.complete
    assert [r.state for r in list_runs(tmp_path)] == ["recovered"]
    assert agc_main(["runs", "--store", str(tmp_path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["runs"][0]["state"] == "recovered"


def test_a_recovered_file_is_a_failing_artifact_in_text_json_and_quiet(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The file's seal matches, but its unvouched bytes fail the run: its entry is not ok
    (JSON), its text line is FAIL with the reason (never OK above a failing reason), and
    --quiet, which prints only what failed, names it; allowed, it is an OK line again."""
    _killed_run(tmp_path, count=40, every=1000)
    recover_run(RUN, tmp_path)
    entries = {a.kind: a for a in check_run(RUN, tmp_path).artifacts}
    assert not entries["transcript"].ok
    assert [f.code for f in entries["transcript"].findings] == ["recovered"]
    assert all(a.ok for a in check_run(RUN, tmp_path, allow_recovered=True).artifacts)

    assert verify_cli([RUN, "--store", str(tmp_path), "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert {a["kind"]: a["ok"] for a in data["artifacts"]}["transcript"] is False
    for argv in ([], ["--quiet"]):
        assert verify_cli([RUN, "--store", str(tmp_path), *argv]) == 1
        lines = capsys.readouterr().out.splitlines()
        assert any(
            line.startswith("FAIL transcript   recovered: ") and "never vouched for" in line
            for line in lines
        ), lines
        assert not any(line.startswith("OK   transcript") for line in lines), lines
    assert verify_cli([RUN, "--store", str(tmp_path), "--allow-recovered"]) == 0
    assert capsys.readouterr().out.startswith("OK   transcript")


def test_a_run_whose_every_byte_a_checkpoint_vouched_for_passes_with_a_warning(
    tmp_path: Path,
) -> None:
    _killed_run(tmp_path, count=40, every=10)  # checkpoints at 10, 20, 30, 40 records
    recover_run(RUN, tmp_path)
    report = check_run(RUN, tmp_path)
    assert report.complete, report.missing
    finding = _recovered(report)
    assert finding.severity == "warning"
    assert finding.actual["unverified_bytes"] == 0
    assert [r.state for r in list_runs(tmp_path)] == ["sealed"]
    # The checkpoints that vouched for the bytes are kept: a later change is located.
    path = transcript_path(tmp_path, RUN)
    data = bytearray(path.read_bytes())
    data[data.index(b"message 25 ") + 2] ^= 1  # line 26
    path.write_bytes(bytes(data))
    modified = next(f for f in check_run(RUN, tmp_path).findings if f.code == "modified")
    assert modified.lines == (21, 30)


def test_part_vouched_for_counts_only_the_tail_after_the_last_checkpoint(tmp_path: Path) -> None:
    written = _killed_run(tmp_path, count=45, every=20)  # checkpoints at 20 and 40
    recover_run(RUN, tmp_path)
    seal = read_manifest(StoreLayout.at(tmp_path), RUN).artifacts["transcript"]  # type: ignore[union-attr]
    forty = sum(len(line) + 1 for line in written.split(b"\n")[:40])
    assert seal.unvouched == (len(written) - forty, 5)


def test_the_unvouched_count_survives_a_re_open(tmp_path: Path) -> None:
    """A new segment is vouched for by its own seal; what recovery could not vouch for
    stays unvouched (re-opening never launders a recovered file)."""
    written = _killed_run(tmp_path, count=12, every=1000)
    recover_run(RUN, tmp_path)
    with TranscriptWriter(RUN, store=tmp_path, reopen=True) as writer:
        writer.write({"role": "user", "content": "resumed"})
    seal = read_manifest(StoreLayout.at(tmp_path), RUN).artifacts["transcript"]  # type: ignore[union-attr]
    assert seal.recovered
    assert seal.unvouched == (len(written), 12)
    assert not check_run(RUN, tmp_path).complete
    assert check_run(RUN, tmp_path, allow_recovered=True).complete


def test_an_old_recovered_manifest_without_counts_fails_and_says_why(tmp_path: Path) -> None:
    """A recovery recorded before the counts were kept: nothing is known to be vouched
    for, so it is strict (an error naming the reason) and --allow-recovered passes it."""
    _killed_run(tmp_path, count=40, every=10)
    recover_run(RUN, tmp_path)
    path = tmp_path / f"audit/manifests/{RUN}.json"
    document = json.loads(path.read_bytes())
    for entry in document["artifacts"].values():
        entry.pop("unverified_bytes")
        entry.pop("unverified_records")
        entry.pop("checkpoints", None)
    path.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")
    relink(tmp_path, [RUN])  # as that release linked it: the chain names this manifest
    report = check_run(RUN, tmp_path)
    finding = _recovered(report)
    assert finding.severity == "error"
    assert "earlier release" in finding.message
    assert check_run(RUN, tmp_path, allow_recovered=True).complete
    assert [r.state for r in list_runs(tmp_path)] == ["recovered"]
