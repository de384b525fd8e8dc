"""Turning an input stream into completed items, whatever its format."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from agc.errors import JsonInvalidError, UsageError
from agc.ledger._events.appserver import COMPLETED_METHOD, STARTED_METHOD, item_from_notification
from agc.ledger._events.codex_exec import STARTED_TYPE, item_from_event
from agc.ledger._events.item import SKIPPED_ITEM_TYPES, CompletedItem
from agc.ledger._events.rollout import BARE_ITEM_TYPES, ROLLOUT_LINE_TYPES, RolloutAdapter
from agc.ledger._fastjson import loads_event
from agc.ledger._lines import uncut

__all__ = ["FORMATS", "DecodeStats", "EventDecoder", "InputFormat", "decode_lines", "detect"]

InputFormat = Literal["auto", "app-server", "exec", "rollout"]
FORMATS: Final[tuple[InputFormat, ...]] = ("auto", "app-server", "exec", "rollout")
_EXEC_PREFIXES: Final = ("thread.", "turn.", "item.")


def detect(message: Mapping[str, Any]) -> InputFormat | None:
    """Which input a parsed line belongs to; ``None`` when none is recognized."""
    if "method" in message or "jsonrpc" in message:
        return "app-server"
    if "id" in message and ("result" in message or "error" in message):
        return "app-server"
    kind = message.get("type")
    if isinstance(kind, str):
        if "payload" in message:
            if kind in ROLLOUT_LINE_TYPES:
                return "rollout"
        elif kind in BARE_ITEM_TYPES:
            return "rollout"  # a response item written bare by the first rollouts
        if kind.startswith(_EXEC_PREFIXES) or kind == "error":
            return "exec"
    return None


@dataclass
class DecodeStats:
    """Counts of one decoding (all in lines or items).

    Attributes:
        lines: input lines seen.
        invalid_lines: lines that are not a JSON object (tolerated, never fatal).
        ignored_lines: JSON lines of no known input, or of another input than the one
            chosen with ``--format``.
        items: completed items produced.
        formats: the formats seen, by line count.
        overlong_lines: line numbers (from 1) of lines too long to decode (over
            :data:`agc.ledger._lines.MAX_READ_LINE_BYTES`): read through, never held
            whole, never decoded.
    """

    lines: int = 0
    invalid_lines: int = 0
    ignored_lines: int = 0
    items: int = 0
    formats: dict[str, int] = field(default_factory=dict)
    overlong_lines: list[int] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "lines": self.lines,
            "invalidLines": self.invalid_lines,
            "ignoredLines": self.ignored_lines,
            "items": self.items,
            "formats": dict(self.formats),
            "overlongLines": list(self.overlong_lines),
        }


class EventDecoder:
    """Feed lines, get completed items. Tolerant: nothing in the input is fatal.

    Args:
        input_format: ``"auto"`` (each line is recognized on its own) or one format,
            whose lines alone are used.

    Raises:
        UsageError: ``input_format`` is not one of :data:`FORMATS`.

    Attributes:
        completed: whether the input said the turn completed (``turn/completed`` with
            status ``completed``, ``turn.completed``, rollout ``task_complete``), failed
            (``False``), or said nothing (``None``).
    """

    def __init__(self, input_format: InputFormat = "auto") -> None:
        if input_format not in FORMATS:
            raise UsageError(
                f"input format {input_format!r} is not known",
                hint=f"Choose one of {', '.join(FORMATS)}.",
            )
        self.input_format: InputFormat = input_format
        self.stats = DecodeStats()
        self._rollout = RolloutAdapter()
        self._cut = False  # the line being decoded is the cut copy of an overlong line
        self._completed: bool | None = None
        # items started (app-server item/started, exec item.started) and not yet
        # completed, by (input, item id), in the order they started
        self._started: dict[tuple[str, str], CompletedItem] = {}

    def count_only(self) -> None:
        """From now on only the number of items matters, not their contents (the
        caller's ledger is full): rollout calls are counted without being decoded."""
        self._rollout.counting_only = True

    @property
    def completed(self) -> bool | None:
        if self._rollout.completed is not None:
            return self._rollout.completed
        return self._completed

    def skip_overlong(self) -> None:
        """Count one line too long to decode (:class:`agc.ledger._lines.OverlongLine`)."""
        self.stats.lines += 1
        self.stats.overlong_lines.append(self.stats.lines)

    def feed_overlong(self, shrunk: bytes) -> list[CompletedItem]:
        """Decode the copy of a line too long to decode whole, its strings cut
        (:attr:`agc.ledger._lines.OverlongLine.shrunk`), and count the line as overlong.

        A string that ends in the cut mark was cut: a call's arguments are read as far
        as they are whole (:func:`agc.ledger._prefix.loads_prefix`), and a command the
        cut fell in is kept without the mark, with ``commandCut`` in its fields."""
        self._cut = True
        try:
            items = self.feed(shrunk)
        finally:
            self._cut = False
        self.stats.overlong_lines.append(self.stats.lines)
        return [_uncut_command(item) for item in items]

    def feed(self, line: bytes | str) -> list[CompletedItem]:
        """Decode one line (without or with its ``\\n``)."""
        stats = self.stats
        stats.lines += 1
        try:
            message = loads_event(line)
        except JsonInvalidError:
            stats.invalid_lines += 1
            return []
        if not isinstance(message, dict):
            stats.invalid_lines += 1
            return []
        return self._feed_message(message)

    def feed_message(self, message: Mapping[str, Any]) -> list[CompletedItem]:
        """Decode one message already parsed (an app-server notification as a live
        client receives it, an exec event, a rollout line)."""
        self.stats.lines += 1
        return self._feed_message(dict(message))

    def _feed_message(self, message: dict[str, Any]) -> list[CompletedItem]:
        stats = self.stats
        kind = detect(message)
        wanted = self.input_format
        if kind is None or wanted not in ("auto", kind):
            stats.ignored_lines += 1
            return []
        formats = stats.formats
        formats[kind] = formats.get(kind, 0) + 1
        if kind == "rollout":
            items = self._rollout.feed(message, cut=self._cut)
        else:
            items = self._decode(kind, message)
        if items:
            stats.items += len(items)
        return items

    def finish(self) -> list[CompletedItem]:
        """Items still open at the end of the input, with status ``incomplete``:
        rollout calls with no output, then items that started and never completed
        (the agent was killed mid-item), each in the order it began."""
        items = self._rollout.finish()
        items.extend(_incomplete(item) for item in self._started.values())
        self._started.clear()
        self.stats.items += len(items)
        return items

    def _track(self, input_kind: str, item: CompletedItem, started: bool) -> list[CompletedItem]:
        """Remember a started item; a completed one is done (and forgotten)."""
        key = (input_kind, item.item_id) if isinstance(item.item_id, str) else None
        if started:
            if key is not None and item.item_type not in SKIPPED_ITEM_TYPES:
                self._started.setdefault(key, item)
            return []
        if key is not None:
            self._started.pop(key, None)
        return [item]

    def _decode(self, kind: InputFormat, message: dict[str, Any]) -> list[CompletedItem]:
        if kind == "rollout":
            return self._rollout.feed(message)
        if kind == "app-server":
            if message.get("method") == "turn/completed":
                params = message.get("params")
                turn = params.get("turn") if isinstance(params, Mapping) else None
                status = turn.get("status") if isinstance(turn, Mapping) else None
                self._completed = status is None or status == "completed"
            method = message.get("method")
            if method not in {STARTED_METHOD, COMPLETED_METHOD}:
                return []
            item = item_from_notification(message, method=method)
            return [] if item is None else self._track("app-server", item, method == STARTED_METHOD)
        event_type = message.get("type")
        if event_type == "turn.completed":
            self._completed = True
        elif event_type == "turn.failed":
            self._completed = False
        item = item_from_event(message)
        if item is None:
            return []
        return self._track("exec", item, event_type == STARTED_TYPE)


def decode_lines(
    lines: Iterable[bytes | str], *, input_format: InputFormat = "auto"
) -> Iterator[CompletedItem]:
    """Decode a whole stream (a convenience over :class:`EventDecoder`)."""
    decoder = EventDecoder(input_format)
    for line in lines:
        yield from decoder.feed(line)
    yield from decoder.finish()


def _uncut_command(item: CompletedItem) -> CompletedItem:
    """``item`` with its command's cut mark removed and ``commandCut`` set, when the
    command is a string of an overlong line's cut copy that was cut."""
    command = item.fields.get("command")
    if item.item_type != "commandExecution" or not isinstance(command, str):
        return item
    kept, was_cut = uncut(command)
    if not was_cut:
        return item
    fields = {**item.fields, "command": kept, "commandCut": True}
    return dataclasses.replace(item, fields=fields)


def _incomplete(item: CompletedItem) -> CompletedItem:
    return CompletedItem(
        item.source, item.item_type, item.source_type, item.item_id, "incomplete", item.fields
    )
