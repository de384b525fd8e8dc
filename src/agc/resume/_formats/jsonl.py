"""Reading and writing session files (JSONL) line by line, keeping each line's text.

A line that is not JSON is kept as its text, so a session file with damaged lines is
still read and written back whole: nothing is dropped that the repair did not drop.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from agc._core import json as strict_json
from agc.errors import InputError, JsonInvalidError

__all__ = [
    "dump_line",
    "join_lines",
    "line_value",
    "parse_jsonl",
    "parse_session_line",
    "source_lines",
]


def parse_jsonl(data: bytes, *, source: str) -> tuple[list[Any], list[str], bool]:
    """Split JSONL bytes into ``(records, lines, final_newline)``.

    ``records[i]`` is line ``i`` parsed as JSON, or the line's text when it is not JSON
    under agc's rule (:func:`parse_session_line`). Blank lines are kept as empty
    strings.

    A file that ends in the middle of a character (the last line cut by a crash inside
    a multi-byte UTF-8 sequence) is read with that partial character as U+FFFD: the last
    line is then torn (:mod:`.torn`), not the file refused.

    Raises:
        InputError: the bytes are not UTF-8, or a line is nested too deep (naming
            ``source`` and the line).
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if not _cut_in_a_character(data, exc):
            line_no = data[: exc.start].count(b"\n") + 1
            raise InputError(f"{source}: line {line_no} is not UTF-8") from exc
        # The decoder stops at the first error, which is the cut: all before it is UTF-8.
        text = data[: exc.start].decode("utf-8") + "\ufffd"
    final_newline = text.endswith("\n")
    lines = text.split("\n")
    if final_newline:
        lines.pop()
    # A CRLF line keeps its "\r" in `lines`, so it is written back byte for byte.
    records = [parse_session_line(raw, source, index) for index, raw in enumerate(lines)]
    return records, lines, final_newline


def parse_session_line(text: str, source: str, index: int) -> Any:
    """Line ``index`` (0-based) of the session file ``source``, its text without the
    line break: its JSON value under agc's rule (:mod:`agc._core.json`; a ``\r`` before
    the line break is whitespace; a lone surrogate escape is kept), else the text itself
    (NaN, Infinity, a duplicate key, a torn or damaged line: a line no client reads as
    a record either).

    Raises:
        InputError: the line is JSON nested deeper than agc reads
            (:data:`agc._core.json.MAX_DEPTH`): a client's parser (JSON.parse, serde)
            reads it, so its calls and results are part of what the client sends; agc
            refuses to judge the file rather than take them as an unread line.
    """
    try:
        return line_value(text)
    except JsonInvalidError as exc:
        if exc.problem == "depth":
            raise InputError(
                f"{source}: line {index + 1} is JSON {exc.message}: agc does not read it, "
                "while the client does (its calls and results would go unjudged)",
                hint="agc gives no verdict on a session it cannot read whole.",
            ) from exc
        return text[:-1] if text.endswith("\r") else text


def line_value(text: str) -> Any:
    """A line's text (without its line break) as JSON under agc's rule: a ``\r`` before
    the line break is whitespace, a lone surrogate escape is kept.

    Raises:
        JsonInvalidError: not JSON under the rule (``problem`` says why).
    """
    line = text[:-1] if text.endswith("\r") else text
    return strict_json.loads(line, allow_lone_surrogates=True)


def _cut_in_a_character(data: bytes, exc: UnicodeDecodeError) -> bool:
    """The only decoding error is an incomplete sequence at the very end of ``data``."""
    return exc.end == len(data) and exc.reason == "unexpected end of data"


def dump_line(value: Any) -> str:
    """One compact JSON line (UTF-8 kept as is), as the agents themselves write."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: valid JSON as an escape, not UTF-8
        return json.dumps(value, separators=(",", ":"))
    return text


def source_lines(lines: Sequence[str] | None, records: Sequence[Any]) -> Sequence[str]:
    """A history's lines as its file holds them: ``lines`` when it was read from a file,
    else each of ``records`` as :func:`dump_line` writes it."""
    return lines if lines is not None else [dump_line(record) for record in records]


def join_lines(lines: list[str], *, final_newline: bool) -> bytes:
    """The file bytes for ``lines``."""
    text = "\n".join(lines)
    if final_newline and lines:
        text += "\n"
    return text.encode("utf-8")
