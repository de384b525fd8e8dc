"""Turning an input stream into completed items, whatever its format."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from agc._core import json as strict_json
from agc.errors import JsonInvalidError, UsageError
from agc.ledger._events.appserver import item_from_notification
from agc.ledger._events.codex_exec import item_from_event
from agc.ledger._events.item import CompletedItem
from agc.ledger._events.rollout import ROLLOUT_LINE_TYPES, RolloutAdapter

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
        if "payload" in message and kind in ROLLOUT_LINE_TYPES:
            return "rollout"
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
    """

    lines: int = 0
    invalid_lines: int = 0
    ignored_lines: int = 0
    items: int = 0
    formats: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "lines": self.lines,
            "invalidLines": self.invalid_lines,
            "ignoredLines": self.ignored_lines,
            "items": self.items,
            "formats": dict(self.formats),
        }


class EventDecoder:
    """Feed lines, get completed items. Tolerant: nothing in the input is fatal.

    Args:
        input_format: ``"auto"`` (each line is recognized on its own) or one format,
            whose lines alone are used.

    Raises:
        UsageError: an unknown ``input_format``.

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
        self._completed: bool | None = None

    @property
    def completed(self) -> bool | None:
        if self._rollout.completed is not None:
            return self._rollout.completed
        return self._completed

    def feed(self, line: bytes | str) -> list[CompletedItem]:
        """Decode one line (without or with its ``\\n``)."""
        self.stats.lines += 1
        try:
            message = strict_json.loads(line, allow_lone_surrogates=True)
        except JsonInvalidError:
            self.stats.invalid_lines += 1
            return []
        if not isinstance(message, dict):
            self.stats.invalid_lines += 1
            return []
        kind = detect(message)
        if kind is None or self.input_format not in {"auto", kind}:
            self.stats.ignored_lines += 1
            return []
        self.stats.formats[kind] = self.stats.formats.get(kind, 0) + 1
        items = self._decode(kind, message)
        self.stats.items += len(items)
        return items

    def finish(self) -> list[CompletedItem]:
        """Items still open at the end of the input (rollout calls with no output)."""
        items = self._rollout.finish()
        self.stats.items += len(items)
        return items

    def _decode(self, kind: InputFormat, message: dict[str, Any]) -> list[CompletedItem]:
        if kind == "rollout":
            return self._rollout.feed(message)
        if kind == "app-server":
            if message.get("method") == "turn/completed":
                params = message.get("params")
                turn = params.get("turn") if isinstance(params, Mapping) else None
                status = turn.get("status") if isinstance(turn, Mapping) else None
                self._completed = status is None or status == "completed"
            item = item_from_notification(message)
            return [] if item is None else [item]
        event_type = message.get("type")
        if event_type == "turn.completed":
            self._completed = True
        elif event_type == "turn.failed":
            self._completed = False
        item = item_from_event(message)
        return [] if item is None else [item]


def decode_lines(
    lines: Iterable[bytes | str], *, input_format: InputFormat = "auto"
) -> Iterator[CompletedItem]:
    """Decode a whole stream (a convenience over :class:`EventDecoder`)."""
    decoder = EventDecoder(input_format)
    for line in lines:
        yield from decoder.feed(line)
    yield from decoder.finish()
