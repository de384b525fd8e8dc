"""``codex exec --json`` events: ``item.completed`` with snake_case items.

Items carry fewer fields than the app-server's: ``command_execution`` has ``command``,
``exit_code`` and ``status`` but no ``commandActions``; ``mcp_tool_call`` has
``server``, ``tool`` and (in newer versions) ``arguments``. What is there is recorded;
nothing is invented (Codex ``exec`` crate, ``exec_events.rs``: ``ThreadEvent``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from agc.ledger._events.appserver import pick_fields
from agc.ledger._events.item import CompletedItem, camel_case

__all__ = ["COMPLETED_TYPE", "item_from_event"]

COMPLETED_TYPE: Final = "item.completed"
_RENAMES: Final = {"exit_code": "exitCode", "duration_ms": "durationMs"}


def item_from_event(event: Mapping[str, Any]) -> CompletedItem | None:
    """The completed item of an ``item.completed`` event, else ``None``."""
    if event.get("type") != COMPLETED_TYPE:
        return None
    item = event.get("item")
    if not isinstance(item, Mapping):
        return None
    raw_type = item.get("type", item.get("item_type"))
    source_type = raw_type if isinstance(raw_type, str) else "unknown"
    item_type = camel_case(source_type)
    renamed = {_RENAMES.get(str(key), str(key)): value for key, value in item.items()}
    return CompletedItem(
        source="exec",
        item_type=item_type,
        source_type=source_type,
        item_id=item.get("id"),
        status=item.get("status", "completed"),
        fields=pick_fields(item_type, renamed),
    )
