"""Tests for agc.resume._formats.jsonl: lines kept exactly, bad lines kept as text."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from agc.resume._formats.jsonl import join_lines, parse_jsonl

REACHES_INSIDE = {
    "agc.resume._formats.jsonl": "the JSONL line splitting and joining under the session formats",
}


def test_parse_jsonl_keeps_bad_lines_and_missing_final_newline() -> None:
    records, lines, final = parse_jsonl(b'{"a":1}\nnot json\n[1]\r\nNaN', source="x")
    assert records == [{"a": 1}, "not json", [1], "NaN"]
    assert lines == ['{"a":1}', "not json", "[1]\r", "NaN"]
    assert final is False


def test_crlf_session_file_is_written_back_identical() -> None:
    # docs/resume.md: an unchanged history is written back identical to its input.
    data = b'{"a":1}\r\nnot json\r\n{"b":2}\r\n'
    records, lines, final = parse_jsonl(data, source="x")
    assert records == [{"a": 1}, "not json", {"b": 2}]
    assert join_lines(lines, final_newline=final) == data


_LINE = st.text(alphabet=st.characters(exclude_characters="\n", exclude_categories=["Cs"])).filter(
    lambda line: "\r" not in line[:-1]
)


@given(lines=st.lists(_LINE, min_size=1, max_size=8), final=st.booleans())
def test_property_split_and_join_round_trip(lines: list[str], final: bool) -> None:
    data = join_lines(lines, final_newline=final)
    records, parsed, final_newline = parse_jsonl(data, source="x")
    if not final and lines == [""]:
        return  # an empty file has no line
    assert join_lines(parsed, final_newline=final_newline) == data
    assert len(records) == len(parsed)
