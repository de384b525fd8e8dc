"""The writer's serialization: orjson fast path, stdlib checks where orjson is lax.

orjson writes NaN/Infinity as ``null`` and accepts types the standard library refuses;
these tests pin that the writer still rejects what it rejected before orjson and that
every written line reads back as the record it was given.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agc.errors import RecordInvalidError
from agc.integrity import ToolEventWriter, TranscriptWriter
from tests.conftest import examples


@dataclasses.dataclass
class _Point:
    x: int


class _Text(str):
    pass


def _nest(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = {"d": value}
    return value


def _lines(writer: TranscriptWriter) -> list[dict[str, Any]]:
    writer.flush()
    return [json.loads(line) for line in writer.path.read_bytes().splitlines()]


@pytest.mark.parametrize(
    "record",
    [
        {"x": math.nan},
        {"x": math.inf},
        {"x": -math.inf},
        {"deep": {"list": [1, 2, {"v": math.nan}]}},
        {"x": math.nan, "y": None},
        {"text": "no null here", "x": [math.inf]},
        {"x": "\ud800"},
        {"nested": {"k": "lone \udfff surrogate"}},
        {1: "int key"},
        {"when": dt.datetime(2026, 11, 30, tzinfo=dt.UTC)},
        {"point": _Point(1)},
        {"set": {1, 2}},
        {"bytes": b"raw"},
        {"seq": 5},
        {"ts": 5},
    ],
    ids=lambda r: repr(r)[:40],
)
def test_invalid_records_are_rejected_and_nothing_is_written(
    store: Path, record: dict[Any, Any]
) -> None:
    with TranscriptWriter("r1", store=store, buffer_bytes=0, clock=lambda: 7) as writer:
        writer.write({"ok": 1})
        with pytest.raises(RecordInvalidError):
            writer.write(record)
        assert writer.next_seq == 1
        assert _lines(writer) == [{"seq": 0, "ts": 7, "ok": 1}]


@pytest.mark.parametrize(
    ("record", "expected"),
    [
        ({"a": None, "b": [None, 1.5]}, {"a": None, "b": [None, 1.5]}),
        ({"nested": {1: "x", None: "y"}}, {"nested": {"1": "x", "null": "y"}}),
        ({"big": 2**70}, {"big": 2**70}),
        ({"sub": _Text("str subclass")}, {"sub": "str subclass"}),
        ({"u": "line\u2028sep \u2029 é ✓ 日本"}, {"u": "line\u2028sep \u2029 é ✓ 日本"}),
        ({"tuple": (1, 2)}, {"tuple": [1, 2]}),
        ({"ctrl": "a\x00b\x1f\n\t\"\\"}, {"ctrl": "a\x00b\x1f\n\t\"\\"}),
        ({"text": "null"}, {"text": "null"}),
        ({"deep": _nest(300)}, {"deep": _nest(300)}),
    ],
    ids=["null", "nested-non-str-keys", "big-int", "str-subclass", "unicode", "tuple",
         "control", "null-text", "deep-300"],
)  # fmt: skip
def test_valid_records_read_back_as_given(
    store: Path, record: dict[str, Any], expected: dict[str, Any]
) -> None:
    with TranscriptWriter("r1", store=store) as writer:
        writer.write(record)
        line = _lines(writer)[0]
    assert {k: v for k, v in line.items() if k not in {"seq", "ts"}} == expected


def test_lines_are_compact_utf8_and_newline_terminated(store: Path) -> None:
    with TranscriptWriter("r1", store=store, clock=lambda: 7) as writer:
        writer.write({"role": "user", "content": "é ✓"})
    assert writer.path.read_bytes() == '{"seq":0,"ts":7,"role":"user","content":"é ✓"}\n'.encode()


def test_tool_event_lines_carry_the_run_id(store: Path) -> None:
    with ToolEventWriter("r1", store=store, clock=lambda: 7) as writer:
        writer.write({"tool": "bash"})
    assert writer.path.read_bytes() == b'{"seq":0,"ts":7,"run_id":"r1","tool":"bash"}\n'


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=st.characters(blacklist_categories=["Cs"])),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)
records = st.dictionaries(
    st.text(max_size=8).filter(lambda k: k not in {"seq", "ts"}), json_values, max_size=5
)


@settings(max_examples=examples(150), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batch=st.lists(records, max_size=6))
def test_property_every_record_reads_back_and_the_seal_covers_the_bytes(
    tmp_path_factory: pytest.TempPathFactory, batch: list[dict[str, Any]]
) -> None:
    store = tmp_path_factory.mktemp("store")
    with TranscriptWriter("r1", store=store, clock=lambda: 1) as writer:
        for record in batch:
            writer.write(record)
    data = writer.path.read_bytes()
    lines = data.splitlines()
    assert [json.loads(line) for line in lines] == [
        {"seq": i, "ts": 1, **r} for i, r in enumerate(batch)
    ]
    assert writer.seal is not None
    assert writer.seal.bytes == len(data)
    assert writer.seal.records == len(batch)


@settings(max_examples=examples(100), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(record=records, where=st.sampled_from(["top", "list", "dict"]), bad=st.sampled_from(
    [math.nan, math.inf, -math.inf]))  # fmt: skip
def test_property_non_finite_floats_are_always_rejected(
    tmp_path_factory: pytest.TempPathFactory, record: dict[str, Any], where: str, bad: float
) -> None:
    poisoned = dict(record)
    if where == "top":
        poisoned["bad"] = bad
    elif where == "list":
        poisoned["bad"] = [None, record, bad]
    else:
        poisoned["bad"] = {"inner": {"x": bad}}
    store = tmp_path_factory.mktemp("store")
    with TranscriptWriter("r1", store=store) as writer:
        with pytest.raises(RecordInvalidError):
            writer.write(poisoned)
        assert writer.next_seq == 0


def test_tool_event_with_the_writers_run_id_is_written_once(store: Path) -> None:
    with ToolEventWriter("r1", store=store, clock=lambda: 7) as writer:
        writer.write({"tool": "bash", "run_id": "r1"})
    assert writer.path.read_bytes() == b'{"seq":0,"ts":7,"run_id":"r1","tool":"bash"}\n'


def test_tool_event_with_another_run_id_is_rejected_not_rewritten(store: Path) -> None:
    with ToolEventWriter("r1", store=store) as writer:
        with pytest.raises(RecordInvalidError, match="run_id 'r2'"):
            writer.write({"tool": "bash", "run_id": "r2"})
        assert writer.next_seq == 0
    assert writer.path.read_bytes() == b""
