"""Input adapters: Codex event streams in, :class:`CompletedItem` out.

Three inputs of the Codex CLI are understood, detected line by line:

* Codex app-server JSON-RPC notifications (``item/completed``; :mod:`.appserver`);
* ``codex exec --json`` events (``item.completed``; :mod:`.codex_exec`);
* Codex rollout session files (``response_item`` calls paired with their outputs;
  :mod:`.rollout`).

Each adapter copies into :class:`CompletedItem` only the fields the ledger may use;
command output, MCP results and error text, diffs, function outputs and image bytes are
never read.
"""

from __future__ import annotations

from agc.ledger._events.decode import (
    FORMATS,
    DecodeStats,
    EventDecoder,
    InputFormat,
    decode_lines,
)
from agc.ledger._events.item import SKIPPED_ITEM_TYPES, CompletedItem, Source

__all__ = [
    "FORMATS",
    "SKIPPED_ITEM_TYPES",
    "CompletedItem",
    "DecodeStats",
    "EventDecoder",
    "InputFormat",
    "Source",
    "decode_lines",
]
