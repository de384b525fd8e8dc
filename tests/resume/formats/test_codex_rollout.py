"""Tests for agc.resume._formats.codex_rollout: response items read, other lines kept."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from agc.resume import Strategy, load_history, repair_loaded
from tests.conftest import examples

GOLDEN = Path(__file__).resolve().parent.parent / "golden"


def test_codex_reader_keeps_only_response_items() -> None:
    history = load_history((GOLDEN / "codex-rollout-in-flight.jsonl").read_bytes(), source="x")
    assert history.format == "codex-rollout"
    assert [m.origin for m in history.messages] == [1, 2, 3]
    assert history.skipped == [0, 4]


def test_codex_compacted_line_resets_the_history() -> None:
    lines = [
        {
            "timestamp": "t",
            "type": "response_item",
            "payload": {
                "type": "function_call",
                "name": "shell",
                "arguments": "{}",
                "call_id": "old",
            },
        },
        {"timestamp": "t", "type": "compacted", "payload": {"message": "summary"}},
        {
            "timestamp": "t",
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "go"}],
            },
        },
    ]
    data = "".join(json.dumps(line) + "\n" for line in lines).encode()
    history = load_history(data, source="x")
    assert [m.origin for m in history.messages] == [2]
    result = repair_loaded(history)
    assert result.data == data
    assert not result.report.changed


# --- paginated rollouts: `ordinal` and `metadata` ------------------------------------------


def _paginated(items: list[tuple[str, dict[str, object]]]) -> bytes:
    """A rollout as Codex 0.155+ writes it: every line numbered, response items with
    ``metadata.history_sequence`` (their position in the history)."""
    lines: list[dict[str, object]] = [
        {
            "timestamp": "2026-01-01T00:00:00.000Z",
            "ordinal": 0,
            "type": "session_meta",
            "payload": {"id": "s1", "cwd": "/w"},
        },
    ]
    sequence = 0
    for kind, payload in items:
        line: dict[str, object] = {
            "timestamp": f"2026-01-01T00:00:{len(lines):02d}.000Z",
            "ordinal": len(lines),
            "type": kind,
            "payload": payload,
        }
        if kind == "response_item":
            sequence += 1
            line["metadata"] = {
                "history_sequence": sequence,
                "sampled_through_sequence": max(sequence - 1, 0),
                "client_authored": False,
            }
        lines.append(line)
    return "".join(json.dumps(line, separators=(",", ":")) + "\n" for line in lines).encode()


def _call(call_id: str) -> tuple[str, dict[str, object]]:
    return (
        "response_item",
        {
            "type": "function_call",
            "name": "exec_command",
            "arguments": '{"cmd":"ls"}',
            "call_id": call_id,
        },
    )


def _output(call_id: str) -> tuple[str, dict[str, object]]:
    return ("response_item", {"type": "function_call_output", "call_id": call_id, "output": "ok"})


_USER: tuple[str, dict[str, object]] = (
    "response_item",
    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]},
)
_EVENT: tuple[str, dict[str, object]] = ("event_msg", {"type": "token_count"})


def _lines(data: bytes) -> list[dict[str, object]]:
    return [json.loads(line) for line in data.splitlines()]


def _assert_numbered(data: bytes) -> None:
    """Every line has the next ordinal; response items' history_sequence is 1, 2, …"""
    records = _lines(data)
    assert [r["ordinal"] for r in records] == list(range(len(records)))
    sequences = [
        r["metadata"]["history_sequence"]  # type: ignore[index]
        for r in records
        if r["type"] == "response_item"
    ]
    assert sequences == list(range(1, len(sequences) + 1))


def test_synthesized_output_last_in_the_file_has_an_ordinal_and_metadata() -> None:
    """The shape the real Codex refused: the call is the file's last line."""
    data = _paginated([_USER, _call("c1"), _output("c1"), _call("c2")])
    result = repair_loaded(load_history(data, source="x"), strategy="synthesize")
    records = _lines(result.data)
    last = records[-1]
    assert last["type"] == "response_item"
    assert last["payload"]["call_id"] == "c2"  # type: ignore[index]
    assert last["ordinal"] == 5
    assert last["metadata"] == {
        "history_sequence": 5,
        "sampled_through_sequence": 3,  # the call's own: what the model had seen
        "client_authored": False,
    }
    assert list(last) == ["timestamp", "ordinal", "type", "payload", "metadata"]
    _assert_numbered(result.data)
    assert result.data.startswith(data)  # nothing before the new line changed


def test_lines_after_an_inserted_line_are_renumbered_and_otherwise_kept() -> None:
    data = _paginated([_USER, _call("c1"), _EVENT, _USER, _call("c2"), _output("c2")])
    result = repair_loaded(load_history(data, source="x"), strategy="synthesize")
    _assert_numbered(result.data)
    before, after = data.splitlines(), result.data.splitlines()
    assert after[:3] == before[:3]
    assert json.loads(after[3])["payload"]["call_id"] == "c1"
    for old, new in zip(before[3:], after[4:], strict=True):
        old_record, new_record = json.loads(old), json.loads(new)
        assert new_record["ordinal"] == old_record["ordinal"] + 1
        if old_record["type"] != "response_item":
            # only the number changed, byte for byte
            assert new == old.replace(
                b'"ordinal":%d' % old_record["ordinal"], b'"ordinal":%d' % new_record["ordinal"]
            )


def test_strip_keeps_the_numbering_contiguous() -> None:
    data = _paginated([_USER, _call("c1"), _EVENT, _USER, _call("c2"), _output("c2"), _EVENT])
    result = repair_loaded(load_history(data, source="x"), strategy="strip")
    assert result.report.ids("stripped") == ["c1"]
    _assert_numbered(result.data)
    assert len(result.data.splitlines()) == len(data.splitlines()) - 1


def test_legacy_rollout_gets_no_ordinal() -> None:
    data = (
        json.dumps({"timestamp": "t", "type": "session_meta", "payload": {"id": "s"}})
        + "\n"
        + json.dumps({"timestamp": "t", "type": "response_item", "payload": _call("c1")[1]})
        + "\n"
    ).encode()
    result = repair_loaded(load_history(data, source="x"), strategy="synthesize")
    last = _lines(result.data)[-1]
    assert "ordinal" not in last
    assert "metadata" not in last


@settings(max_examples=examples(60), deadline=None)
@given(
    plan=st.lists(
        st.sampled_from(["user", "answered", "unanswered", "event"]), min_size=1, max_size=12
    ),
    strategy=st.sampled_from(["strip", "synthesize"]),
)
def test_any_repair_of_a_paginated_rollout_stays_numbered(
    plan: list[str], strategy: Strategy
) -> None:
    """Whatever is inserted or removed, ordinals stay contiguous and history sequences
    stay 1, 2, …: the file stays readable for Codex, not only for agc."""
    items: list[tuple[str, dict[str, object]]] = []
    for number, step in enumerate(plan):
        if step == "user":
            items.append(_USER)
        elif step == "event":
            items.append(_EVENT)
        else:
            items.append(_call(f"c{number}"))
            if step == "answered":
                items.append(_output(f"c{number}"))
    data = _paginated(items)
    result = repair_loaded(load_history(data, source="x"), strategy=strategy)
    _assert_numbered(result.data)
    assert result.data.endswith(b"\n")
