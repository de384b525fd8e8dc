"""What a hook asks of the run's last records (is a turn running? is the run's last
event this one? what did the last seal take?) is read from the tool-events file's end,
and says what a scan of the whole file says, wherever agc's own records fall."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agc._core.json import dumps, loads
from agc.errors import AgcError
from agc.flows import _hook
from tests.conftest import examples

REACHES_INSIDE = {
    "agc.flows._hook": "the questions a hook asks of the run's last records, read from its end"
}

_CLIENT_EVENTS = ["session-start", "prompt", "call", "result", "stop", "compaction", "session-end"]


def _record(kind: str, n: int) -> bytes:
    record: dict[str, Any] = {"event": kind, "source": "hook", "seq": n, "call_id": f"c{n % 3}"}
    if kind == "sealed":
        record["sealed"] = {"lines": n, "bytes": 10 * n, "sha256": "0" * 64}
    if kind == "capture-failed":
        record["failure"] = {"ts": n, "code": "hook-events-unheard", "message": "m"}
    return dumps(record) + b"\n"


_LINE = st.one_of(
    st.tuples(
        st.sampled_from([*_CLIENT_EVENTS, "sealed", "capture-failed"]), st.integers(0, 9)
    ).map(lambda t: _record(*t)),
    st.sampled_from([b"not json\n", b"\n", b'{"event":"sealed","sealed":3}\n', b"[1]\n"]),
)


def _forward(path: Path) -> list[bytes]:
    with path.open("rb") as handle:
        return list(handle)


def _scan_in_turn(path: Path) -> bool:
    last = _scan_last(path)
    if last is None:
        return False
    try:
        stored = loads(last)
    except AgcError:
        return True
    return not (isinstance(stored, dict) and stored.get("event") in _hook._AT_REST)


def _scan_last(path: Path) -> bytes | None:
    last = None
    for line in _forward(path):
        if b'"event":"sealed"' not in line and b'"event":"capture-failed"' not in line:
            last = line
    return last


def _scan_is_last(path: Path, fields: Mapping[str, Any]) -> bool:
    last = _scan_last(path)
    if last is None:
        return False
    try:
        stored = loads(last)
    except AgcError:
        return False
    return isinstance(stored, dict) and all(stored.get(k) == v for k, v in fields.items())


def _scan_sealed(path: Path) -> dict[str, Any] | None:
    found = None
    for line in _forward(path):
        if b'"event":"sealed"' not in line:
            continue
        try:
            record = loads(line)
        except AgcError:
            continue
        if isinstance(record, dict) and record.get("event") == "sealed":
            member = record.get("sealed")
            found = member if isinstance(member, dict) else None
    return found


@settings(max_examples=examples(1000))
@given(
    lines=st.lists(_LINE, max_size=30),
    kind=st.sampled_from(_CLIENT_EVENTS),
    n=st.integers(0, 9),
    torn=st.booleans(),
)
def test_the_last_records_read_from_the_end_say_what_the_whole_file_says(
    tmp_path_factory: pytest.TempPathFactory,
    lines: list[bytes],
    kind: str,
    n: int,
    torn: bool,
) -> None:
    data = b"".join(lines)
    if torn and data:
        data = data[:-1]  # a last line without its newline
    path = tmp_path_factory.mktemp("events") / "tool-events.jsonl"
    path.write_bytes(data)
    fields = loads(_record(kind, n))
    assert _hook._in_turn(path) == _scan_in_turn(path)
    assert _hook._is_last_record(path, fields) == _scan_is_last(path, fields)
    assert _hook._last_sealed(path) == _scan_sealed(path)
