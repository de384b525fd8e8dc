"""Tests for agc.resume._validate: each provider rule, in each format, as a finding."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

import agc._core.spill as spill
from agc._core.report import Finding
from agc.errors import HistoryInvalidError
from agc.resume import (
    FormatName,
    HistoryReport,
    check_history,
    check_loaded,
    load_history,
    verify_history,
)
from agc.resume import _validate as validate_module
from agc.resume._validate import FINDING_CODES

REACHES_INSIDE = {
    "agc.resume._validate": "the finding codes it emits, read from its source, and their tuple; "
    "FindingTally and KeptFindings (every finding kept, spilled)",
}


def _call(call_id: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": "f", "arguments": "{}"}}


def _use(call_id: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": "f", "input": {}}


def _res(call_id: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": call_id, "content": "ok"}


def _fc(call_id: str) -> dict[str, Any]:
    return {"type": "function_call", "call_id": call_id, "name": "f", "arguments": "{}"}


def _fco(call_id: str) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": "ok"}


BROKEN: list[tuple[str, FormatName, list[dict[str, Any]], list[tuple[str, str | None]]]] = [
    (
        "chat-unanswered",
        "openai-chat",
        [{"role": "assistant", "content": None, "tool_calls": [_call("a")]}],
        [("tool-call-unanswered", "a")],
    ),
    (
        "chat-user-between-call-and-result",
        "openai-chat",
        [
            {"role": "assistant", "content": None, "tool_calls": [_call("a")]},
            {"role": "user", "content": "x"},
            {"role": "tool", "tool_call_id": "a", "content": "ok"},
        ],
        [("tool-call-unanswered", "a"), ("orphan-tool-result", "a")],
    ),
    (
        "chat-duplicate-result",
        "openai-chat",
        [
            {"role": "assistant", "content": None, "tool_calls": [_call("a")]},
            {"role": "tool", "tool_call_id": "a", "content": "1"},
            {"role": "tool", "tool_call_id": "a", "content": "2"},
        ],
        [("duplicate-tool-result", "a")],
    ),
    (
        "anthropic-result-not-first",
        "anthropic",
        [
            {"role": "assistant", "content": [_use("t")]},
            {"role": "user", "content": [{"type": "text", "text": "x"}, _res("t")]},
        ],
        [("tool-result-not-first", "t")],
    ),
    (
        "anthropic-duplicate-id-across-messages",
        "anthropic",
        [
            {"role": "assistant", "content": [_use("t")]},
            {"role": "user", "content": [_res("t")]},
            {"role": "assistant", "content": [_use("t")]},
            {"role": "user", "content": [_res("t")]},
        ],
        [("duplicate-call-id", "t")],
    ),
    (
        "anthropic-result-in-first-message",
        "anthropic",
        [{"role": "user", "content": [_res("t")]}],
        [("orphan-tool-result", "t")],
    ),
    (
        "responses-output-before-call",
        "openai-responses",
        [_fco("c"), _fc("c")],
        [("orphan-tool-result", "c"), ("tool-call-unanswered", "c")],
    ),
    (
        "responses-reasoning-last",
        "openai-responses",
        [{"type": "reasoning", "id": "rs_9", "summary": []}],
        [("reasoning-without-following", None)],
    ),
    (
        "responses-reasoning-before-user",
        "openai-responses",
        [
            {"type": "reasoning", "id": "rs_9", "summary": []},
            {"role": "user", "content": [{"type": "input_text", "text": "x"}]},
        ],
        [("reasoning-without-following", None)],
    ),
    (
        "anthropic-tool-result-in-assistant",
        "anthropic",
        [
            {"role": "assistant", "content": [_use("a")]},
            {"role": "user", "content": [_res("a")]},
            {"role": "assistant", "content": [{"type": "text", "text": "x"}, _res("a")]},
        ],
        [("orphan-tool-result", "a")],
    ),
    (
        "anthropic-tool-result-in-assistant-after-text-after-tool-use",
        "anthropic",
        [
            {"role": "assistant", "content": [_use("a"), {"type": "text", "text": "x"}, _res("z")]},
            {"role": "user", "content": [_res("a")]},
        ],
        [("text-after-tool-use", None), ("orphan-tool-result", "z")],
    ),
    (
        "anthropic-tool-use-in-user",
        "anthropic",
        [{"role": "user", "content": [{"type": "text", "text": "hi"}, _use("t")]}],
        [("tool-call-unanswered", "t")],
    ),
    (
        "responses-duplicate-output",
        "openai-responses",
        [_fc("c"), _fco("c"), _fco("c")],
        [("duplicate-tool-result", "c")],
    ),
]


@pytest.mark.parametrize(
    ("fmt", "messages", "expected"),
    [pytest.param(f, m, e, id=name) for name, f, m, e in BROKEN],
)
def test_broken_rule_is_reported(
    fmt: FormatName, messages: list[dict[str, Any]], expected: list[tuple[str, str | None]]
) -> None:
    report = check_history(messages, fmt)
    assert sorted((f.code, f.call_id) for f in report.findings) == sorted(expected)
    assert {f.code for f in report.findings} <= set(FINDING_CODES)
    assert not report.valid
    with pytest.raises(HistoryInvalidError) as raised:
        verify_history(messages, fmt)
    assert raised.value.report == report


def test_provider_wording_is_kept() -> None:
    report = check_history([_fc("call_1")], "openai-responses")
    assert report.findings[0].message == "No tool output found for function call call_1."


@pytest.mark.parametrize(
    ("fmt", "messages"),
    [
        ("openai-chat", []),
        (
            "openai-chat",
            [
                {"role": "assistant", "content": None, "tool_calls": [_call("a"), _call("b")]},
                {"role": "tool", "tool_call_id": "b", "content": "ok"},
                {"role": "tool", "tool_call_id": "a", "content": "ok"},
            ],
        ),
        (
            "anthropic",
            [
                {
                    "role": "assistant",
                    "content": [{"type": "thinking", "thinking": "t"}, _use("t")],
                },
                {"role": "user", "content": [_res("t"), {"type": "text", "text": "more"}]},
            ],
        ),
        (
            "openai-responses",
            [
                {"type": "reasoning", "id": "r", "summary": []},
                _fc("c"),
                _fc("d"),
                _fco("d"),
                _fco("c"),
            ],
        ),
    ],
)
def test_valid_histories_have_no_findings(fmt: FormatName, messages: list[dict[str, Any]]) -> None:
    report = check_history(messages, fmt)
    assert report.valid
    assert report.to_dict()["findings"] == []
    assert verify_history(messages, fmt) == report


def test_every_history_finding_code_is_documented() -> None:
    """The codes the checks emit are the typed codes, and exactly docs/resume.md's table."""
    source = Path(str(validate_module.__file__)).read_text()
    emitted = set(re.findall(r'(?:_finding|Finding)\(\s*"([a-z-]+)"', source))
    docs = (Path(__file__).resolve().parents[2] / "docs" / "resume.md").read_text()
    match = re.search(r"\| code \| rule \|\n\|[-|]+\|\n((?:\|.*\n)+)", docs)
    assert match is not None
    documented = set(re.findall(r"^\| `([a-z-]+)` \|", match.group(1), re.MULTILINE))
    assert emitted == set(FINDING_CODES) == documented


def _tally_findings(count: int) -> list[Any]:
    codes = ["duplicate-call-id", "duplicate-tool-result", "unrecorded-call"]
    return [
        Finding(
            codes[n % 3],
            f"finding {n} é",
            severity="warning" if codes[n % 3] == "unrecorded-call" else "error",
            message_index=n,
            record=n + 1,
            call_id=f"call_{n}",
        )
        for n in range(count)
    ]


def test_a_tally_that_keeps_every_finding_spills_them_and_reports_the_same(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    findings = _tally_findings(40)
    whole = HistoryReport("codex-rollout", 50, 20, 20, findings=tuple(findings))
    monkeypatch.setattr(spill, "SPILL_AT", 3)
    monkeypatch.setattr(spill, "_CHUNK", 4)
    first, second = validate_module.FindingTally(), validate_module.FindingTally()
    first.extend(findings[:25])
    second.extend(findings[25:])
    tally = validate_module.FindingTally()
    tally.merge(first)  # shared, not copied
    tally.merge(second)
    report = tally.report("codex-rollout", 50, 20, 20)
    assert isinstance(report.findings, validate_module.KeptFindings)
    assert report.findings.spilled  # most of them in the file
    assert list(report.findings) == findings  # in order
    assert report.counts is None  # every finding held
    assert report == whole
    assert report.to_dict() == whole.to_dict()
    assert (report.valid, report.total, report.code_counts(), report.codes()) == (
        whole.valid,
        whole.total,
        whole.code_counts(),
        whole.codes(),
    )
    assert not report.findings.marked  # no lone surrogate: written as UTF-8
    first.add(findings[0])  # the tally shared from may take more: not in the report
    assert len(report.findings) == 40
    kept = report.findings
    assert isinstance(kept, validate_module.KeptFindings)
    with pytest.raises(TypeError):  # the report's findings are read-only
        kept.append(findings[0])


def test_a_kept_finding_with_a_lone_surrogate_marks_the_findings() -> None:
    tally = validate_module.FindingTally()
    tally.add(Finding("duplicate-call-id", "x", call_id="call_é"))
    assert not tally.examples.marked  # type: ignore[union-attr]
    tally.add(Finding("duplicate-call-id", "used twice: call_\udc80", call_id="call_\udc80"))
    report = tally.report("codex-rollout", 2, 2, 0)
    assert report.findings.marked  # type: ignore[attr-defined]


def test_a_second_tool_result_on_a_later_line_of_one_message_is_told_at_that_line() -> None:
    # Claude Code writes each result on a line of its own; consecutive user lines are one
    # message. The duplicate is the second line's result, not the first's.
    rows: list[dict[str, Any]] = [
        {"type": "user", "sessionId": "s1", "message": {"role": "user", "content": "go"}},
        {
            "type": "assistant",
            "sessionId": "s1",
            "message": {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}],
            },
        },
    ]
    for text in ("a", "b"):
        result = {"type": "tool_result", "tool_use_id": "t1", "content": text}
        rows.append(
            {"type": "user", "sessionId": "s1", "message": {"role": "user", "content": [result]}}
        )
    data = "".join(json.dumps(row) + "\n" for row in rows).encode()
    report = check_loaded(load_history(data, source="s.jsonl", format="claude-code"))
    assert [(f.code, f.record) for f in report.findings] == [("duplicate-tool-result", 3)]
