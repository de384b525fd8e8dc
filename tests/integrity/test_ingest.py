"""Tests for agc.integrity._ingest: every input line becomes a record, nothing is lost."""

from __future__ import annotations

import base64
import io
import json
import os
import threading
import time
from pathlib import Path
from typing import Any, BinaryIO, cast

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agc._core.store import StoreLayout
from agc.errors import FileUnreadableError
from agc.integrity import check_run, ingest_stream
from agc.integrity._ingest import iter_lines, line_to_record
from tests.conftest import finding_codes

REACHES_INSIDE = {
    "agc.integrity._ingest": "the line reader and the line-to-record rule, on single inputs",
}


def _stored(store: Path, kind: Any = "transcript") -> list[dict[str, Any]]:
    data = StoreLayout(store).artifact_path("r1", kind).read_bytes()
    return [json.loads(line) for line in data.split(b"\n")[:-1]]


def _original(record: dict[str, Any]) -> bytes:
    """The input line a record stands for (without BOM), rebuilt from the record."""
    if "text_b64" in record:
        return base64.b64decode(record["text_b64"])
    return str(record["text"]).encode("utf-8")


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        pytest.param(b"[1, 2]", "not a JSON object (a JSON list)", id="array"),
        pytest.param(b"42", "not a JSON object (a JSON int)", id="number"),
        pytest.param(b'"s"', "not a JSON object (a JSON str)", id="string"),
        pytest.param(b"null", "not a JSON object (a JSON NoneType)", id="null"),
        pytest.param(b"", "blank line", id="empty"),
        pytest.param(b"  \t", "blank line", id="blank"),
        pytest.param(b"\r", "blank line", id="lone-cr"),
        pytest.param(b"{oops", "not JSON", id="not-json"),
        pytest.param(b'{"a": NaN}', "not JSON", id="nan"),
        pytest.param(b'{"a": Infinity}', "not JSON", id="infinity"),
        pytest.param(b'{"a": 1, "a": 2}', "duplicate key 'a'", id="duplicate-key"),
        pytest.param(b"[" * 100_000 + b"]" * 100_000, "nested too deeply", id="deep"),
        pytest.param(b"\xef\xbb\xbf{}", "not JSON", id="bom-not-on-line-1"),
        pytest.param(b'{"a": 1e400}', "out of range", id="float-overflow"),
        pytest.param(b'{"a": "\\ud800"}', "lone surrogate", id="lone-surrogate-value"),
        pytest.param(b'{"\\udc00": 1}', "lone surrogate", id="lone-surrogate-key"),
    ],
)
def test_non_object_lines_are_kept_with_their_text(raw: bytes, reason: str) -> None:
    record = line_to_record(raw, 2)
    assert record["line"] == 2
    assert reason in record["invalid"]
    assert "payload" not in record
    assert _original(record) == raw


def test_object_line_becomes_payload() -> None:
    raw = '{"type":"x","text":"a\u2028b\u2029c"}'.encode()
    assert line_to_record(raw, 1) == {"line": 1, "payload": json.loads(raw)}


def test_invalid_utf8_is_kept_as_base64() -> None:
    raw = b'{"a":"\xff\xfe"}'
    record = line_to_record(raw, 3)
    assert record["invalid"].startswith("not UTF-8")
    assert "text" not in record
    assert base64.b64decode(record["text_b64"]) == raw


def test_bom_on_the_first_line_is_removed_and_flagged() -> None:
    assert line_to_record(b'\xef\xbb\xbf{"a":1}', 1) == {
        "line": 1,
        "bom": True,
        "payload": {"a": 1},
    }


def test_crlf_line_parses_as_payload() -> None:
    assert line_to_record(b'{"a":1}\r', 1) == {"line": 1, "payload": {"a": 1}}


def test_iter_lines_splits_only_on_newline() -> None:
    data = "a\u2028b\rc\n\nlast".encode()
    assert list(iter_lines(io.BytesIO(data))) == [
        ("a\u2028b\rc".encode(), len("a\u2028b\rc".encode()) + 1),
        (b"", 1),
        (b"last", 4),
    ]


# -- through the writer ---------------------------------------------------------------

INPUTS: list[Any] = [
    pytest.param(b'\xef\xbb\xbf{"a":1}\n{"b":2}\n', 2, 0, id="bom"),
    pytest.param(b'{"a":1}\r\n{"b":2}\r\n', 2, 0, id="crlf"),
    pytest.param(b'{"a":1}\n{"b":2}', 2, 0, id="unterminated-last-line"),
    pytest.param(b'{"a":1}\n{"b":"\xff"}\n\xc3\x28\n', 3, 2, id="invalid-utf8"),
    pytest.param(b'{"big":"' + b"y" * (10 * 1024 * 1024) + b'"}\n', 1, 0, id="10mb-line"),
    pytest.param(b'{"a":1}\nnot json\n[1]\n\n{"a":NaN}\n', 5, 4, id="mixed"),
    pytest.param(b'{"a":1e999}\n{"b":"\\udfff"}\n{"c":3}\n', 3, 2, id="unwritable-objects"),
]


@pytest.mark.parametrize(("data", "records", "invalid"), INPUTS)
def test_ingest_keeps_every_line_and_verifies(
    store: Path, data: bytes, records: int, invalid: int
) -> None:
    summary = ingest_stream(io.BytesIO(data), "r1", store=store)
    assert (summary.records, summary.invalid_lines, summary.bytes_in) == (
        records,
        invalid,
        len(data),
    )
    stored = _stored(store)
    lines = data.split(b"\n")
    if data.endswith(b"\n"):
        lines.pop()
    assert len(stored) == len(lines) == records
    for number, (line, record) in enumerate(zip(lines, stored, strict=True), start=1):
        assert record["line"] == number
        assert record["seq"] == number - 1
        if "payload" in record:
            assert record["payload"] == json.loads(line.removeprefix(b"\xef\xbb\xbf"))
        else:
            assert _original(record) == line
    assert stored[0].get("bom", False) is data.startswith(b"\xef\xbb\xbf")
    assert check_run("r1", store).complete
    assert _stored(store, "tool-events") == []
    assert [s.kind for s in summary.seals] == ["transcript", "tool-events"]


def test_ingest_of_zero_records_seals_an_empty_run_that_is_not_complete(store: Path) -> None:
    summary = ingest_stream(io.BytesIO(b""), "r1", store=store)
    assert summary.records == 0
    report = check_run("r1", store)
    assert not report.complete
    assert finding_codes(report) == {"empty"}


def test_ingest_to_tool_events(store: Path) -> None:
    ingest_stream(io.BytesIO(b'{"event":"x"}\n'), "r1", kind="tool-events", store=store)
    assert _stored(store, "tool-events")[0]["payload"] == {"event": "x"}
    assert finding_codes(check_run("r1", store)) == {"empty"}


def test_reading_failure_leaves_the_run_unsealed(store: Path) -> None:
    class Broken(io.BytesIO):
        def __iter__(self) -> Any:
            yield b'{"a":1}\n'
            raise OSError("stream broke")

    # A read error is the input's (exit 3, file-unreadable), never a bare OSError.
    with pytest.raises(FileUnreadableError, match="cannot read the input: stream broke"):
        ingest_stream(Broken(), "r1", store=store)
    report = check_run("r1", store)
    assert not report.complete
    assert "unsealed" in finding_codes(report)
    assert len(_stored(store)) == 1


def test_lines_read_from_a_live_pipe_reach_the_file_before_the_next_line_arrives(
    store: Path,
) -> None:
    """`agc record` on a live agent: the agent writes three events, then hangs in a tool
    call. The records must be on disk while it hangs, so that a kill -9 of the
    recorder then loses nothing it already read from the pipe."""
    read_fd, write_fd = os.pipe()
    stream = os.fdopen(read_fd, "rb")
    worker = threading.Thread(target=ingest_stream, args=(stream, "r1"), kwargs={"store": store})
    worker.start()
    try:
        os.write(write_fd, b'{"n":0}\n{"n":1}\n{"n":2}\n')
        path = StoreLayout(store).artifact_path("r1", "transcript")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if path.exists() and path.read_bytes().count(b"\n") == 3:
                break
            time.sleep(0.05)
        on_disk = path.read_bytes().count(b"\n") if path.exists() else 0
    finally:
        os.close(write_fd)
        worker.join(timeout=30)
        stream.close()
    assert on_disk == 3
    assert [r["payload"]["n"] for r in _stored(store)] == [0, 1, 2]
    assert check_run("r1", store).complete


def test_a_non_blocking_pipe_with_no_data_yet_is_not_the_end_of_input(store: Path) -> None:
    """A parent may hand agc record a stdin with O_NONBLOCK set: a pause of the agent
    must not end the run (it was sealed after the first line, the rest lost)."""
    read_fd, write_fd = os.pipe()
    os.set_blocking(read_fd, False)
    stream = os.fdopen(read_fd, "rb")
    worker = threading.Thread(target=ingest_stream, args=(stream, "r1"), kwargs={"store": store})
    worker.start()
    try:
        os.write(write_fd, b'{"n":0}\n')
        time.sleep(0.5)
        os.write(write_fd, b'{"n":1}\n')
    finally:
        os.close(write_fd)
        worker.join(timeout=30)
        stream.close()
    assert [r["payload"]["n"] for r in _stored(store)] == [0, 1]
    assert check_run("r1", store).complete


def test_iter_lines_on_a_pipe_calls_before_wait_before_each_read() -> None:
    read_fd, write_fd = os.pipe()
    os.write(write_fd, b'{"a":1}\n{"b":2}\npartial')
    os.close(write_fd)
    calls: list[int] = []
    with os.fdopen(read_fd, "rb") as stream:
        lines = list(iter_lines(stream, before_wait=lambda: calls.append(1)))
    assert lines == [(b'{"a":1}', 8), (b'{"b":2}', 8), (b"partial", 7)]
    assert calls


def test_progress_reports_bytes_consumed(store: Path) -> None:
    seen: list[int] = []
    ingest_stream(io.BytesIO(b'{"a":1}\n{"b":22}\n'), "r1", store=store, progress=seen.append)
    assert seen == [8, 17]


# -- property -------------------------------------------------------------------------

_TRICKY = st.sampled_from(
    [b'{"a":1e400}', b'{"a":"\\ud800"}', b'{"a":"\\ud83d\\ude00"}', b'{"a":-1e309}', b"\r"]
)
_LINE = (
    _TRICKY
    | st.binary(max_size=40).map(lambda b: b.replace(b"\n", b""))
    | st.builds(
        lambda d: json.dumps(d, ensure_ascii=False).encode(),
        st.dictionaries(st.text(max_size=5), st.text(max_size=5) | st.integers(), max_size=3),
    )
)


@given(lines=st.lists(_LINE, max_size=12), terminated=st.booleans())
def test_property_ingest_line_parser_never_loses_a_line(
    lines: list[bytes], terminated: bool
) -> None:
    data = b"\n".join(lines) + (b"\n" if terminated and lines else b"")
    parsed = [line_to_record(raw, n) for n, (raw, _) in enumerate(iter_lines(io.BytesIO(data)), 1)]
    expected = data.split(b"\n")
    if data.endswith(b"\n") or not data:
        expected.pop()
    assert len(parsed) == len(expected)
    for number, (raw, record) in enumerate(zip(expected, parsed, strict=True), start=1):
        assert record["line"] == number
        body = raw[3:] if record.get("bom") else raw
        assert record.get("bom", False) is (number == 1 and raw.startswith(b"\xef\xbb\xbf"))
        if "payload" in record:
            assert isinstance(record["payload"], dict)
            assert record["payload"] == json.loads(body)
        else:
            assert record["invalid"]
            assert _original(record) == body
        # Every record can be written: valid JSON without NaN/Infinity, encodable as UTF-8.
        json.dumps(record, allow_nan=False, ensure_ascii=False).encode("utf-8")


class _Trickle(io.RawIOBase):
    """A non-seekable stream whose read1 hands out the data in given chunk sizes."""

    def __init__(self, data: bytes, sizes: list[int]) -> None:
        self._data, self._sizes, self._at = data, sizes or [1], 0

    def seekable(self) -> bool:
        return False

    def read1(self, size: int = -1) -> bytes:
        want = self._sizes[self._at % len(self._sizes)] if self._data else 0
        self._at += 1
        chunk, self._data = self._data[: min(want, size)], self._data[min(want, size) :]
        return chunk


@given(
    data=st.binary(max_size=300).map(lambda b: b.replace(b"\x00", b"\n")),
    sizes=st.lists(st.integers(min_value=1, max_value=40), max_size=6),
)
def test_property_live_reading_splits_lines_exactly_like_file_reading(
    data: bytes, sizes: list[int]
) -> None:
    waits: list[int] = []
    stream = cast(BinaryIO, _Trickle(data, sizes))
    live = list(iter_lines(stream, before_wait=lambda: waits.append(1)))
    assert live == list(iter_lines(io.BytesIO(data)))
    assert sum(size for _, size in live) == len(data)
    assert waits
