"""A long history read record by record gives what the whole-document read gives.

Differential: each generated history file (Chat, Anthropic, Responses arrays in several
spellings, and spliced with what the JSON rule refuses: duplicate members, NaN, numbers
beyond a double, lone surrogates, deep nesting, broken separators, trailing data) is
loaded with the lean reader forced on (a tiny window, so records cross window edges)
and with it off (the whole-document read): the same error, or the same format, view,
check report, and for both strategies the same repaired bytes and repair report. The
repaired output, read back from its bytes, passes the check and gives the report's
``after`` (the repair checks it from memory instead of parsing it again).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agc.errors import AgcError
from agc.resume import (
    STRATEGIES,
    FormatName,
    History,
    check_history,
    check_loaded,
    load_history,
    repair_loaded,
)
from agc.resume._formats import detect, lean
from agc.resume._formats.model import RawRef
from tests.conftest import REAL_FIXTURES, THOROUGH, examples
from tests.resume.test_repair import _EVENT, _render

REACHES_INSIDE = {
    "agc.resume._formats": "the lean span records and the detector's element-wise dump",
}


@pytest.fixture
def lean_on() -> Iterator[pytest.MonkeyPatch]:
    with pytest.MonkeyPatch.context() as patch:
        yield patch


def _summary(history: History) -> list[Any]:
    return [
        (
            m.role,
            m.origin,
            m.dirty,
            [(b.kind, b.call_id, b.name, b.arguments, b.origin, b.raw) for b in m.blocks],
            m.raw,
        )
        for m in history.messages
    ]


def _outcome(data: bytes, format: FormatName | None, *, use_lean: bool) -> Any:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(detect, "LEAN_MIN_BYTES", 0 if use_lean else 1 << 62)
        patch.setattr(lean, "_WINDOW", 37)
        try:
            history = load_history(data, source="h.json", format=format)
        except AgcError as exc:
            return ("error", type(exc).__name__, exc.message)
        is_lean = isinstance(history.records, lean.SpanRecords)
        out: list[Any] = [
            history.format,
            len(history.records),
            list(history.records),
            _summary(history),
            check_loaded(history).to_dict(),
        ]
        for strategy in STRATEGIES:
            try:
                result = repair_loaded(history, strategy=strategy)
            except AgcError as exc:
                out.append(("error", type(exc).__name__, exc.message))
                continue
            reread = load_history(result.data, source="out", format=history.format)
            assert check_loaded(reread).to_dict() == result.report.after.to_dict()
            assert result.report.after.valid
            assert result.messages == json.loads(result.data)
            out.append((result.data, result.report.to_dict()))
        return out, is_lean


def _assert_same(data: bytes, format: FormatName | None = None) -> None:
    whole = _outcome(data, format, use_lean=False)
    leaned = _outcome(data, format, use_lean=True)
    if whole[0] != "error":
        whole = whole[0]
    if leaned[0] != "error":
        leaned = leaned[0]
    assert leaned == whole


_FRAGMENTS = st.sampled_from(
    [
        '{"role":"user","content":"x","content":"y"}',
        '{"role":"tool","tool_call_id":"a","content":"k\\u003a","content":"z"}',
        '{"role":"user","content":NaN}',
        '{"role":"user","content":1e400}',
        '{"role":"user","content":123456789012345678901234567890}',
        '{"role":"user","content":"\\ud800 lone"}',
        '{"role":"user","content":"\\u00e9t\\u00e9 \\ud83d\\ude00 ok"}',
        '{"role":"user","content":"caf\u00e9 \u2603 :"}',
        '{"role":"user","content":' + "[" * 509 + "]" * 509 + "}",
        '{"role":"user","content":' + "[" * 511 + "]" * 511 + "}",
        '{"role":"user","content":[1.5,-0.0,2e-320,true,null]}',
        "7",
        "",
        "]",
        ",",
        "[",
    ]
)


def _spell(records: list[Any], style: str) -> str:
    if style == "compact":
        return json.dumps(records, separators=(",", ":"), ensure_ascii=False)
    if style == "indent":
        return json.dumps(records, indent=2, ensure_ascii=False)
    return json.dumps(records)


@settings(max_examples=examples(250), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    events=st.lists(_EVENT, max_size=10),
    fmt=st.sampled_from(["openai-chat", "anthropic", "openai-responses"]),
    style=st.sampled_from(["compact", "indent", "ascii"]),
    named=st.booleans(),
)
def test_generated_histories_read_check_and_repair_the_same(
    events: list[tuple[Any, ...]], fmt: FormatName, style: str, named: bool
) -> None:
    data = _spell(_render(events, fmt), style).encode("utf-8", "surrogatepass")
    _assert_same(data, fmt if named else None)


@settings(max_examples=examples(250), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    events=st.lists(_EVENT, min_size=1, max_size=6),
    fragment=_FRAGMENTS,
    at=st.integers(min_value=0, max_value=6),
    padding=st.sampled_from(["", " ", "\n\t ", "x", "\ufeff"]),
    named=st.booleans(),
)
def test_histories_spliced_with_refused_json_read_the_same(
    events: list[tuple[Any, ...]], fragment: str, at: int, padding: str, named: bool
) -> None:
    parts = [json.dumps(record) for record in _render(events, "openai-chat")]
    if fragment:
        parts.insert(min(at, len(parts)), fragment)
    text = "[" + ",".join(parts) + "]"
    for data in (text + padding, padding + text, text.replace(",", " , ", 2)):
        _assert_same(data.encode("utf-8", "surrogatepass"), "openai-chat" if named else None)


def test_a_long_history_is_read_lean_and_its_repair_matches_the_whole_read() -> None:
    records = _render(
        [("user", "hi"), ("assistant", "", [("a", True), ("b", False)], True)], "openai-chat"
    )
    data = json.dumps(records * 4000).encode()
    assert len(data) > lean.LEAN_MIN_BYTES
    history = load_history(data, source="long.json")
    assert isinstance(history.records, lean.SpanRecords)
    assert check_loaded(history) == check_history(json.loads(data), "openai-chat")
    # The lean read and repair against the whole read: _assert_same reads lean at any
    # size, in windows of 37 bytes (not 1 MiB), so by default a tenth of the history
    # (400 rounds, 106 kB: some 2,900 windows) takes the same path; the whole history
    # in the thorough profile.
    _assert_same(data if THOROUGH else json.dumps(records * 400).encode())


def test_empty_and_nested_arrays_dump_as_orjson_does() -> None:
    cases: list[list[Any]] = [[], [[]], [{}], [{"a": [1, {"b": []}], "c": "x\ny"}], [1, "s"]]
    for records in cases:
        native: list[Any] = [RawRef(records, i, ()) for i in range(len(records))]
        want = orjson.dumps(records, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE)
        assert detect._dump_by_element(native) in (want, None if not records else want)


@pytest.mark.skipif(not REAL_FIXTURES.is_dir(), reason=f"{REAL_FIXTURES} is absent")
@pytest.mark.parametrize("name", ["claude-code", "codex-rollout"])
def test_real_session_files_repair_the_same_as_reading_the_output_back(name: str) -> None:
    for path in sorted((REAL_FIXTURES / name).glob("*.jsonl")):
        data = path.read_bytes()
        try:
            history = load_history(data, source=path.name)
        except AgcError:
            continue
        for strategy in STRATEGIES:
            result = repair_loaded(history, strategy=strategy)
            reread = load_history(result.data, source="out", format=history.format)
            assert check_loaded(reread).to_dict() == result.report.after.to_dict(), path


def test_path_of_a_part_is_found_by_identity() -> None:
    call = {"id": "a"}
    record = {"role": "assistant", "tool_calls": [call], "content": "x"}
    assert lean._path_in(record, call) == ("tool_calls", 0)
    assert lean._path_in(record, record) == ()
    assert lean._path_in(record, {"id": "a"}) is None
