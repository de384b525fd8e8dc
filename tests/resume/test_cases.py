"""Every broken-history case in ../shared/cases/resume/, under both strategies.

Each case's ``expect`` facts are asserted for the strategy they name; ``valid_after``
and the invariants (real results kept, never replaced) are asserted for both.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agc.resume import (
    FormatName,
    RepairResult,
    Strategy,
    ToolCallState,
    check_history,
    repair_history,
)
from tests.resume.helpers import RESUME_CASES, blocks, need, shared_params, view

CASES = shared_params(RESUME_CASES, "*.json")


def _load(path: Path) -> dict[str, Any]:
    case: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return case


def _run(case: dict[str, Any], strategy: Strategy) -> RepairResult:
    state = case.get("toolCallState") or {}
    return repair_history(
        case["messages"],
        case["format"],
        strategy=strategy,
        tool_call_state=ToolCallState(bool(state.get("inFlight")), state.get("pendingToolCallId")),
    )


Fact = Callable[[dict[str, Any], RepairResult, Any], None]


def _stripped(case: dict[str, Any], result: RepairResult, want: Any) -> None:
    assert sorted(result.report.ids("stripped")) == sorted(want)


def _synthesized(case: dict[str, Any], result: RepairResult, want: Any) -> None:
    assert sorted(result.report.ids("synthesized")) == sorted(want)
    synthetic = [b.call_id for b in blocks(result.messages, case["format"], "result")]
    for call_id in want:
        assert call_id in synthetic


def _kept_results(case: dict[str, Any], result: RepairResult, want: Any) -> None:
    before = {b.call_id: b.raw for b in blocks(case["messages"], case["format"], "result")}
    after = {b.call_id: b.raw for b in blocks(result.messages, case["format"], "result")}
    for call_id in want:
        assert after[call_id] == before[call_id], f"real result of {call_id} not kept"


def _no_orphans(case: dict[str, Any], result: RepairResult, want: Any) -> None:
    report = check_history(result.messages, case["format"])
    orphans = [f for f in report.findings if f.code == "orphan-tool-result"]
    assert (not orphans) is want


def _results_for(case: dict[str, Any], result: RepairResult, want: Any) -> None:
    counts = Counter(b.call_id for b in blocks(result.messages, case["format"], "result"))
    assert {call_id: counts[call_id] for call_id in want} == want


def _messages_after(case: dict[str, Any], result: RepairResult, want: Any) -> None:
    assert len(result.messages) == want


def _unanswered_after(case: dict[str, Any], result: RepairResult, want: Any) -> None:
    report = check_history(result.messages, case["format"])
    assert [f.call_id for f in report.findings if f.code == "tool-call-unanswered"] == want


def _dropped_orphans(case: dict[str, Any], result: RepairResult, want: Any) -> None:
    assert result.report.ids("dropped-orphan-result") == want
    remaining = [b.call_id for b in blocks(result.messages, case["format"], "result")]
    assert not set(want) & set(remaining)


def _unique_ids(case: dict[str, Any], result: RepairResult, want: Any) -> None:
    ids = [b.call_id for b in blocks(result.messages, case["format"], "call")]
    assert (len(ids) == len(set(ids))) is want


def _synthetic_after_call(case: dict[str, Any], result: RepairResult, want: Any) -> None:
    messages = view(result.messages, case["format"])
    for call_id in result.report.ids("synthesized"):
        at = next(i for i, m in enumerate(messages) if call_id in [c.call_id for c in m.calls()])
        following = messages[at + 1]
        found = [b for b in following.results() if b.call_id == call_id]
        assert bool(found and found[0].raw is not None) is want
        assert "interrupted" in json.dumps(found[0].raw)


def _result_before_text(case: dict[str, Any], result: RepairResult, want: Any) -> None:
    messages = view(result.messages, case["format"])
    for call_id in result.report.ids("synthesized"):
        holder = next(m for m in messages if call_id in [b.call_id for b in m.results()])
        kinds = [b.kind for b in holder.blocks]
        ok = kinds[0] == "result" and "text" in kinds and kinds.index("text") > 0
        assert ok is want


def _single_user_message(case: dict[str, Any], result: RepairResult, want: Any) -> None:
    messages = view(result.messages, case["format"])
    calls = {b.call_id for m in messages for b in m.calls()}
    holders = [m for m in messages if m.results()]
    assert (len(holders) == 1 and {b.call_id for b in holders[0].results()} == calls) is want


def _tool_use_last(case: dict[str, Any], result: RepairResult, want: Any) -> None:
    for message in view(result.messages, case["format"]):
        kinds = [b.kind for b in message.blocks]
        if "call" in kinds:
            tail = kinds[kinds.index("call") :]
            assert all(kind in {"call", "reasoning"} for kind in tail) is want


def _valid_after(case: dict[str, Any], result: RepairResult, want: Any) -> None:
    assert check_history(result.messages, case["format"]).valid is want
    assert result.report.after.valid is want


FACTS: dict[str, Fact] = {
    "stripped": _stripped,
    "synthesized": _synthesized,
    "kept_results": _kept_results,
    "no_orphan_results": _no_orphans,
    "results_for": _results_for,
    "messages_after": _messages_after,
    "unanswered_after": _unanswered_after,
    "dropped_orphan_results": _dropped_orphans,
    "unique_call_ids": _unique_ids,
    "synthetic_result_directly_after_call": _synthetic_after_call,
    "result_block_before_text_in_same_user_message": _result_before_text,
    "single_user_message_with_all_results": _single_user_message,
    "tool_use_last_in_assistant_message": _tool_use_last,
}


@pytest.mark.parametrize("strategy", ["strip", "synthesize"])
@pytest.mark.parametrize("path", CASES)
def test_case_expectations(path: Path | None, strategy: Strategy) -> None:
    case = _load(need(path, RESUME_CASES))
    expect = case["expect"]
    result = _run(case, strategy)
    _valid_after(case, result, expect.get("valid_after", True))
    for fact, want in (expect.get(strategy) or {}).items():
        assert fact in FACTS, f"case {case['name']}: no check for fact {fact!r}"
        FACTS[fact](case, result, want)


@pytest.mark.parametrize("strategy", ["strip", "synthesize"])
@pytest.mark.parametrize("path", CASES)
def test_case_real_results_never_replaced(path: Path | None, strategy: Strategy) -> None:
    case = _load(need(path, RESUME_CASES))
    fmt: FormatName = case["format"]
    result = _run(case, strategy)
    first: dict[str | None, Any] = {}
    for block in blocks(case["messages"], fmt, "result"):
        first.setdefault(block.call_id, block.raw)
    for block in blocks(result.messages, fmt, "result"):
        if block.call_id in first:
            assert block.raw == first[block.call_id], "a real result was replaced"
    kept_calls = {b.call_id for b in blocks(result.messages, fmt, "call")}
    answered_before = {b.call_id for b in blocks(case["messages"], fmt, "result")}
    stripped = set(result.report.ids("stripped"))
    for call_id in answered_before & {b.call_id for b in blocks(case["messages"], fmt, "call")}:
        assert call_id in kept_calls or call_id in stripped


@pytest.mark.parametrize("strategy", ["strip", "synthesize"])
@pytest.mark.parametrize("path", CASES)
def test_case_repair_is_idempotent(path: Path | None, strategy: Strategy) -> None:
    case = _load(need(path, RESUME_CASES))
    once = _run(case, strategy)
    twice = repair_history(once.messages, case["format"], strategy=strategy)
    assert twice.messages == once.messages
    assert not twice.report.changed


@pytest.mark.parametrize("path", CASES)
def test_case_is_broken_before_unless_clean(path: Path | None) -> None:
    case = _load(need(path, RESUME_CASES))
    report = check_history(case["messages"], case["format"])
    state = case.get("toolCallState") or {}
    if case["name"].startswith("clean"):
        assert report.valid
    else:
        # Either the provider would reject it, or the snapshot flags a call in flight.
        assert not report.valid or state.get("inFlight")
