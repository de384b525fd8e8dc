"""A turn's trace: its events in order, its state, and the answers built from it.

Every event the agent sends (and every step the service takes: session start, thread
resume, an approval declined) becomes a :class:`TraceEvent` with a ``seq`` (0, 1, 2 …
per trace) and a time. ``params`` are passed through the secret detector before they
are kept, shown or recorded. The in-memory trace keeps at most ``max_events`` events
and ``max_bytes`` of them (their strings' characters plus a few bytes per value, the
oldest dropped first; the sealed run keeps them all), and a finished one is cut down
further by :meth:`Trace.compact`; strings in what ``/trace`` shows are cut at
:data:`TRACE_STRING_CHARS` and the ``/result`` windows at :data:`WINDOW_STRING_CHARS`.
The ``/result`` windows (the last ``window`` events, and the last ``window`` of the
agent's own) are kept apart, so a compacted trace still answers them.
"""

from __future__ import annotations

import asyncio
import itertools
import re
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final, Literal

from agc._core.redact import RedactionStats, redact_text, redact_value
from agc._core.window import MAX_WINDOW_DEPTH, WINDOW_STRING_CHARS, trim
from agc.serve._stream import DeltaHold

__all__ = [
    "TRACE_STRING_CHARS",
    "WINDOW_STRING_CHARS",
    "Trace",
    "TraceEvent",
    "TraceStatus",
    "iso_ms",
    "now_ms",
    "trim",
    "waiting_for_after",
    "weight",
    "well_formed",
]

TRACE_STRING_CHARS: Final = 16_384

TraceStatus = Literal["queued", "running", "completed", "failed", "cancelled"]
TERMINAL: Final = frozenset({"completed", "failed", "cancelled"})
EventSource = Literal["codex", "serve"]


def now_ms() -> int:
    return int(time.time() * 1000)


def iso_ms(ms: int) -> str:
    """Unix ms as RFC 3339 UTC with milliseconds (``2026-01-02T03:04:05.678Z``)."""
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def well_formed(value: Any) -> Any:
    """A copy of a JSON value whose strings (and keys) hold no lone surrogate: each is
    replaced by U+FFFD, so every answer and record is valid UTF-8 (RFC 8259, section 8.1)."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value) if _SURROGATE.search(value) else value
    if isinstance(value, Mapping):
        return {well_formed(k): well_formed(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [well_formed(v) for v in value]
    return value


def weight(value: Any, _depth: int = 0) -> int:
    """What a JSON value costs to keep, roughly: the characters of its strings (keys
    included) plus 8 per value; nesting below 32 levels counts 8."""
    if _depth > MAX_WINDOW_DEPTH:
        return 8
    if isinstance(value, str):
        return 8 + len(value)
    if isinstance(value, Mapping):
        return 8 + sum(8 + len(str(k)) + weight(v, _depth + 1) for k, v in value.items())
    if isinstance(value, list | tuple):
        return 8 + sum(weight(v, _depth + 1) for v in value)
    return 8


@dataclass(frozen=True)
class TraceEvent:
    """One event of a trace.

    Attributes:
        seq: 0, 1, 2 … within the trace.
        at_ms: Unix ms when the service received (or made) it.
        source: ``codex`` (the agent's own message) or ``serve`` (a step of the service).
        method: the JSON-RPC method (``item/completed``), or ``serve.*`` for the service.
        params: the message's params, redacted.
        kind: ``notification``, ``server-request`` (the agent asked; our answer is in
            ``params.agcAnswer``) or ``serve``.
    """

    seq: int
    at_ms: int
    source: EventSource
    method: str
    params: Mapping[str, Any]
    kind: str = "notification"

    def to_dict(self, max_chars: int | None = None) -> dict[str, Any]:
        """The event as JSON; strings cut at ``max_chars`` when given."""
        return {
            "seq": self.seq,
            "atMs": self.at_ms,
            "source": self.source,
            "kind": self.kind,
            "method": self.method,
            "params": self.params if max_chars is None else trim(self.params, max_chars),
        }


def _item(params: Mapping[str, Any]) -> Mapping[str, Any]:
    item = params.get("item")
    return item if isinstance(item, Mapping) else {}


def waiting_for_after(event: TraceEvent, previous: str | None) -> str | None:
    """What the turn waits for after ``event`` (``waitingFor`` of a running turn).

    ``session`` (a Codex process to start), ``thread``, ``turn-start``, ``model`` (the
    next model output), ``tool:<itemType>`` (a tool call that started and has not
    completed), ``reply`` (the assistant message is streaming), ``audit`` (the turn
    ended and its run is being sealed).
    """
    method = event.method
    if method == "serve.session.starting":
        return "session"
    if method == "serve.session.ready":
        return "turn-start"
    if method in ("turn/started", "item/completed"):
        return "model"
    if method == "item/started":
        item_type = _item(event.params).get("type")
        if item_type == "agentMessage":
            return "reply"
        if item_type in ("userMessage", "reasoning", "plan"):
            return "model"
        return f"tool:{item_type}" if isinstance(item_type, str) else "model"
    if method == "codex/event":
        message = event.params.get("msg")
        kind = message.get("type") if isinstance(message, Mapping) else None
        if isinstance(kind, str) and kind.endswith("_begin"):
            return f"tool:{kind[: -len('_begin')]}"
        if isinstance(kind, str) and kind.endswith("_end"):
            return "model"
    if method in ("turn/completed", "serve.turn.ended"):
        return "audit"
    return previous


@dataclass
class Trace:
    """The state of one turn (see the module docstring)."""

    trace_id: str
    conversation_id: str
    turn_number: int
    created_at_ms: int
    max_events: int
    max_bytes: int = 16 * 1024 * 1024
    window: int = 20
    status: TraceStatus = "queued"
    waiting_for: str | None = "session"
    updated_at_ms: int = 0
    events: deque[TraceEvent] = field(default_factory=deque)
    event_count: int = 0
    kept_bytes: int = 0
    provider_count: int = 0
    reply: str | None = None
    error: dict[str, Any] | None = None
    protocol: str | None = None
    model: str | None = None
    thread_id: str | None = None
    session_id: str | None = None
    turn_id: str | None = None
    audit: Mapping[str, Any] | None = None
    redactions: int = 0
    done: asyncio.Event = field(default_factory=asyncio.Event)
    cancel_requested: bool = False
    ended_at_ms: int | None = None
    stream: DeltaHold = field(default_factory=DeltaHold)
    runner_window: deque[TraceEvent] = field(init=False, repr=False)
    provider_window: deque[TraceEvent] = field(init=False, repr=False)
    _weights: deque[int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.updated_at_ms = self.updated_at_ms or self.created_at_ms
        self._weights = deque()
        self.runner_window = deque(maxlen=self.window)
        self.provider_window = deque(maxlen=self.window)

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    @property
    def first_kept_seq(self) -> int:
        return self.event_count - len(self.events)

    def add(
        self, source: EventSource, method: str, params: Mapping[str, Any], kind: str
    ) -> TraceEvent:
        """Append an event and return it whole (``params`` redacted, lone surrogates
        replaced by U+FFFD); the trace keeps a copy with strings cut at
        :data:`TRACE_STRING_CHARS`, so a huge command output costs memory only once,
        in the sealed record."""
        stats = RedactionStats()
        clean = well_formed(redact_value(dict(params), stats))
        self.redactions += stats.total
        event = TraceEvent(
            self.event_count, now_ms(), source, well_formed(redact_text(method)[:200]), clean, kind
        )
        self.event_count += 1
        kept = TraceEvent(
            event.seq, event.at_ms, source, event.method, trim(clean, TRACE_STRING_CHARS), kind
        )
        self.events.append(kept)
        self._weights.append(weight(kept.params) + len(kept.method) + 64)
        self.kept_bytes += self._weights[-1]
        self._drop_to(self.max_events, self.max_bytes)
        shown = TraceEvent(
            event.seq, event.at_ms, source, event.method, trim(clean, WINDOW_STRING_CHARS), kind
        )
        self.runner_window.append(shown)
        if source == "codex":
            self.provider_window.append(shown)
            self.provider_count += 1
        self.updated_at_ms = event.at_ms
        if not self.terminal:
            self.waiting_for = waiting_for_after(event, self.waiting_for)
        return event

    def _drop_to(self, max_events: int, max_bytes: int) -> None:
        # The newest event is always kept, whatever it weighs.
        while len(self.events) > 1 and (
            len(self.events) > max_events or self.kept_bytes > max_bytes
        ):
            self.events.popleft()
            self.kept_bytes -= self._weights.popleft()

    def compact(self, max_bytes: int) -> None:
        """Keep only the newest events that fit in ``max_bytes`` (at least one): what a
        finished trace keeps in memory. The ``/result`` windows are kept whole."""
        self._drop_to(self.max_events, max_bytes)

    def page(self, after: int, limit: int) -> tuple[list[TraceEvent], bool]:
        """Events with ``seq > after`` (at most ``limit``) and whether more follow."""
        start = max(after + 1 - self.first_kept_seq, 0)
        chunk = list(itertools.islice(self.events, start, start + limit))
        more = start + limit < len(self.events)
        return chunk, more
