"""The verify section's floor rows do the work of ``b3sum --check`` (and, for the json
floor, the manifest's digest check too), no less."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from benchmarks.suites import _PYTHON_FLOOR_SCRIPT, _PYTHON_JSON_FLOOR_SCRIPT

from agc._core.digest import digest_fd


def _run(script: str, folder: Path, *args: str) -> int:
    """The exit status of a floor row's script run as the benchmark runs it."""
    return subprocess.run([sys.executable, "-c", script, *args], cwd=folder, check=False).returncode


def _floor(folder: Path, name: str) -> int:
    return _run(_PYTHON_FLOOR_SCRIPT, folder, name)


@pytest.mark.parametrize("size", [1, 5000, (16 << 20) + 3])
def test_floor_script_accepts_a_file_that_matches_its_sidecar_and_refuses_one_byte_changed(
    tmp_path: Path, size: int
) -> None:
    path = tmp_path / "run.jsonl"
    data = bytearray(b"x" * (size - 1) + b"\n")
    path.write_bytes(data)
    with path.open("rb") as handle:
        digest, _ = digest_fd(handle, "blake3")
    (tmp_path / "run.jsonl.b3").write_text(f"{digest}  run.jsonl\n", encoding="ascii")
    assert _floor(tmp_path, "run.jsonl") == 0
    data[size // 2] ^= 1
    path.write_bytes(data)
    assert _floor(tmp_path, "run.jsonl") == 1


def _json_floor(folder: Path, name: str, manifest: Path) -> int:
    return _run(_PYTHON_JSON_FLOOR_SCRIPT, folder, name, str(manifest))


@pytest.mark.parametrize("size", [1, (16 << 20) + 3])
def test_json_floor_script_checks_the_sidecar_and_the_manifest(tmp_path: Path, size: int) -> None:
    path = tmp_path / "run.jsonl"
    data = bytearray(b"x" * (size - 1) + b"\n")
    path.write_bytes(data)
    with path.open("rb") as handle:
        digest, _ = digest_fd(handle, "blake3")
    (tmp_path / "run.jsonl.b3").write_text(f"{digest}  run.jsonl\n", encoding="ascii")
    manifest = tmp_path / "run.json"

    def seal(digest: str, size: int) -> None:
        sealed = {"digest": digest, "bytes": size, "algorithm": "blake3"}
        manifest.write_text(json.dumps({"artifacts": {"transcript": sealed}}), encoding="utf-8")

    seal(digest, size)
    assert _json_floor(tmp_path, "run.jsonl", manifest) == 0
    seal("0" * 64, size)  # the manifest disagrees with the sidecar and the bytes
    assert _json_floor(tmp_path, "run.jsonl", manifest) == 1
    seal(digest, size + 1)  # the manifest's length disagrees
    assert _json_floor(tmp_path, "run.jsonl", manifest) == 1
    seal(digest, size)
    data[size // 2] ^= 1
    path.write_bytes(data)
    assert _json_floor(tmp_path, "run.jsonl", manifest) == 1


def test_the_flat_memory_target_judges_the_large_peak_against_the_small_one() -> None:
    from benchmarks.resume_streaming import flat_target  # noqa: PLC0415

    sizes = [100_000_000, 1_000_000_000]
    flat = flat_target(
        "codex-rollout", "check", sizes, {sizes[0]: 36_000_000, sizes[1]: 45_000_000}
    )
    grows = flat_target(
        "codex-rollout", "check", sizes, {sizes[0]: 36_000_000, sizes[1]: 90_000_000}
    )
    assert [(t.status, t.value) for t in flat] == [("PASS", 9.0)]
    assert [(t.status, t.value) for t in grows] == [("FAIL", 54.0)]
    assert flat_target("codex-rollout", "check", sizes[:1], {sizes[0]: 1}) == []


def test_the_rollout_with_every_call_id_twice_breaks_two_rules_per_call(
    tmp_path: Path,
) -> None:
    from agc.resume import check_loaded, scan_session  # noqa: PLC0415
    from benchmarks import resume_streaming  # noqa: PLC0415

    try:
        resume_streaming.make_codex_rollout_ids_twice(tmp_path / "twice.jsonl", 300_000)
    except RuntimeError as exc:  # no real fixtures here
        pytest.skip(str(exc))
    report = check_loaded(scan_session(tmp_path / "twice.jsonl", source="twice", format=None))
    # every second call reuses the id of the one before; the last call is in flight, as
    # in every shape of the suite
    half = report.calls // 2
    assert report.code_counts() == {
        "duplicate-call-id": half,
        "duplicate-tool-result": half,
        "tool-call-unanswered": 1,
    }
    assert report.calls > 100


def test_the_streaming_benchmark_measures_a_rollout_interrupted_early(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from types import SimpleNamespace  # noqa: PLC0415

    from agc.resume import check_loaded, scan_session  # noqa: PLC0415
    from benchmarks import resume_streaming  # noqa: PLC0415

    kind = "codex-rollout-interrupted-early"
    make = resume_streaming.MAKERS[kind]
    try:
        make(tmp_path / "probe.jsonl", 200_000)
    except RuntimeError as exc:  # no real fixtures here
        pytest.skip(str(exc))
    probe = scan_session(tmp_path / "probe.jsonl", source="probe", format=None)
    findings = check_loaded(probe).findings
    # One problem, on line 2 (after session_meta): the call never answered.
    assert [(f.code, f.call_id, f.record) for f in findings] == [
        ("tool-call-unanswered", "call_interrupted", 1)
    ]
    monkeypatch.setattr(resume_streaming, "MAKERS", {kind: make})
    work = tmp_path / "work"
    work.mkdir()
    section = resume_streaming.bench_resume_streaming(
        SimpleNamespace(quick=True, rounds=1, work=work)
    )
    rows = {row.name: row for row in section.rows}
    for label in ("json.loads loop", "agc resume check", "agc resume repair"):
        row = rows[f"{kind} 1,000,000 B: {label}"]
        assert row.skipped is None
        assert row.peak_bytes > 0
    assert {t.id for t in section.targets} == {
        f"resume-{kind}-{label}-1000000{peak}"
        for label in ("check", "repair")
        for peak in ("", "-peak")
    }
