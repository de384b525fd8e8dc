"""The ledger's fast event-line reader gives exactly the strict reader's answer.

Differential: every generated line (valid JSON in many spellings, and lines the rule
refuses: duplicate members, NaN/Infinity, numbers beyond a double, integers beyond 64
bits, lone surrogates, nesting past the limit, byte order marks, broken UTF-8) is read
by :func:`loads_event` and by ``agc._core.json.loads(..., allow_lone_surrogates=True)``;
the values (with their types) or the errors must agree. A second test records the real
Codex transcripts with both readers and compares the ledger bytes.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from agc._core import json as strict_json
from agc.errors import JsonInvalidError
from agc.ledger import record_turn
from agc.ledger._events import decode as decode_module
from agc.ledger._events import rollout as rollout_module
from agc.ledger._fastjson import loads_event, loads_event_text
from tests.conftest import REAL_FIXTURES, examples, fixed_clock, real_fixture_files

REACHES_INSIDE = {
    "agc.ledger._events": (
        "swaps the decoders' fast JSON loader for the strict one, to compare both"
    ),
    "agc.ledger._fastjson": "the fast event loader itself, against the strict one",
}

_KEYS = st.sampled_from(["a", "b", "type", "id", "é", "a:b", ""]) | st.text(max_size=4)
_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_KEYS, inner, max_size=4),
    max_leaves=12,
)
# Fragments spliced into a line: what the rule refuses and spellings orjson writes
# differently from the input.
_FRAGMENTS = st.sampled_from(
    [
        '{"a":1,"a":2}',
        '{"a":1,"\\u0061":2}',
        '{"k\\u003a":1,"k\\u003a":2}',
        '{"x":"y:z","x":"q"}',
        "NaN",
        "-Infinity",
        "1e400",
        "-1e400",
        "1e-400",
        "18446744073709551616",
        "-9223372036854775809",
        "123456789012345678901234567890",
        '"\\ud800"',
        '"\\udc00x"',
        '"\\ud83d\\ude00"',
        '"\\u00e9"',
        '"a\\/b"',
        "1.0",
        "1E5",
        "-0",
        "-0.0",
        "0.30000000000000004",
        " ",
        "[" * 300 + "]" * 300,
        "[" * 511 + "]" * 511,
        "[" * 513 + "]" * 513,
        "[" * 1100 + "]" * 1100,
    ]
)


def _spell(value: Any, rng: st.DataObject) -> str:
    """``value`` as JSON text in one of several spellings."""
    style = rng.draw(st.sampled_from(["compact", "spaced", "ascii", "indent"]))
    if style == "compact":
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    if style == "spaced":
        return json.dumps(value, ensure_ascii=False)
    if style == "ascii":
        return json.dumps(value)
    return json.dumps(value, indent=1, ensure_ascii=False)


def _outcome(reader: Any, line: Any) -> tuple[str, Any]:
    try:
        value = reader(line)
    except JsonInvalidError as exc:
        return ("error", (exc.problem, str(exc)))
    return ("value", _typed(value))


def _typed(value: Any) -> Any:
    """The value with every scalar tagged by its type (1 and 1.0 and True differ)."""
    if isinstance(value, dict):
        return ("dict", [(key, _typed(item)) for key, item in value.items()])
    if isinstance(value, list):
        return ("list", [_typed(item) for item in value])
    if isinstance(value, float):
        return ("float", value.hex() if math.isfinite(value) else repr(value))
    return (type(value).__name__, value)


def _strict(line: bytes | str) -> Any:
    return strict_json.loads(line, allow_lone_surrogates=True)


def _assert_same(line: bytes) -> None:
    assert _outcome(loads_event, line) == _outcome(_strict, line)
    if line.endswith(b"\n"):
        assert _outcome(loads_event, line[:-1]) == _outcome(_strict, line[:-1])


@settings(max_examples=examples(600), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=_VALUES, data=st.data())
def test_valid_lines_in_any_spelling_read_the_same(value: Any, data: st.DataObject) -> None:
    line = _spell(value, data).encode("utf-8", "surrogatepass") + b"\n"
    _assert_same(line)


@settings(max_examples=examples(800), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=_VALUES, fragment=_FRAGMENTS, data=st.data())
@example(value={"type": "x"}, fragment='{"a":1,"a":2}', data=None)
def test_lines_with_refused_or_unusual_parts_read_the_same(
    value: Any, fragment: str, data: st.DataObject | None
) -> None:
    text = json.dumps(value, separators=(",", ":"))
    spliced = [
        fragment,
        f'{{"payload":{fragment},"type":"response_item"}}',
        f'{{"v":{text},"w":[{fragment}]}}',
        f"[{fragment},{text}]",
    ]
    for line in spliced:
        _assert_same(line.encode("utf-8", "surrogatepass") + b"\n")


@settings(max_examples=examples(300), deadline=None)
@given(raw=st.binary(max_size=40))
def test_arbitrary_bytes_read_the_same(raw: bytes) -> None:
    for line in (raw, b'{"a":"' + raw + b'"}', b"\xef\xbb\xbf" + raw):
        _assert_same(line)


@settings(max_examples=examples(300), deadline=None)
@given(text=st.text(max_size=30), value=_VALUES)
def test_nested_json_strings_read_the_same(text: str, value: Any) -> None:
    for candidate in (text, json.dumps(value), "\ufeff" + json.dumps(value), text + "\ud800"):
        assert _outcome(loads_event_text, candidate) == _outcome(_strict, candidate)


def test_a_canonical_line_is_read_by_orjson_and_a_duplicate_is_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[object] = []
    real = strict_json.loads

    def counting(data: Any, **kwargs: Any) -> Any:
        calls.append(data)
        return real(data, **kwargs)

    monkeypatch.setattr(strict_json, "loads", counting)
    assert loads_event(b'{"type":"event_msg","payload":{"n":1}}\n') == {
        "type": "event_msg",
        "payload": {"n": 1},
    }
    assert calls == []  # proof 1: orjson's value, no second parse
    assert loads_event(b'{"type": "event_msg", "n": 1.5}') == {"type": "event_msg", "n": 1.5}
    assert calls == []  # proof 2 (colons counted)
    with pytest.raises(JsonInvalidError) as refused:
        loads_event(b'{"a":1,"a":2}')
    assert refused.value.problem == "duplicate"
    assert len(calls) == 1


# -- the ledger of real transcripts ----------------------------------------------------


def _record(lines: list[bytes], project: Path) -> tuple[bytes, dict[str, Any]]:
    shutil.rmtree(project, ignore_errors=True)
    project.mkdir(parents=True)
    outcome = record_turn(
        lines,
        project=project,
        client_turn_id="real-fixture-1",
        prompt="the user's prompt",
        clock=fixed_clock(),
    )
    return outcome.turn_file.read_bytes(), outcome.to_dict()


@pytest.mark.skipif(
    not real_fixture_files(),
    reason=f"{REAL_FIXTURES} is absent: ../shared is not beside this checkout",
)
@pytest.mark.parametrize(
    "path",
    [p for p in real_fixture_files() if p.parent.name in {"codex-exec", "codex-rollout"}]
    or [Path("absent")],
    ids=lambda p: p.name,
)
def test_the_ledger_of_a_real_transcript_is_byte_identical_with_the_strict_reader(
    path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = path.read_bytes().splitlines(keepends=True)
    # A duplicate member and a NaN line in the middle: both readers must refuse them.
    lines[1:1] = [b'{"type":"turn.started","type":"turn.failed"}\n', b'{"x": NaN}\n']
    fast_bytes, fast_outcome = _record(lines, tmp_path / "fast")
    with monkeypatch.context() as patch:
        patch.setattr(decode_module, "loads_event", _strict)
        patch.setattr(rollout_module, "loads_event_text", _strict)
        strict_bytes, strict_outcome = _record(lines, tmp_path / "strict")
    assert fast_outcome["input"]["invalidLines"] >= 2
    assert fast_bytes == strict_bytes
    fast_outcome.pop("turnFile", None)
    strict_outcome.pop("turnFile", None)
    assert json.dumps(fast_outcome, sort_keys=True).replace("/fast/", "/X/") == json.dumps(
        strict_outcome, sort_keys=True
    ).replace("/strict/", "/X/")


def test_a_long_rollout_records_the_same_ledger_as_the_strict_full_decoding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the item limit the decoder only counts rollout calls: same bytes, same counts
    as decoding every call with the strict reader (the code before either shortcut)."""
    from benchmarks.ledger_events import write_rollout  # noqa: PLC0415

    events = tmp_path / "rollout.jsonl"
    write_rollout(events, 4000, seed=3)
    lines = events.read_bytes().splitlines(keepends=True)
    # an unanswered call after the limit, a duplicate-key line, a web search, a failure
    lines[-1:-1] = [
        b'{"type":"response_item","payload":{"type":"function_call","name":"shell",'
        b'"arguments":"{\\"command\\":[\\"ls\\"]}","call_id":"late-1"}}\n',
        b'{"type":"response_item","payload":{"type":"web_search_call","id":"w",'
        b'"status":"completed","action":{"query":"q"}}}\n',
        b'{"type":"response_item","type":"event_msg","payload":{"type":"task_failed"}}\n',
    ]
    fast_bytes, fast_outcome = _record(lines, tmp_path / "fast")
    with monkeypatch.context() as patch:
        patch.setattr(decode_module, "loads_event", _strict)
        patch.setattr(rollout_module, "loads_event_text", _strict)
        patch.setattr(decode_module.EventDecoder, "count_only", lambda self: None)
        strict_bytes, strict_outcome = _record(lines, tmp_path / "strict")
    assert fast_outcome["itemsTruncated"] is True
    assert fast_outcome["input"]["items"] > 600
    assert fast_bytes == strict_bytes
    assert {k: v for k, v in fast_outcome.items() if k != "turnLog"} == {
        k: v for k, v in strict_outcome.items() if k != "turnLog"
    }
