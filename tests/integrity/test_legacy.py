"""Tests for agc.integrity._legacy: the shared tool-events file is never verified evidence.

The attack: whoever can write the store appends records to the legacy shared
``audit/tool-events.jsonl`` in the name of a run that verifies. Nothing covers that file
with a digest, so its records must be reported as unverified and never be merged into
the run's tool events, whatever run ids and how many records the file holds.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agc._core.sidecar import parse_sidecar
from agc._core.store import ArtifactKind, StoreLayout
from agc.cli import verify as verify_cli
from agc.errors import RunIdInvalidError
from agc.integrity import check_run, check_store, read_legacy_tool_events, read_tool_events
from agc.integrity._legacy import LegacyRun
from agc.integrity._verify import ArtifactObservation, judge_artifact
from tests.conftest import examples, finding_codes, write_run

REACHES_INSIDE = {
    "agc.integrity._legacy": "the legacy-run judge (LegacyRun) on hand-built findings",
    "agc.integrity._verify": "judges one artifact observation directly (judge_artifact)",
}

OWN_EVENTS = [{"event": "tool_call_start", "call_id": "c1"}, {"event": "tool_call_end"}]


def _append_shared(layout: StoreLayout, records: list[dict[str, Any]]) -> None:
    layout.legacy_tool_events_path.parent.mkdir(parents=True, exist_ok=True)
    with layout.legacy_tool_events_path.open("a") as handle:
        handle.writelines(json.dumps(r) + "\n" for r in records)


def _unverified(report: Any) -> list[Any]:
    return [f for f in report.findings if f.code == "unverified-records"]


def test_forged_shared_records_are_reported_and_not_merged(store: Path) -> None:
    layout = write_run(store, "r1", tool_events=OWN_EVENTS)
    own = list(read_tool_events("r1", store))
    _append_shared(layout, [{"run_id": "r1", "tool": "rm -rf /", "forged": True}] * 3)

    report = check_run("r1", store)

    # The run's own sealed evidence still verifies; the forged records are named.
    assert report.complete
    [finding] = _unverified(report)
    assert finding.severity == "warning"
    assert finding.artifact == "tool-events"
    assert finding.actual == {"records": 3}
    events = next(a for a in report.artifacts if a.kind == "tool-events")
    assert events.records == len(OWN_EVENTS)
    assert list(read_tool_events("r1", store)) == own
    assert all("forged" not in record for record in read_tool_events("r1", store))


def test_records_of_other_runs_are_not_reported_for_this_run(store: Path) -> None:
    layout = write_run(store, "r1")
    _append_shared(layout, [{"run_id": "r2", "tool": "x"}, {"tool": "no run id"}])
    report = check_run("r1", store)
    assert report.findings == ()


@settings(
    max_examples=examples(30),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    names=st.lists(st.sampled_from(["r1", "r2", "R1", "r1 ", "", None]), max_size=12),
    junk=st.lists(st.sampled_from([b"not json\n", b"[1]\n", b"\n", b'{"run_id":"r1"'])),
)
def test_any_shared_file_is_counted_exactly_and_never_merged(
    tmp_path_factory: pytest.TempPathFactory, names: list[str | None], junk: list[bytes]
) -> None:
    store = tmp_path_factory.mktemp("store")
    layout = write_run(store, "r1", tool_events=OWN_EVENTS)
    own = list(read_tool_events("r1", store))
    records = [{"run_id": name, "n": index} for index, name in enumerate(names)]
    _append_shared(layout, records)
    with layout.legacy_tool_events_path.open("ab") as handle:
        handle.writelines(junk)  # damaged lines are not records of any run

    report = check_run("r1", store)

    expected = [r for r in records if r["run_id"] == "r1"]
    assert report.complete
    assert [f.actual for f in _unverified(report)] == (
        [{"records": len(expected)}] if expected else []
    )
    assert list(read_tool_events("r1", store)) == own
    assert [r["n"] for r in read_legacy_tool_events("r1", store)] == [r["n"] for r in expected]


def _legacy_run(store: Path, *, own_tool_events: bool) -> StoreLayout:
    """A legacy run: digest-only .sha256 sidecars, no manifest."""
    layout = StoreLayout(store)
    kinds: tuple[ArtifactKind, ...] = (
        ("transcript", "tool-events") if own_tool_events else ("transcript",)
    )
    for kind in kinds:
        path = layout.artifact_path("r1", kind)
        path.parent.mkdir(parents=True, exist_ok=True)
        data = b'{"run_id":"r1","ts":1}\n{"run_id":"r1","ts":2}\n'
        path.write_bytes(data)
        path.with_name("r1.jsonl.sha256").write_text(hashlib.sha256(data).hexdigest())
    return layout


def test_legacy_run_with_its_own_tool_events_still_reports_the_shared_ones(store: Path) -> None:
    layout = _legacy_run(store, own_tool_events=True)
    _append_shared(layout, [{"run_id": "r1", "tool": "x"}])
    report = check_run("r1", store)
    assert report.complete
    assert report.legacy
    assert finding_codes(report) == {"legacy-format", "unverified-records"}
    assert [a.records for a in report.artifacts] == [2, 2]  # the own, sealed files only
    assert [f.actual for f in _unverified(report)] == [{"records": 1}]


def test_legacy_run_tool_events_only_in_the_shared_file_are_not_verified(store: Path) -> None:
    layout = _legacy_run(store, own_tool_events=False)
    _append_shared(layout, [{"run_id": "r1", "tool": "x"}] * 2)
    report = check_run("r1", store)
    events = next(a for a in report.artifacts if a.kind == "tool-events")
    assert (events.records, events.digest, events.bytes) == (None, None, None)
    assert [f.actual for f in _unverified(report)] == [{"records": 2}]
    assert list(read_tool_events("r1", store)) == []
    assert len(list(read_legacy_tool_events("r1", store))) == 2


def test_json_and_human_output_name_the_unverified_records(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    layout = write_run(store, "r1")
    _append_shared(layout, [{"run_id": "r1"}])
    assert verify_cli.main(["r1", "--store", str(store), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [f["code"] for f in data["findings"]] == ["unverified-records"]
    assert data["findings"][0]["severity"] == "warning"
    assert verify_cli.main(["r1", "--store", str(store)]) == 0
    out = capsys.readouterr().out
    assert "warning: 1 tool-event record(s) for this run in the legacy shared" in out


def test_store_check_keeps_the_warning_on_the_run(store: Path) -> None:
    layout = write_run(store, "r1")
    write_run(store, "r2")
    _append_shared(layout, [{"run_id": "r2"}])
    report = check_store(store)
    assert report.complete
    by_run = {run.run_id: finding_codes(run) for run in report.runs}
    assert by_run == {"r1": set(), "r2": {"unverified-records"}}


def test_read_legacy_tool_events_checks_the_run_id(store: Path) -> None:
    with pytest.raises(RunIdInvalidError):
        list(read_legacy_tool_events("../r1", store))


def test_judge_replaces_missing_only_when_the_shared_file_holds_records(tmp_path: Path) -> None:
    absent = ArtifactObservation("tool-events", tmp_path / "r1.jsonl", "absent")
    missing = judge_artifact(absent, seal=None)
    assert [f.code for f in missing] == ["missing"]
    assert LegacyRun(shared_records=2).judge(absent, missing) == []
    assert LegacyRun(shared_records=0).judge(absent, missing) == missing


def test_judge_warns_about_a_counted_legacy_sidecar(tmp_path: Path) -> None:
    sidecar = parse_sidecar(b"0" * 64, algorithm="sha256")
    obs = ArtifactObservation(
        "transcript",
        tmp_path / "r1.jsonl",
        "file",
        algorithm="sha256",
        sidecars={"sha256": sidecar},
    )
    [finding] = LegacyRun(shared_records=0).judge(obs, [])
    assert (finding.code, finding.severity, finding.artifact) == (
        "legacy-format",
        "warning",
        "transcript",
    )
