"""Attack: a Gemini CLI session checked and repaired in parts must report and write what
the whole read does, for any sequence of records (ids reused across kinds, rewinds and
``$set`` anywhere, headers late, junk lines, CRLF, a torn or undecodable last line)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agc.errors import AgcError
from agc.resume import (
    Strategy,
    check_loaded,
    load_history,
    repair_loaded,
    repair_session,
    repair_streamed,
    scan_session,
)
from tests.conftest import examples

IDS = ["p", "m0", "m1", "r0", "x"]
CALLS = ["c0", "c1", "c2", "c3", "c4", "c5"]

_text = st.sampled_from(["go", "", "/cmd", "done"])
_response = st.builds(
    lambda c: {"functionResponse": {"id": c, "name": "t", "response": {"output": c}}},
    st.sampled_from(CALLS),
)
_content = st.one_of(
    _text,
    st.lists(st.one_of(_text.map(lambda t: {"text": t}), _response), max_size=2),
)
_tool_call = st.builds(
    lambda c, done: {
        "id": c,
        "name": "t",
        "args": {},
        **(
            {
                "status": "success",
                "result": [{"functionResponse": {"id": c, "name": "t", "response": {"output": c}}}],
            }
            if done
            else {"status": "executing"}
        ),
    },
    st.sampled_from(CALLS),
    st.booleans(),
)


@st.composite
def _message(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["user", "gemini", "gemini", "info"]))
    record: dict[str, Any] = {
        "id": draw(
            st.one_of(
                st.sampled_from(IDS),
                st.integers(0, 10**6).map(lambda n: f"u{n}"),
                st.integers(0, 10**6).map(lambda n: f"u{n}"),
            )
        ),
        "timestamp": "t",
        "type": kind,
        "content": draw(_content) if kind != "gemini" else draw(_text),
    }
    if kind == "gemini" and draw(st.booleans()):
        record["toolCalls"] = draw(st.lists(_tool_call, min_size=1, max_size=2))
    return record


_record = st.one_of(
    _message(),
    _message(),
    _message(),
    st.builds(lambda i: {"$rewindTo": i}, st.sampled_from([*IDS, "nope"])),
    st.just({"$set": {"lastUpdated": "t"}}),
    st.builds(lambda ms: {"$set": {"messages": ms}}, st.lists(_message(), max_size=2)),
    st.builds(
        lambda ms: {"sessionId": "s", "projectHash": "h", **({"messages": ms} if ms else {})},
        st.lists(_message(), max_size=2),
    ),
    st.sampled_from(["not json", "[1, 2]", "3", "", "   "]),
)


def _dump(records: list[Any], crlf: list[bool], tail: str) -> bytes:
    lines = [
        (r if isinstance(r, str) else json.dumps(r)) + ("\r" if cr else "")
        for r, cr in zip(records, crlf, strict=False)
    ]
    data = "\n".join(lines).encode()
    if tail == "newline":
        data += b"\n"
    elif tail == "torn":
        data += b'\n{"id": "m1", "type": "gem'
    elif tail == "bad-utf8":
        data += b'\n{"id": "m1", "type": "\xe2\x82'
    return data


def _session(records: list[Any], crlf: list[bool], tail: str) -> bytes:
    head = {"sessionId": "sess-1", "projectHash": "h", "startTime": "t"}
    return _dump([head, *records], [False, *crlf], tail)


_sessions = st.builds(
    _session,
    st.lists(_record, min_size=1, max_size=24),
    st.lists(st.booleans(), max_size=16),
    st.sampled_from(["newline", "newline", "none", "torn", "bad-utf8"]),
)


def _whole_check(data: bytes) -> Any:
    try:
        return check_loaded(load_history(data, source="session.jsonl")).to_dict()
    except AgcError as exc:
        return exc.code


def _parts_check(path: Path, settle: int) -> Any:
    try:
        history = scan_session(
            path, source="session.jsonl", format=None, settle=settle, checked=True, keep=None
        )
        return check_loaded(history).to_dict()
    except AgcError as exc:
        return exc.code


@settings(
    max_examples=examples(400, least=40),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=_sessions, settle=st.integers(1, 3))
def test_check_in_parts_is_the_whole_check(data: bytes, settle: int, tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    path.write_bytes(data)
    whole = _whole_check(data)
    if whole == "history-format-invalid" or (
        isinstance(whole, dict) and whole.get("format") != "gemini-chat"
    ):
        return
    got = _parts_check(path, settle)
    assert got == whole


def _repaired_in_parts(source: Path, strategy: Strategy, settle: int) -> Any:
    out = source.with_name("parts.jsonl")

    def read_back() -> Any:
        return scan_session(out, source="out", format="gemini-chat", settle=settle, checked=True)

    try:
        with out.open("w+b") as sink:
            history, report = repair_session(
                source,
                sink,
                read_back,
                source="session.jsonl",
                strategy=strategy,
                keep=None,
                settle=settle,
            )
            if report is None:
                report = repair_streamed(history, sink, read_back, strategy=strategy)
    except AgcError as exc:
        return exc.code
    return out.read_bytes(), report.to_dict()


@settings(
    max_examples=examples(400, least=40),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    data=_sessions,
    settle=st.integers(1, 3),
    strategy=st.sampled_from(["strip", "synthesize"]),
)
def test_repair_in_parts_is_the_whole_repair(
    data: bytes, settle: int, strategy: Strategy, tmp_path: Path
) -> None:
    source = tmp_path / "session.jsonl"
    source.write_bytes(data)
    try:
        whole = load_history(data, source="session.jsonl")
    except AgcError:
        return
    if whole.format != "gemini-chat":
        return
    try:
        done = repair_loaded(whole, strategy=strategy)
        expected: Any = (done.data, done.report.to_dict())
    except AgcError as exc:
        expected = exc.code
    got = _repaired_in_parts(source, strategy, settle)
    if isinstance(expected, str) or isinstance(got, str):
        assert got == expected
        return
    assert got == expected


def _plan_records(plan: list[str]) -> list[Any]:
    """A realistic session (as the existing suite's ``_session`` writes one), as records."""
    lines: list[Any] = [{"id": "p", "timestamp": "t", "type": "user", "content": [{"text": "go"}]}]
    for number, step in enumerate(plan):
        mid = f"m{number}"
        base = {"id": mid, "timestamp": "t", "type": "gemini", "content": ""}
        lines.append(dict(base))
        if step == "text":
            lines.append({**base, "content": "done"})
            lines.append({"id": f"q{number}", "timestamp": "t", "type": "user", "content": "more"})
            continue
        if step == "killed":
            continue
        entries = []
        for call in (f"c{number}a", f"c{number}b"):
            entry: dict[str, Any] = {"id": call, "name": "t", "args": {}}
            if step == "answered" or (step == "half" and call.endswith("a")):
                response = {"id": call, "name": "t", "response": {"output": call}}
                entry["result"] = [{"functionResponse": response}]
                entry["status"] = "success"
            else:
                entry["status"] = "executing"
            entries.append(entry)
        lines.append({**base, "toolCalls": entries})
        answered = [e["result"][0] for e in entries if "result" in e]
        if answered and step != "half":
            lines.append(
                {"id": f"r{number}", "timestamp": "t", "type": "user", "content": answered}
            )
        lines.append({"id": f"q{number}", "timestamp": "t", "type": "user", "content": "next"})
    return lines


PLAN_IDS = ["p", "m0", "m1", "m2", "m3", "r0", "r1", "q0", "q1", "q2", "nope"]
PLAN_CALLS = ["c0a", "c0b", "c1a", "c2b", "c3a"]


@st.composite
def _planned(draw: st.DrawFn) -> bytes:
    plan = draw(
        st.lists(st.sampled_from(["answered", "in-flight", "half", "text", "killed"]), max_size=8)
    )
    records = _plan_records(plan)
    for _ in range(draw(st.integers(0, 3))):
        kind = draw(
            st.sampled_from(["rewind", "set-last", "set-msgs", "header", "junk", "msg", "again"])
        )
        at = draw(st.integers(0, len(records)))
        if kind == "rewind":
            record: Any = {"$rewindTo": draw(st.sampled_from(PLAN_IDS))}
        elif kind == "set-last":
            record = {"$set": {"lastUpdated": "t"}}
        elif kind == "set-msgs":
            record = {
                "$set": {"messages": [r for r in records[:at] if isinstance(r, dict) and "id" in r]}
            }
        elif kind == "header":
            record = {"sessionId": "s", "projectHash": "h"}
        elif kind == "junk":
            record = draw(st.sampled_from(["not json", "[1]", "", "null", '{"id": 5}']))
        elif kind == "again" and records[:at]:
            record = draw(st.sampled_from(records[:at]))
        else:
            record = {
                "id": draw(st.sampled_from(PLAN_IDS)),
                "timestamp": "t",
                "type": draw(st.sampled_from(["user", "gemini", "info"])),
                "content": draw(
                    st.sampled_from(
                        [
                            "x",
                            [
                                {"functionResponse": {"id": c, "name": "t", "response": {}}}
                                for c in draw(st.lists(st.sampled_from(PLAN_CALLS), max_size=2))
                            ],
                        ]
                    )
                ),
            }
        records.insert(at, record)
    crlf = draw(st.lists(st.booleans(), max_size=len(records) + 1))
    tail = draw(st.sampled_from(["newline", "newline", "none", "torn", "bad-utf8"]))
    return _session(records, crlf, tail)


@settings(
    max_examples=examples(400, least=40),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=_planned(), settle=st.integers(1, 3))
def test_planned_check_in_parts_is_the_whole_check(
    data: bytes, settle: int, tmp_path: Path
) -> None:
    test_check_in_parts_is_the_whole_check.hypothesis.inner_test(data, settle, tmp_path)  # type: ignore[attr-defined]


@settings(
    max_examples=examples(400, least=40),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=_planned(), settle=st.integers(1, 3), strategy=st.sampled_from(["strip", "synthesize"]))
def test_planned_repair_in_parts_is_the_whole_repair(
    data: bytes, settle: int, strategy: Strategy, tmp_path: Path
) -> None:
    test_repair_in_parts_is_the_whole_repair.hypothesis.inner_test(data, settle, strategy, tmp_path)  # type: ignore[attr-defined]


def _lines_of(records: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


_HEAD = {"sessionId": "sess-1", "projectHash": "h", "startTime": "t"}
_CALLED = {
    "id": "m1",
    "timestamp": "t",
    "type": "gemini",
    "content": "",
    "toolCalls": [
        {
            "id": "c1",
            "name": "t",
            "args": {},
            "status": "success",
            "result": [{"functionResponse": {"id": "c1", "name": "t", "response": {}}}],
        }
    ],
}


@pytest.mark.parametrize(
    "records",
    [
        # a rewind removes the model message that followed the cut: the user messages on
        # both sides of it are one turn in the whole read, two in parts
        [
            _HEAD,
            {"id": "p", "timestamp": "t", "type": "user", "content": [{"text": "go"}]},
            {"id": "m0", "timestamp": "t", "type": "gemini", "content": ""},
            _CALLED,
            {"$rewindTo": "m1"},
            {"id": "q1", "timestamp": "t", "type": "user", "content": "next"},
        ],
        # the model message after the cut is written again as a user message (same id)
        [
            _HEAD,
            {"id": "p", "timestamp": "t", "type": "user", "content": [{"text": "go"}]},
            _CALLED,
            {"id": "q1", "timestamp": "t", "type": "user", "content": "next"},
            {"id": "m2", "timestamp": "t", "type": "gemini", "content": "ok"},
            {"id": "m1", "timestamp": "t", "type": "user", "content": "x"},
        ],
    ],
    ids=["rewind-after-cut", "next-message-becomes-user"],
)
@pytest.mark.parametrize("settle", [1, 2, 3])
def test_a_cut_whose_next_message_changes_role_reports_as_the_whole_read(
    records: list[dict[str, Any]], settle: int, tmp_path: Path
) -> None:
    data = _lines_of(records)
    path = tmp_path / "session.jsonl"
    path.write_bytes(data)
    whole = check_loaded(load_history(data, source="session.jsonl")).to_dict()
    parts = check_loaded(
        scan_session(path, source="session.jsonl", format=None, settle=settle, checked=True)
    ).to_dict()
    assert (parts["messages"], parts["findings"]) == (whole["messages"], whole["findings"])
