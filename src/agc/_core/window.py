"""The trace window: the last events of a turn, as an answer shows them (pure).

A chat service's ``/result`` answer carries the latest events of a turn as a *window*
(``runnerTrace``: the agent runner's events; ``providerTrace``: the model provider's),
never the whole trace, and a client that records such a window keeps it in the same
shape and within the same bounds:

``{"events": [...], "limit": N, "firstSeq": SEQ | null, "omitted": COUNT}``

``events`` are the last at most ``limit`` events (oldest first); ``firstSeq`` is the
``seq`` of the first one kept (``null`` when none is kept or it has no integer seq);
``omitted`` counts the events of the trace that are not in the window. Every string in
an event is cut at :data:`WINDOW_STRING_CHARS` characters and nesting deeper than
:data:`MAX_WINDOW_DEPTH` is replaced by ``"…"``. Secrets are redacted by whoever builds
the window, *before* the cut (a cut could split a secret so the detector no longer
sees it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

__all__ = [
    "MAX_WINDOW_DEPTH",
    "WINDOW_EVENTS",
    "WINDOW_STRING_CHARS",
    "trace_window",
    "trim",
]

WINDOW_EVENTS: Final = 20
"""Events in a trace window by default (the latest ones)."""
WINDOW_STRING_CHARS: Final = 512
"""The longest string a window's event keeps, in characters; longer ones are cut."""
MAX_WINDOW_DEPTH: Final = 32
"""Nesting of arrays and objects an event keeps; deeper values become ``"…"``."""


def trim(value: Any, max_chars: int, _depth: int = 0) -> Any:
    """A copy of a JSON value with every string longer than ``max_chars`` cut (and
    ``"…[+N chars]"`` appended) and nesting below :data:`MAX_WINDOW_DEPTH` levels
    replaced by ``"…"``."""
    if _depth > MAX_WINDOW_DEPTH:
        return "…"
    if isinstance(value, str):
        if len(value) <= max_chars:
            return value
        return value[:max_chars] + f"…[+{len(value) - max_chars} chars]"
    if isinstance(value, Mapping):
        return {str(k): trim(v, max_chars, _depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [trim(v, max_chars, _depth + 1) for v in value]
    return value


def trace_window(
    events: Sequence[Any],
    *,
    limit: int = WINDOW_EVENTS,
    omitted: int = 0,
    max_chars: int = WINDOW_STRING_CHARS,
) -> dict[str, Any]:
    """The window of the last ``limit`` of ``events`` (JSON values, oldest first).

    Args:
        events: the events available (already redacted); only the last ``limit`` are kept.
        limit: the window's size in events (at least 1).
        omitted: events of the trace already left out before ``events`` (not counted
            in ``events``); the window's ``omitted`` adds those it drops itself.
        max_chars: the longest string kept in an event.

    Returns:
        ``{"events", "limit", "firstSeq", "omitted"}`` as described above.
    """
    limit = max(1, limit)
    kept = list(events[-limit:])
    first = kept[0].get("seq") if kept and isinstance(kept[0], Mapping) else None
    return {
        "events": [trim(event, max_chars) for event in kept],
        "limit": limit,
        "firstSeq": first if isinstance(first, int) and not isinstance(first, bool) else None,
        "omitted": max(0, omitted) + len(events) - len(kept),
    }
