"""Smoke tests for the benchmark harness: it runs, and every comparison is reported.

No assertion here is about speed (CONTRIBUTING: speed is shown in benchmarks/ as
ratios, never as a timed unit test).
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from benchmarks.data import RecordSizes, chat_history, record_sizes, tool_records
from benchmarks.harness import Timing, Variant, interleaved
from benchmarks.report import Section, Target, render_markdown, write_results
from benchmarks.run import README_END, README_START, main, parse_size, run_suite, update_readme
from benchmarks.suites import SUITES, Context

from benchmarks import harness, suites
from tests.conftest import REAL_FIXTURES, THOROUGH, require_shared

SIZES = RecordSizes(calls=(150, 160, 400), results=(120, 130, 6000), source="test")

EXPECTED_TARGETS = {
    "digest-1-thread",
    "digest-all-cores",
    "verify-command",
    "verify-1-record",
    "startup-help",
    "startup-resume-check",
    "startup-verify",
    "writer-vs-naive",
    "writer-write-2048",
    "writer-write-many-2048",
    "writer-write-150",
    "writer-write-many-150",
    "ingest-record",
    "ingest-import",
    "close-flat",
    "history-validate-linear",
    "history-repair-linear",
    "history-check-memory",
    "history-repair-memory",
    "ledger-record-2x",
    "ledger-long-line-memory",
    "ledger-long-line-vs-reference",
    "ledger-long-line-quotes",
    "bulk-command",
    "bulk-command-json",
    "bulk-linear",
    *(
        f"resume-{kind}-{action}-1000000{peak}"
        for kind in (
            "claude-code",
            "codex-rollout",
            "codex-rollout-interrupted-early",
            "codex-rollout-ids-twice",
            "codex-rollout-ids-reused",
            "claude-code-ids-twice",
            "gemini-chat",
        )
        for action in ("check", "repair")
        for peak in ("", "-peak")
    ),
}

# Each suite's own targets, in the order of SUITES: a quick run of one suite reports
# exactly its set, and the sets together are EXPECTED_TARGETS (one test each), so a run of
# every suite reports EXPECTED_TARGETS.
SUITE_TARGETS: dict[str, set[str]] = {
    "startup": {"startup-help", "startup-resume-check", "startup-verify"},
    "digest": {"digest-1-thread", "digest-all-cores"},
    "verify": {"verify-command", "verify-1-record"},
    "writer": {
        "writer-vs-naive",
        "writer-write-2048",
        "writer-write-many-2048",
        "writer-write-150",
        "writer-write-many-150",
    },
    "ingest": {"ingest-record", "ingest-import"},
    "close": {"close-flat"},
    "history": {
        "history-validate-linear",
        "history-repair-linear",
        "history-check-memory",
        "history-repair-memory",
    },
    "bulk": {"bulk-command", "bulk-command-json", "bulk-linear"},
    "store_all": set(),
    "ledger": {"ledger-record-2x"},
    "ledger_long_line": {
        "ledger-long-line-memory",
        "ledger-long-line-vs-reference",
        "ledger-long-line-quotes",
    },
    "resume_streaming": {
        f"resume-{kind}-{action}-1000000{peak}"
        for kind in (
            "claude-code",
            "codex-rollout",
            "codex-rollout-interrupted-early",
            "codex-rollout-ids-twice",
            "codex-rollout-ids-reused",
            "claude-code-ids-twice",
        )
        for action in ("check", "repair")
        for peak in ("", "-peak")
    },
    "resume_gemini": {
        f"resume-gemini-chat-{action}-1000000{peak}"
        for action in ("check", "repair")
        for peak in ("", "-peak")
    },
    "hook_capture": set(),
}


# The suites that look a command-line tool up on PATH (b3sum, sha256sum, the agc
# commands when not beside this Python): the quick run below checks this list.
TOOL_SUITES = ["digest", "verify", "ingest", "bulk"]


@pytest.fixture
def no_command_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    """The history suite without its rows for the ``agc resume`` commands (four process
    starts on a 10,000-message file): for the tests of how the suite calls a provided
    ``agc.resume`` function, which those rows do not call. The quick run and the
    markdown test keep them."""
    monkeypatch.setattr(suites, "memory_rows", lambda work, messages: ([], [], {}))


# The quick run's sizes in the harness's own tests, where the benchmark has a setting
# for them: the same code paths on smaller inputs (the thorough profile keeps the quick
# sizes). The store-wide suite seals 4 runs instead of 40, the bulk suite 10 instead of
# 100, the ledger's long line is 2 MB instead of 50 MB, the ledger's rollout 2,000 lines
# instead of 20,000, the ingest mix 1 MiB instead of 4 MiB (still several copies of the
# real transcripts), the history 2,000 messages (and 200) instead of 10,000 (and 1,000),
# each writer row 500 records instead of 2,000 to 10,000, and the hook suite's
# per-event rows take 1 round instead of 3.
SMALL_QUICK = {
    "AGC_BENCH_STORE_RUNS": "4",
    "AGC_BENCH_BULK_RUNS": "10",
    "AGC_BENCH_LONG_LINE_BYTES": str(2 * 10**6),
    "AGC_BENCH_LEDGER_LINES": "2000",
    "AGC_BENCH_INGEST_BYTES": str(1024**2),
    "AGC_BENCH_HISTORY_MESSAGES": "2000",
    "AGC_BENCH_HOOK_ROUNDS": "1",
    "AGC_BENCH_WRITER_RECORDS": "500",
}


def _quick_doc(tmp_path: Path, only: list[str], monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """A quick run of ``only``, with the sizes of SMALL_QUICK by default (a setting
    already in the environment wins); the thorough profile keeps the quick sizes."""
    if not THOROUGH:
        for name, value in SMALL_QUICK.items():
            if not os.environ.get(name):
                monkeypatch.setenv(name, value)
    return run_suite(
        quick=True,
        size=2 * 1024 * 1024,
        rounds=1,
        only=only,
        workdir=tmp_path,
        command="test",
    )


def _check_complete(doc: dict[str, Any], only: list[str]) -> None:
    assert [s["id"] for s in doc["sections"]] == only
    for section in doc["sections"]:
        assert {t["id"] for t in section["targets"]} == SUITE_TARGETS[section["id"]]
        if section["skipped"]:
            assert section["skipped"].strip()
            continue
        assert section["rows"], section["id"]
        for row in section["rows"]:
            measured = row["median_s"] is not None and row["median_s"] >= 0
            assert measured != bool(row["skipped"]), row
    assert doc["targets"] == [t for s in doc["sections"] for t in s["targets"]]
    for target in doc["targets"]:
        assert target["status"] in {"PASS", "FAIL", "SKIP"}
        if target["status"] == "SKIP":
            assert target["note"], target
        else:
            assert isinstance(target["value"], float)


def test_the_suites_targets_together_are_the_expected_targets() -> None:
    assert list(SUITE_TARGETS) == list(SUITES)
    together = [target for targets in SUITE_TARGETS.values() for target in targets]
    assert len(together) == len(set(together))  # no target in two suites
    assert set(together) == EXPECTED_TARGETS
    assert set(TOOL_SUITES) <= set(SUITES)
    assert list(MISSING_TOOL_ROWS) == list(MISSING_TOOL_SKIPS) == TOOL_SUITES


@pytest.mark.parametrize("name", list(SUITES))
def test_quick_run_reports_every_comparison_or_its_skip(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    looked_up: list[str] = []
    monkeypatch.setitem(SUITES, name, _noting(name, SUITES[name], looked_up, monkeypatch))
    doc = _quick_doc(tmp_path, [name], monkeypatch)
    _check_complete(doc, [name])
    assert doc["machine"]["cpu"]["usable_cores"] >= 1
    assert doc["machine"]["packages"]["blake3"]
    assert list(tmp_path.iterdir()) == []  # the scratch folder is removed
    assert (name in looked_up) == (name in TOOL_SUITES)


def _noting(
    name: str,
    bench: Callable[[Context], Section],
    looked_up: list[str],
    monkeypatch: pytest.MonkeyPatch,
) -> Callable[[Context], Section]:
    """``bench``, adding ``name`` to ``looked_up`` when it calls ``suites.find_tool``."""
    real = harness.find_tool  # what suites.find_tool is

    def find_tool(tool: str) -> str | None:
        looked_up.append(name)
        return real(tool)

    def run(ctx: Context) -> Section:
        with monkeypatch.context() as patch:
            patch.setattr(suites, "find_tool", find_tool)
            return bench(ctx)

    return run


# With no tool on PATH: the rows of each tool suite skipped for it, and the targets
# that compare with a tool (SKIP).
MISSING_TOOL_ROWS = {
    "digest": ("b3sum --num-threads 1", "b3sum", "sha256sum"),
    "verify": ("b3sum --check",),
    "ingest": ("tee FILE + b3sum (pipe)",),
    "bulk": ("b3sum --check, all sidecars",),
}
MISSING_TOOL_SKIPS = {
    "digest": ("digest-1-thread", "digest-all-cores"),
    "verify": ("verify-command",),
    "ingest": (),
    "bulk": ("bulk-command", "bulk-command-json"),
}


# By default only the suites that look a tool up (no other suite can change when a tool
# is missing), one test each; every suite in the thorough profile.
@pytest.mark.parametrize("name", list(SUITES) if THOROUGH else TOOL_SUITES)
def test_missing_tools_are_skipped_with_a_reason(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(suites, "find_tool", lambda name: None)
    doc = _quick_doc(tmp_path, [name], monkeypatch)
    _check_complete(doc, [name])
    rows = {r["name"]: r for s in doc["sections"] for r in s["rows"]}
    for row in MISSING_TOOL_ROWS.get(name, ()):
        assert "not found on PATH" in rows[row]["skipped"]
    targets = {t["id"]: t for t in doc["targets"]}
    for target in MISSING_TOOL_SKIPS.get(name, ()):
        assert targets[target]["status"] == "SKIP"


def test_history_benchmark_skips_clearly_without_the_resume_api(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = "agc.resume has no check_history() and no repair_history()/repair() yet"
    monkeypatch.setattr(suites, "_resume_functions", lambda: ({}, missing))
    doc = run_suite(
        quick=True, size=2 * 1024 * 1024, rounds=1, only=["history"], workdir=tmp_path, command="t"
    )
    section = doc["sections"][0]
    assert "check_history" in section["skipped"]
    assert all(t["status"] == "SKIP" for t in doc["targets"])


@pytest.mark.usefixtures("no_command_rows")
def test_history_benchmark_measures_a_provided_api(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[tuple[int, str]] = []

    def check_history(messages: list[dict[str, Any]], format: str) -> None:
        seen.append((len(messages), format))

    monkeypatch.setattr(
        suites, "_resume_functions", lambda: ({"check_history": check_history}, None)
    )
    doc = run_suite(
        quick=True, size=2 * 1024 * 1024, rounds=1, only=["history"], workdir=tmp_path, command="t"
    )
    targets = {t["id"]: t for t in doc["targets"]}
    assert targets["history-validate-linear"]["status"] in {"PASS", "FAIL"}
    assert targets["history-repair-linear"]["status"] == "SKIP"
    assert {count for count, _ in seen} == {1_000, 10_000}
    assert {fmt for _, fmt in seen} == {"openai-chat"}
    rows = doc["sections"][0]["rows"]
    assert all(r["peak_bytes"] is not None for r in rows if not r["skipped"])


def test_main_writes_json_and_markdown(tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = ["--quick", "--size", "2MiB", "--rounds", "1", "--only", "digest,close"]
    code = main([*args, "--out", str(out), "--workdir", str(tmp_path)])
    assert code == 0
    doc = json.loads((out / "quick.json").read_text())
    markdown = (out / "quick.md").read_text()
    assert doc["config"]["benchmarks"] == ["digest", "close"]
    for section in doc["sections"]:
        assert section["title"] in markdown
    for target in doc["targets"]:
        assert target["text"] in markdown
    assert "python -m benchmarks --quick" in markdown


def test_main_rejects_an_unknown_benchmark(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--only", "nope"])
    assert exc.value.code == 2
    assert "unknown benchmark" in capsys.readouterr().err


def test_main_rejects_a_missing_workdir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "absent"
    with pytest.raises(SystemExit) as exc:
        main(["--quick", "--only", "digest", "--out", str(tmp_path), "--workdir", str(missing)])
    assert exc.value.code == 2
    assert f"--workdir {missing}: no such folder" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())  # refused before any suite ran or wrote


@pytest.mark.parametrize(
    ("text", "size"),
    [("1GiB", 1024**3), ("256MiB", 256 * 1024**2), ("64MB", 64_000_000), ("2000000", 2_000_000)],
)
def test_parse_size(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "1TB", "x", "12kb", "-1G"])
def test_parse_size_rejects(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        parse_size(text)


def test_interleaved_rotates_order_and_takes_the_median() -> None:
    calls: list[str] = []

    def runner(name: str, seconds: float) -> Variant:
        def run() -> float:
            calls.append(name)
            return seconds

        return Variant(name, run)

    variants = [runner("a", 3.0), runner("b", 1.0)]
    timings = interleaved(variants, rounds=3)
    assert calls == ["a", "b", "a", "b", "b", "a", "a", "b"]
    assert timings["a"] == Timing((3.0, 3.0, 3.0))
    assert timings["b"].median == 1.0


def test_command_variant_refuses_a_failing_command() -> None:
    false = harness.find_tool("false")
    if false is None:
        pytest.skip("`false` not on PATH")
    with pytest.raises(RuntimeError, match="exited 1"):
        harness.command_variant("false", [false]).once()


@pytest.mark.parametrize(
    ("value", "op", "status"),
    [(0.95, ">=", "PASS"), (0.85, ">=", "FAIL"), (1.9, "<=", "PASS"), (2.1, "<=", "FAIL")],
)
def test_target_judgement(value: float, op: str, status: str) -> None:
    threshold = 0.9 if op == ">=" else 2.0
    target = Target.judge("t", "text", value, threshold=threshold, op=op)  # type: ignore[arg-type]
    assert target.status == status
    assert Target.judge("t", "text", None, threshold=1, op=">=").status == "SKIP"


def test_generated_records_are_deterministic_and_sized_like_the_sample() -> None:
    first = tool_records(200, SIZES)
    assert first == tool_records(200, SIZES)
    assert first != tool_records(200, SIZES, seed=1)
    assert [r["type"] for r in first[:4]] == ["tool_call", "tool_result"] * 2
    assert first[1]["call_id"] == first[0]["call_id"]
    lengths = [len(json.dumps(r, separators=(",", ":"), ensure_ascii=False)) for r in first]
    assert max(lengths) > 2000  # the 6000-byte result size is drawn
    assert min(lengths) < 300


def test_chat_history_has_the_requested_length_and_a_call_in_flight() -> None:
    history = chat_history(1000)
    assert len(history) == 1000
    assert history[-1]["tool_calls"][0]["id"] == "call_in_flight"
    answered = {m["tool_call_id"] for m in history if m["role"] == "tool"}
    assert "call_in_flight" not in answered


def test_record_sizes_come_from_the_real_fixtures() -> None:
    require_shared(REAL_FIXTURES)
    sizes = record_sizes()
    assert "real fixtures" in sizes.source
    assert len(sizes.calls) > 10
    assert len(sizes.results) > 10


def test_record_sizes_fall_back_when_fixtures_are_absent(tmp_path: Path) -> None:
    sizes = record_sizes(tmp_path / "absent")
    assert "fallback" in sizes.source
    assert sizes.summary()["calls"]["count"] == 200


def test_markdown_renders_skipped_rows_and_sections(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The history suite as it runs (rows with peak memory), the digest suite with no tool
    # on PATH (skipped rows), then the history suite without the resume API (a skipped
    # section).
    monkeypatch.setattr(suites, "find_tool", lambda name: None)
    measured = _quick_doc(tmp_path, ["history", "digest"], monkeypatch)
    missing = "agc.resume has no check_history() and no repair_history()/repair() yet"
    monkeypatch.setattr(suites, "_resume_functions", lambda: ({}, missing))
    skipped = _quick_doc(tmp_path, ["history"], monkeypatch)
    for name, doc in (("measured", measured), ("skipped", skipped)):
        doc["command"] = f"c {name}"
        json_path, md_path = write_results(doc, tmp_path / "r", name)
        assert json.loads(json_path.read_text())["command"] == f"c {name}"
        assert md_path.read_text() == render_markdown(doc)
    text = (tmp_path / "r" / "measured.md").read_text()
    assert "| sha256sum | skipped: `sha256sum` not found on PATH" in text
    assert any(r["peak_bytes"] for r in measured["sections"][0]["rows"])
    assert " MiB |" in text  # the peak memory of a measured row
    assert f"SKIPPED: {missing}" in (tmp_path / "r" / "skipped.md").read_text()


def test_update_readme_replaces_only_the_marked_section(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(f"# top\n\n## Performance\n\n{README_START}\nold\n{README_END}\n\nafter\n")
    assert update_readme(readme, "| new |\n")
    assert readme.read_text() == (
        f"# top\n\n## Performance\n\n{README_START}\n| new |\n{README_END}\n\nafter\n"
    )
    assert update_readme(readme, "| newer |")
    assert "| new |\n" not in readme.read_text()


def test_update_readme_refuses_a_file_without_markers(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("# top\n")
    assert not update_readme(readme, "x")
    assert readme.read_text() == "# top\n"


def test_the_real_readme_keeps_its_top_and_has_the_markers() -> None:
    text = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    lines = text.splitlines()
    assert (
        lines[3]
        == "make demo   # creates .venv, installs agc, runs the main job on a built-in example"
    )
    assert lines[4].startswith("make test ")
    assert text.index("## Performance") < text.index(README_START) < text.index(README_END)


@pytest.mark.usefixtures("no_command_rows")
def test_history_benchmark_passes_a_keyword_only_format_and_a_fresh_list(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[str] = []

    def repair_history(messages: list[dict[str, Any]], *, format: str) -> None:
        seen.append(format)
        messages.clear()  # must not change what the next round gets

    monkeypatch.setattr(
        suites, "_resume_functions", lambda: ({"repair_history": repair_history}, None)
    )
    doc = run_suite(
        quick=True, size=2 * 1024 * 1024, rounds=1, only=["history"], workdir=tmp_path, command="t"
    )
    targets = {t["id"]: t for t in doc["targets"]}
    assert targets["history-repair-linear"]["status"] in {"PASS", "FAIL"}
    assert targets["history-validate-linear"]["status"] == "SKIP"
    assert set(seen) == {"openai-chat"}


@pytest.mark.usefixtures("no_command_rows")
def test_history_benchmark_reports_an_api_that_raises(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def check_history(messages: list[dict[str, Any]], format: str) -> None:
        raise ValueError(f"unknown format {format}")

    monkeypatch.setattr(
        suites, "_resume_functions", lambda: ({"check_history": check_history}, None)
    )
    doc = run_suite(
        quick=True, size=2 * 1024 * 1024, rounds=1, only=["history"], workdir=tmp_path, command="t"
    )
    rows = doc["sections"][0]["rows"]
    assert all((r["median_s"] is not None) != bool(r["skipped"]) for r in rows)
    assert any(
        "raised ValueError: unknown format openai-chat" in (r["skipped"] or "") for r in rows
    )
    targets = {t["id"]: t for t in doc["targets"]}
    assert targets["history-validate-linear"]["status"] == "SKIP"
    assert "raised ValueError" in targets["history-validate-linear"]["note"]
