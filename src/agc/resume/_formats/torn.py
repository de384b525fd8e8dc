"""A torn last line: the record a crash cut off while it was being written.

An agent appends each record as one line and ends it with a line break. A process killed
mid-write leaves the file ending in part of a line: no final line break, and the text is
not JSON. That record is lost; what it held can often still be told from the fragment
(a tool call and its id, a tool result), which is what :func:`describe_torn` reports.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Final

__all__ = ["TornLine", "describe_torn", "torn_line"]


def torn_line(lines: list[str], final_newline: bool) -> int | None:
    """The index of the torn last line of a JSONL file, or ``None``.

    Torn means: the file does not end with a line break, and its last line is neither
    blank nor JSON. (A complete JSON line without the final line break is not torn: the
    record is whole.)
    """
    if final_newline or not lines or not lines[-1].strip():
        return None
    try:
        json.loads(lines[-1])
    except (ValueError, RecursionError):
        return len(lines) - 1
    return None


@dataclass(frozen=True)
class TornLine:
    """What a torn line held, as far as its fragment tells.

    Attributes:
        what: a short description (``"a function_call"``, ``"a tool_use block"``, …).
        call_id: the tool call id in the fragment, when it is a call.
        result_id: the call id a tool result in the fragment answers.
        tool_name: the called tool's name, when the fragment holds it whole (a name
            the cut ends inside is not told).
    """

    what: str
    call_id: str | None
    result_id: str | None
    tool_name: str | None = None

    def describe(self) -> str:
        if self.call_id is not None:
            return f"{self.what} (call {self.call_id})"
        if self.result_id is not None:
            return f"{self.what} (the result of call {self.result_id})"
        return self.what


_STRING: Final = r'"((?:[^"\\]|\\.)*)"'
_CALL_TYPES: Final = ("function_call", "custom_tool_call", "local_shell_call", "computer_call")


_STRING_AT: Final = re.compile(_STRING)


def _field(fragment: str, name: str) -> str | None:
    match = re.search(rf'"{name}"\s*:\s*{_STRING}', fragment)
    return match.group(1) if match else None


def _own_name(fragment: str, at: int) -> str | None:
    """The ``"name"`` string member of the JSON object whose ``"type"`` key is at
    ``at`` in ``fragment`` (that object's own member, in any key order, never one of a
    nested object such as a call's input), unescaped; ``None`` when the fragment ends
    before it is whole or the object has none."""
    start = fragment.rfind("{", 0, at)
    if start < 0:
        return None
    depth, key, i = 0, None, start
    while i < len(fragment):
        char = fragment[i]
        if char == '"':
            match = _STRING_AT.match(fragment, i)
            if match is None:  # the cut is inside this string
                return None
            i = match.end()
            if depth != 1:
                continue
            rest = fragment[i:].lstrip()
            if rest.startswith(":"):
                key = match.group(1)
            elif key == "name":
                try:
                    value = json.loads(match.group(0))
                except ValueError:
                    return None
                return value if isinstance(value, str) else None
            else:
                key = None
            continue
        if char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
            if depth == 0:
                return None
        elif char == "," and depth == 1:
            key = None
        i += 1
    return None


def describe_torn(fragment: str) -> TornLine:
    """Tell what a torn line held from its text (a Codex rollout, Claude Code or Gemini
    CLI line)."""
    tool_use = re.search(rf'"type"\s*:\s*"tool_use"\s*,\s*"id"\s*:\s*{_STRING}', fragment)
    if tool_use:
        name = _own_name(fragment, tool_use.start())
        return TornLine("an assistant line with a tool_use block", tool_use.group(1), None, name)
    if '"tool_use"' in fragment:
        return TornLine("an assistant line with a tool_use block", None, None)
    if '"tool_result"' in fragment or '"tool_use_id"' in fragment:
        return TornLine("a user line with a tool_result", None, _field(fragment, "tool_use_id"))
    found = list(re.finditer(rf'"type"\s*:\s*{_STRING}', fragment))
    types = [match.group(1) for match in found]
    for match, kind in zip(found, types, strict=True):
        if kind in _CALL_TYPES:
            name = _own_name(fragment, match.start())
            return TornLine(f"a {kind}", _field(fragment, "call_id"), None, name)
        if kind.endswith("_output"):
            return TornLine(f"a {kind}", None, _field(fragment, "call_id"))
    gemini = _gemini(fragment)
    if gemini is not None:
        return gemini
    if types:
        shown = [kind for kind in types[:2] if kind.isascii() and len(kind) <= 40]
        if shown:
            return TornLine(f"a {' / '.join(shown)} record", None, None)
    return TornLine("a record that cannot be told from its fragment", None, None)


def _gemini(fragment: str) -> TornLine | None:
    """A Gemini CLI message record: a ``gemini`` message with ``toolCalls`` (the first
    entry's ``id`` names the call; the client writes the entry once the call has
    finished, its result inside), or a ``user`` message of ``functionResponse`` parts."""
    calls = re.search(r'"toolCalls"\s*:\s*\[', fragment)
    if calls:
        entry = fragment.find("{", calls.end())
        name = _own_name(fragment, entry + 1) if entry >= 0 else None
        return TornLine(
            "a gemini message with toolCalls", _field(fragment[calls.end() :], "id"), None, name
        )
    response = re.search(r'"functionResponse"\s*:\s*\{', fragment)
    if response:
        return TornLine(
            "a user message with a functionResponse",
            None,
            _field(fragment[response.end() :], "id"),
        )
    return None
