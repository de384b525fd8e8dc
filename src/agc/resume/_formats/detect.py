"""Detecting a history's format and loading/dumping history files.

A file is either a JSON array (OpenAI Chat messages, Anthropic messages or Responses
items) or JSONL (a Codex rollout, a Claude Code session or a Gemini CLI
session). Detection looks for the
markers only one format has; a history without any tool call or format marker is
read as OpenAI Chat, whose rules it then trivially meets.
"""

from __future__ import annotations

import importlib
import io
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Final, cast

from agc._core import json as strict_json
from agc.errors import HistoryFormatError, InputError, JsonInvalidError
from agc.resume._formats import openai_chat, openai_responses
from agc.resume._formats.jsonl import join_lines, parse_jsonl
from agc.resume._formats.lean import LEAN_MIN_BYTES, read_lean
from agc.resume._formats.model import (
    FORMAT_NAMES,
    FormatName,
    FormatSpec,
    History,
    Message,
    RawRef,
    resolve,
)
from agc.resume._gc import collector_paused

__all__ = [
    "SPECS",
    "LineFacts",
    "detect_format",
    "dump_history",
    "get_spec",
    "history_from_lines",
    "is_agc_transcript",
    "load_history",
    "read_history",
    "session_format",
]

_MODULES: Final[dict[FormatName, str]] = {
    name: f"agc.resume._formats.{name.replace('-', '_')}" for name in FORMAT_NAMES
}


def _module(name: FormatName) -> Any:
    """The module of format ``name``, imported on first use: a history needs the reader
    of its own format only (a JSON array of Chat messages loads no session-file reader)."""
    return importlib.import_module(_MODULES[name])


class _Specs(Mapping[FormatName, FormatSpec]):
    """Each format's spec by name (in :data:`FORMAT_NAMES`' order), its module imported
    when the spec is first looked up."""

    def __getitem__(self, name: FormatName) -> FormatSpec:
        if name not in _MODULES:
            raise KeyError(name)
        spec: FormatSpec = _module(name).SPEC
        return spec

    def __iter__(self) -> Iterator[FormatName]:
        return iter(_MODULES)

    def __len__(self) -> int:
        return len(_MODULES)

    def __contains__(self, name: object) -> bool:
        return name in _MODULES


SPECS: Final[Mapping[FormatName, FormatSpec]] = _Specs()

_RESPONSES_MARKERS: Final = frozenset(
    {*openai_responses.CALL_TYPES, *openai_responses.OUTPUT_TYPES, "reasoning", "item_reference"}
)
_RESPONSES_PARTS: Final = frozenset({"input_text", "output_text", "input_image", "refusal"})
_ANTHROPIC_PARTS: Final = frozenset({"tool_use", "tool_result", "thinking", "redacted_thinking"})
_CLAUDE_TYPES: Final = frozenset(
    {"user", "assistant", "summary", "system", "progress", "file-history-snapshot"}
)
_CODEX_EXEC_TYPES: Final = frozenset({"thread.started", "turn.started", "item.completed"})


def get_spec(name: FormatName | str) -> FormatSpec:
    """The spec of a format name.

    Raises:
        HistoryFormatError: not one of the six format names.
    """
    if name not in SPECS:
        choices = ", ".join(FORMAT_NAMES)
        raise HistoryFormatError(f"unknown format {name!r}; choose one of {choices}")
    return SPECS[cast(FormatName, name)]


def _parts(record: dict[str, Any]) -> set[str]:
    content = record.get("content")
    if not isinstance(content, list):
        return set()
    return {
        part["type"]
        for part in content
        if isinstance(part, dict) and isinstance(part.get("type"), str)
    }


def _type(record: dict[str, Any]) -> str | None:
    value = record.get("type")
    return value if isinstance(value, str) else None


class _ArrayDetector:
    """Which format a JSON array is, fed one record (a dict) at a time.

    Markers of one format only first: Responses item types, Chat tool fields, Anthropic
    tool blocks. Weaker ones after: a Chat assistant message may hold a `refusal` part
    and a saved Anthropic response object has `"type": "message"`. So: any Responses
    item type; else the first record with Chat tool fields or Anthropic tool blocks;
    else any weak Responses marker; else Chat.
    """

    __slots__ = ("responses", "strong", "weak")

    def __init__(self) -> None:
        self.responses = False
        self.strong: FormatName | None = None
        self.weak = False

    def feed(self, record: dict[str, Any]) -> None:
        if self.responses:
            return
        kind = _type(record)
        if kind in _RESPONSES_MARKERS:
            self.responses = True
            return
        if self.strong is not None and self.weak:
            return
        parts = _parts(record)
        if self.strong is None:
            if record.get("role") == "tool" or "tool_calls" in record:
                self.strong = "openai-chat"
            elif _ANTHROPIC_PARTS.intersection(parts):
                self.strong = "anthropic"
        if not self.weak:
            self.weak = (kind == "message" and "role" in record) or bool(
                _RESPONSES_PARTS.intersection(parts)
            )

    def result(self) -> FormatName:
        if self.responses:
            return "openai-responses"
        if self.strong is not None:
            return self.strong
        return "openai-responses" if self.weak else "openai-chat"


def _detect_array(records: Sequence[Any]) -> FormatName:
    detector = _ArrayDetector()
    for record in records:
        if isinstance(record, dict):
            detector.feed(record)
    return detector.result()


# The JSON-array formats, read one record at a time (``read_one`` of their modules).
_READ_ONE: Final[frozenset[FormatName]] = frozenset(
    {"openai-chat", "anthropic", "openai-responses"}
)


def _read_one(name: FormatName) -> Callable[[Any, int], Message]:
    read: Callable[[Any, int], Message] = _module(name).read_one
    return read


def _load_array_lean(data: bytes, format: FormatName | None) -> History | None:
    """A long JSON array read record by record (see :mod:`.lean`), or ``None`` to read
    it whole. Read as Chat while detecting (the common case); another detected format
    is read in a second pass."""
    if len(data) < LEAN_MIN_BYTES or (format is not None and format not in _READ_ONE):
        return None
    if format is not None:
        read = read_lean(data, _read_one(format))
        if read is None or read[0] is None:
            return None
        return History(format, read[0], read[1])
    detector = _ArrayDetector()
    read = read_lean(data, openai_chat.read_one, detector)
    if read is None:
        return None
    chosen = detector.result()
    if chosen == "openai-chat":
        return None if read[0] is None else History(chosen, read[0], read[1])
    del read
    again = read_lean(data, _read_one(chosen))
    if again is None or again[0] is None:
        return None
    return History(chosen, again[0], again[1])


_TRANSCRIPT_KEYS: Final = frozenset({"seq", "ts", "line"})


def is_agc_transcript(records: Sequence[Any]) -> bool:
    """True when JSONL records are an agc run's sealed records (``{"seq", "ts", "line",
    "payload" | "invalid"}``), the form ``agc record``/``agc import`` store lines in."""
    return bool(_facts(records[:64]).head_transcript)


def _transcript_error(source: str) -> HistoryFormatError:
    return HistoryFormatError(
        f"{source} is an agc run's sealed transcript (records of agc record/import), not "
        "the session file itself",
        hint="Resume the run by its id (agc resume RUN_ID: verified, then unwrapped), or "
        "write the session back with agc export RUN_ID --out FILE.",
    )


def _is_claude_line(record: dict[str, Any]) -> bool:
    return _type(record) in _CLAUDE_TYPES and not _CLAUDE_KEYS.isdisjoint(record)


_CLAUDE_KEYS: Final = frozenset({"uuid", "sessionId", "message", "leafUuid"})


class LineFacts:
    """What tells the format of a JSONL file, gathered one record at a time (a streamed
    file is judged by the same rule as one read whole: :func:`session_format`)."""

    __slots__ = (
        "_is_gemini_line",
        "_is_rollout_line",
        "_outweighing",
        "_rollout_types",
        "claude",
        "exec_stream",
        "gemini",
        "head",
        "head_transcript",
        "rollout",
    )

    def __init__(self) -> None:
        rollout = _module("codex-rollout")
        self._is_rollout_line: Callable[[Any], bool] = rollout.is_rollout_line
        self._rollout_types: frozenset[str] = rollout.ROLLOUT_TYPES
        # The types of the lines that tell a Codex rollout or a Claude Code session.
        self._outweighing = frozenset({*self._rollout_types, *_CLAUDE_TYPES})
        self._is_gemini_line: Callable[[Any], bool] = _module("gemini-chat").is_gemini_line
        self.head = 0  # records seen, up to 64
        self.head_transcript: bool | None = None  # every dict among the first 64 is one
        self.rollout = False
        self.claude = False
        self.gemini = False
        self.exec_stream = False

    def feed(self, record: Any) -> None:
        if self.head >= 64 and (self.rollout or self.claude):
            # Decided but for a rollout line, which outweighs the rest (:meth:`first`).
            if not self.rollout and self._is_rollout_line(record):
                self.rollout = True
            return
        if self.head >= 64 and self.gemini:
            # Decided but for a rollout or a Claude Code line, which outweigh it.
            if type(record) is dict and record.get("type") in self._outweighing:
                if self._is_rollout_line(record):
                    self.rollout = True
                elif _is_claude_line(record):
                    self.claude = True
            return
        if self.head < 64:
            self.head += 1
            if isinstance(record, dict):
                sealed = record.keys() >= _TRANSCRIPT_KEYS and (
                    "payload" in record or "invalid" in record
                )
                self.head_transcript = sealed and self.head_transcript is not False
        if not isinstance(record, dict):
            return
        if not self.rollout and self._is_rollout_line(record):
            self.rollout = True
        if not self.claude and _is_claude_line(record):
            self.claude = True
        if not self.gemini and self._is_gemini_line(record):
            self.gemini = True
        if not self.exec_stream and _type(record) in _CODEX_EXEC_TYPES:
            self.exec_stream = True

    def sift(self) -> frozenset[str] | None:
        """The ``type`` of the lines that can still change what the records seen so far
        tell (a record of another type, or not an object, leaves the facts as they
        are), or ``None`` when any line can."""
        if self.head < 64 or self.rollout:
            return None
        if self.claude:
            return self._rollout_types
        return self._outweighing if self.gemini else None

    def first(self) -> FormatName | None:
        """The format the records seen so far tell (a rollout line outweighs the rest)."""
        if self.rollout:
            return "codex-rollout"
        if self.claude:
            return "claude-code"
        return "gemini-chat" if self.gemini else None


def _facts(records: Sequence[Any]) -> LineFacts:
    facts = LineFacts()
    for record in records:
        facts.feed(record)
    return facts


def _detect_lines(records: Sequence[Any], *, source: str) -> FormatName:
    return _format_of(_facts(records), source)


def _format_of(facts: LineFacts, source: str) -> FormatName:
    if facts.head_transcript:
        raise _transcript_error(source)
    found = facts.first()
    if found is not None:
        return found
    if facts.exec_stream:
        raise HistoryFormatError(
            f"{source} is a `codex exec --json` event stream: it holds no resumable history",
            hint="Resume from the rollout file Codex keeps under ~/.codex/sessions/ instead.",
        )
    raise HistoryFormatError(f"{source}: cannot tell the format of this JSONL file")


def session_format(facts: LineFacts, *, source: str, format: FormatName | None) -> FormatName:
    """The format of a JSONL file by its :class:`LineFacts`, or ``format`` when it is
    given and the lines are not of another known format (the checks of
    :func:`history_from_lines`).

    Raises:
        HistoryFormatError: see :func:`load_history`.
    """
    if format is None:
        return _format_of(facts, source)
    if facts.head_transcript:
        raise _transcript_error(source)
    try:
        found: str | None = _format_of(facts, source)
    except HistoryFormatError:
        found = None
    if found is not None and found != format:
        raise HistoryFormatError(f"{source} is a {found} session file, not {format}")
    return format


def detect_format(records: Sequence[Any], *, line_based: bool, source: str = "input") -> FormatName:
    """Guess the format of parsed records (a JSON array's items, or JSONL lines).

    Raises:
        HistoryFormatError: JSONL of no known session format (a ``codex exec --json``
            stream is named as such).
    """
    if line_based:
        return _detect_lines(records, source=source)
    return _detect_array(records)


def read_history(records: Sequence[Any], format: FormatName) -> History:
    """Read parsed records as ``format`` (no text kept for session lines)."""
    return get_spec(format).read(records)


@collector_paused
def load_history(data: bytes, *, source: str, format: FormatName | None = None) -> History:
    """Parse a history file's bytes: a JSON array, or JSONL for session files.

    Args:
        data: the file's bytes.
        source: the file's name, for messages.
        format: the format to read it as; ``None`` to detect it.

    Raises:
        InputError: not UTF-8, or a JSON array that does not parse.
        HistoryFormatError: the format cannot be detected or the content does not fit
            the named format.
    """
    stripped = data.lstrip()
    if not stripped:
        raise InputError(f"{source} is empty")
    if stripped.startswith(b"["):
        lean = _load_array_lean(data, format)
        if lean is not None:
            return lean
        try:
            records = strict_json.loads(data, allow_lone_surrogates=True)
        except JsonInvalidError as exc:
            lined = _session_lines(data, source=source, format=format)
            if lined is None:
                raise InputError(f"{source} is not a valid JSON array: {exc.message}") from exc
            return lined
        if not isinstance(records, list):
            raise InputError(f"{source} is not a JSON array")
        chosen = format or detect_format(records, line_based=False, source=source)
        spec = get_spec(chosen)
        if spec.line_based:
            raise HistoryFormatError(f"{source} is a JSON array, not a {chosen} session file")
        try:
            return spec.read(records)
        except HistoryFormatError as exc:  # a reader names the message, not the file
            if exc.message.startswith(source):
                raise
            raise type(exc)(f"{source}: {exc.message}", hint=exc.hint) from exc
    records, lines, final_newline = parse_jsonl(data, source=source)
    return history_from_lines(records, lines, final_newline, source=source, format=format)


def _session_lines(data: bytes, *, source: str, format: FormatName | None) -> History | None:
    """A file that opens with ``[`` but is no JSON array, read as the session file its
    lines are (some line tells a session format), else ``None``: JSONL whose first line
    is no JSON object (an array, or not JSON), which the client skips, as it skips any
    such line; a repair that drops the lines before one leaves it first."""
    if format is not None and not get_spec(format).line_based:
        return None
    try:
        records, lines, final_newline = parse_jsonl(data, source=source)
    except InputError:
        return None  # refused as the array it opens as
    if _facts(records).first() is None:
        return None
    return history_from_lines(records, lines, final_newline, source=source, format=format)


def history_from_lines(
    records: list[Any],
    lines: list[str],
    final_newline: bool,
    *,
    source: str,
    format: FormatName | None,
) -> History:
    """:func:`load_history` of JSONL already split by
    :func:`~agc.resume._formats.jsonl.parse_jsonl` (same errors)."""
    facts = _facts(records)
    chosen = format or _format_of(facts, source)
    spec = get_spec(chosen)
    if format is not None and facts.head_transcript:
        raise _transcript_error(source)
    if format is not None and spec.line_based:
        # A session file of the other kind read as this one shows no history at all.
        session_format(facts, source=source, format=format)
    if not spec.line_based:
        if len(records) == 1 and isinstance(records[0], list):
            return spec.read(records[0])
        raise HistoryFormatError(f"{source} is JSONL, not a JSON array of {chosen} messages")
    history = spec.read(records)
    history.lines = lines
    history.final_newline = final_newline
    from agc.resume._formats.torn import torn_line  # noqa: PLC0415 - session files only

    history.torn = torn_line(lines, final_newline)
    return history


def dump_history(history: History, native: Sequence[Any]) -> bytes:
    """Bytes of a written history: JSONL lines for session files, else a JSON array."""
    if get_spec(history.format).line_based:
        # Always ends with a newline: a client appending to the file must start a new line.
        return join_lines([str(line) for line in native], final_newline=True)
    if not isinstance(native, list):
        native = list(native)  # history.records of a long array: each record parsed
    if any(type(record) is RawRef for record in native):
        dumped = _dump_by_element(native)
        if dumped is not None:
            return dumped
        native = [resolve(record) for record in native]
    from agc._core.orjson_loader import orjson  # noqa: PLC0415 - a writer's, not a reader's

    try:
        # orjson: the standard library's indenting encoder is pure Python, and was most
        # of the time of repairing a long history (benchmarks/, history).
        data: bytes = orjson.dumps(native, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE)
        return data
    except TypeError:  # orjson refuses it (a lone surrogate, an integer beyond 64 bits)
        pass
    try:
        return (json.dumps(native, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: valid JSON as an escape, not UTF-8
        return (json.dumps(native, indent=2) + "\n").encode("utf-8")


def _dump_by_element(native: list[Any]) -> bytes | None:
    """The bytes ``orjson.dumps(native, option=OPT_INDENT_2 | OPT_APPEND_NEWLINE)`` gives,
    written one record at a time (each :class:`RawRef` parsed only while it is written),
    or ``None`` when orjson refuses a record.

    orjson indents each level by two spaces and a string never holds a raw line break
    (JSON escapes it), so a record written on its own, with two spaces after each of
    its line breaks, is the record as written inside the array.
    """
    if not native:
        return b"[]\n"
    from agc._core.orjson_loader import orjson  # noqa: PLC0415 - a writer's, not a reader's

    out = io.BytesIO()
    out.write(b"[\n  ")
    option = orjson.OPT_INDENT_2
    for position, record in enumerate(native):
        try:
            chunk = orjson.dumps(resolve(record), option=option)
        except TypeError:
            return None
        if position:
            out.write(b",\n  ")
        out.write(chunk.replace(b"\n", b"\n  "))
    out.write(b"\n]\n")
    return out.getvalue()
